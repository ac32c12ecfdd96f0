// Asio's rebind trait and the converting constructor of every public class that has them:
// `X<E>::rebind_executor<Other>::other` names X<Other> (or X itself for the executor-independent
// values), and X<Other> can be made from an X<E> rvalue when E converts to Other, taking over the
// object's state (asio::use_awaitable.as_default_on(std::move(x)) and as_default_on_t rely on both).
// The static_asserts fail the build when a class loses either; the test cases check that a
// conversion keeps the object (the same engine, the same lock dir) and takes the new executor.
// No server: nothing here connects or sends.
#include <zklock/election.hpp>
#include <zklock/lock_guard.hpp>
#include <zklock/multi_lock.hpp>
#include <zklock/mutex.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/session.hpp>
#include <zklock/shared_mutex.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace asio = boost::asio;

namespace {

using io_ex = asio::io_context::executor_type;
using any_ex = asio::any_io_executor;
using strand_ex = asio::strand<io_ex>;
/// What asio::use_awaitable.as_default_on makes of an object on `Executor`.
template <class Executor>
using awaitable_ex = asio::use_awaitable_t<>::executor_with_default<Executor>;

template <template <class> class Object>
constexpr bool rebinds_and_converts() {
  // the trait: the same class on the other executor type
  static_assert(std::is_same_v<typename Object<io_ex>::template rebind_executor<any_ex>::other, Object<any_ex>>);
  static_assert(std::is_same_v<typename Object<any_ex>::template rebind_executor<io_ex>::other, Object<io_ex>>);
  static_assert(std::is_same_v<typename Object<io_ex>::template rebind_executor<strand_ex>::other, Object<strand_ex>>);
  static_assert(std::is_same_v<asio::use_awaitable_t<>::as_default_on_t<Object<any_ex>>, Object<awaitable_ex<any_ex>>>);
  static_assert(std::is_same_v<asio::use_awaitable_t<>::as_default_on_t<Object<io_ex>>, Object<awaitable_ex<io_ex>>>);
  // the converting constructor: from an rvalue of the class on an executor that converts
  static_assert(std::is_nothrow_constructible_v<Object<any_ex>, Object<io_ex>&&>);
  static_assert(std::is_nothrow_constructible_v<Object<any_ex>, Object<strand_ex>&&>);
  static_assert(std::is_nothrow_constructible_v<Object<awaitable_ex<io_ex>>, Object<io_ex>&&>);
  static_assert(std::is_nothrow_constructible_v<Object<awaitable_ex<any_ex>>, Object<any_ex>&&>);
  // ... and not otherwise: no copy, no executor that does not convert implicitly
  static_assert(!std::is_constructible_v<Object<any_ex>, Object<io_ex>&>);
  static_assert(!std::is_constructible_v<Object<any_ex>, const Object<io_ex>&>);
  static_assert(!std::is_constructible_v<Object<io_ex>, Object<any_ex>&&>);
  static_assert(!std::is_constructible_v<Object<strand_ex>, Object<io_ex>&&>);  // strand's constructor is explicit
  return true;
}

static_assert(rebinds_and_converts<zklock::basic_session>());
static_assert(rebinds_and_converts<zklock::basic_mutex>());
static_assert(rebinds_and_converts<zklock::basic_shared_mutex>());
static_assert(rebinds_and_converts<zklock::basic_semaphore>());
static_assert(rebinds_and_converts<zklock::basic_multi_lock>());
static_assert(rebinds_and_converts<zklock::basic_election>());

// Values that do not depend on an executor type rebind to themselves.
template <class T>
constexpr bool rebinds_to_itself() {
  static_assert(std::is_same_v<typename T::template rebind_executor<io_ex>::other, T>);
  static_assert(std::is_same_v<typename T::template rebind_executor<strand_ex>::other, T>);
  static_assert(std::is_same_v<asio::use_awaitable_t<>::as_default_on_t<T>, T>);
  return true;
}
static_assert(rebinds_to_itself<zklock::lock_guard>());
static_assert(rebinds_to_itself<zklock::watch>());
static_assert(rebinds_to_itself<zklock::leadership>());

/// Each conversion gives the object the executor it was converted to (io_context's, a strand's,
/// as_default_on's wrapper). `make.template operator()<Ex>(s)` makes an Object<Ex> on `s`.
template <template <class> class Object, class Make>
void check_executors(Make make) {
  asio::io_context ioc;
  zklock::basic_session<io_ex> s{ioc, zklock::session_options{.connect = "127.0.0.1:1/rebind"}};

  // io_context's executor -> any_io_executor
  Object<any_ex> on_any{make.template operator()<io_ex>(s)};
  CHECK(on_any.get_executor() == any_ex(ioc.get_executor()));

  // a strand -> any_io_executor: the strand is kept (not the io_context's plain executor)
  Object<strand_ex> on_strand = make.template operator()<strand_ex>(s);
  strand_ex strand = on_strand.get_executor();
  Object<any_ex> from_strand{std::move(on_strand)};
  CHECK(from_strand.get_executor() == any_ex(strand));
  CHECK(from_strand.get_executor() != any_ex(ioc.get_executor()));
  CHECK(from_strand.get_executor().template target<strand_ex>() != nullptr);

  // as_default_on, from io_context's executor and from any_io_executor (the README's forms)
  auto awaitable = asio::use_awaitable.as_default_on(make.template operator()<io_ex>(s));
  static_assert(std::is_same_v<decltype(awaitable), Object<awaitable_ex<io_ex>>>);
  CHECK(awaitable.get_executor() == ioc.get_executor());
  auto awaitable_any = asio::use_awaitable.as_default_on(std::move(on_any));
  static_assert(std::is_same_v<decltype(awaitable_any), Object<awaitable_ex<any_ex>>>);
  CHECK(awaitable_any.get_executor() == any_ex(ioc.get_executor()));
}

/// Makes the object, records what identifies its state, converts it and compares.
template <template <class> class Object, class Make, class Identity>
void check_state_moves(Make make, Identity identity) {
  asio::io_context ioc;
  zklock::basic_session<io_ex> s{ioc, zklock::session_options{.connect = "127.0.0.1:1/rebind"}};
  Object<io_ex> on_io = make.template operator()<io_ex>(s);
  auto before = identity(on_io);
  Object<any_ex> on_any{std::move(on_io)};
  CHECK(identity(on_any) == before);
  auto awaitable = asio::use_awaitable.as_default_on(std::move(on_any));
  CHECK(identity(awaitable) == before);
  Object<strand_ex> on_strand = make.template operator()<strand_ex>(s);
  auto strand_before = identity(on_strand);
  CHECK(strand_before != before);  // a new object has a state of its own
  Object<awaitable_ex<any_ex>> chained{Object<any_ex>{std::move(on_strand)}};
  CHECK(identity(chained) == strand_before);
}

template <template <class> class Object, class Make, class Identity>
void check_all(Make make, Identity identity) {
  check_executors<Object>(make);
  check_state_moves<Object>(make, identity);
}

}  // namespace

TEST_CASE("rebind: session converts to another executor type, keeping its engine", "[unit][rebind]") {
  asio::io_context ioc;
  zklock::basic_session<io_ex> s{ioc, zklock::session_options{.connect = "127.0.0.1:1/a"}};
  const auto* engine_options = &s.options();
  zklock::basic_session<any_ex> on_any{std::move(s)};
  CHECK(&on_any.options() == engine_options);
  CHECK(on_any.options().connect == "127.0.0.1:1/a");
  CHECK(on_any.get_executor() == any_ex(ioc.get_executor()));
  auto awaitable = asio::use_awaitable.as_default_on(std::move(on_any));
  CHECK(&awaitable.options() == engine_options);
  CHECK(awaitable.get_executor() == any_ex(ioc.get_executor()));

  auto strand = asio::make_strand(ioc);
  zklock::basic_session<strand_ex> on_strand{strand};
  const auto* strand_options = &on_strand.options();
  CHECK(strand_options != engine_options);
  zklock::basic_session<any_ex> from_strand{std::move(on_strand)};
  CHECK(&from_strand.options() == strand_options);
  CHECK(from_strand.get_executor() == any_ex(strand));
  CHECK(from_strand.get_executor() != any_ex(ioc.get_executor()));

  // as_default_on_t constructs from an execution context, as the README's sessions do
  asio::use_awaitable_t<>::as_default_on_t<zklock::session> from_context{ioc};
  CHECK(from_context.get_executor() == any_ex(ioc.get_executor()));
}

TEST_CASE("rebind: mutex converts to another executor type, keeping its lock dir", "[unit][rebind]") {
  int n = 0;
  check_all<zklock::basic_mutex>(
      [&n]<class Ex>(zklock::basic_session<io_ex>& s) { return zklock::basic_mutex<Ex>(s, "/rebind/m" + std::to_string(n++)); },
      [](const auto& m) { return &m.path(); });
}

TEST_CASE("rebind: shared_mutex converts to another executor type, keeping its lock dir", "[unit][rebind]") {
  int n = 0;
  check_all<zklock::basic_shared_mutex>(
      [&n]<class Ex>(zklock::basic_session<io_ex>& s) {
        return zklock::basic_shared_mutex<Ex>(s, "/rebind/rw" + std::to_string(n++));
      },
      [](const auto& m) { return &m.path(); });
}

TEST_CASE("rebind: semaphore converts to another executor type, keeping its state", "[unit][rebind]") {
  int n = 0;
  check_all<zklock::basic_semaphore>(
      [&n]<class Ex>(zklock::basic_session<io_ex>& s) {
        ++n;
        return zklock::basic_semaphore<Ex>(s, "/rebind/sem" + std::to_string(n), n);
      },
      [](const auto& m) { return std::pair(&m.leases_path(), m.max_leases()); });
}

TEST_CASE("rebind: multi_lock converts to another executor type, keeping its locks", "[unit][rebind]") {
  int n = 0;
  check_all<zklock::basic_multi_lock>(
      [&n]<class Ex>(zklock::basic_session<io_ex>& s) {
        auto k = std::to_string(n++);
        return zklock::basic_multi_lock<Ex>(s, std::vector<std::string>{"/rebind/b" + k, "/rebind/a" + k});
      },
      [](const auto& m) { return m.paths(); });
}

TEST_CASE("rebind: election converts to another executor type, keeping its state", "[unit][rebind]") {
  int n = 0;
  check_all<zklock::basic_election>(
      [&n]<class Ex>(zklock::basic_session<io_ex>& s) {
        return zklock::basic_election<Ex>(s, "/rebind/e", "candidate-" + std::to_string(n++));
      },
      [](const auto& e) { return std::pair(&e.path(), e.identity()); });
}
