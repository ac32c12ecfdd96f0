// What a state machine asks of its runner, and what comes back: one vocabulary for every
// machine (Boost.MySQL's next_action, for ZooKeeper). A machine's step is a list of `request`s;
// the runner (src/lock/runner.hpp) carries each out and answers with an `input` carrying the
// request's `tag`, a number the machine chose (what it asked, a generation), so the machine
// knows what the answer is to without the runner knowing the machine.
//
// Kinds:
//  - ZooKeeper requests: create, remove, exists, get_data, get_children, sync, multi. exists,
//    get_data and get_children set a watch when `slot` names one (the watch set last in a slot
//    is that slot's; a new one replaces it). Their reply: an input::reply with the tag.
//  - wait_watch(slot): the slot's watch fires -> input::watch_fired (its event's type), once;
//    remove_watch(slot): removes it (nothing registered any more: answered at once, no error).
//    A removal lost with the connection keeps the watch in its slot (the C client keeps it).
//  - timer(slot, at or after) -> input::timer_due once due (a timer set again replaces the
//    previous one of its slot); cancel_timer(slot): no input.
//  - await_connection -> input::connection once connected again (no error) or the session is
//    over (its session_end_error).
//  - follow_session -> input::session (with its tag) at each change of the session's state from
//    then on, until stop_following (`state`: the state the change told); set_data(path, data,
//    version) -> input::reply (the node's stat). Both only on a session that has them.
//  - Every input carries `seen`, the session as the runner saw it when the input arrived (its
//    state, id and contact with the server), when the session tells it.
//  - notify: one of the machine's own outcomes (`what`, its enum's value; `id`, `ec`, `value`),
//    handed to the recipe's hook (a waiter granted, a loss to report; `path`: the node it is
//    about); complete: the operation is over with `ec`, its result is the machine's (result()).
// An operation's cancellation reaches the machine as input::cancelled (`total`: only total
// cancellation, which waits for the cleanup; `connected`: the session's now).
#pragma once

#include <zklock/error.hpp>
#include <zklock/types.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

// (a namespace of its own: the engine has a detail::request, its C client calls)
namespace zklock::detail::sansio {

struct request {
  enum kind : std::uint8_t {
    create, remove, exists, get_data, get_children, sync, multi,
    wait_watch, remove_watch, timer, cancel_timer, await_connection,
    notify, complete,
    set_data, follow_session, stop_following,
  };
  static constexpr std::uint8_t no_slot = 0xff;

  kind type;
  std::uint64_t tag = 0;           ///< comes back with the answer
  std::uint8_t slot = no_slot;     ///< the watch (exists, get_*, wait_watch, remove_watch) or timer slot
  std::string path{};              ///< create, remove, exists, get_*, sync, set_data, notify
  std::string data{};              ///< create, set_data
  create_mode mode = create_mode::persistent;  ///< create
  int version = -1;                ///< remove, set_data
  std::vector<multi_op> ops{};     ///< multi
  std::chrono::steady_clock::time_point at{};  ///< timer: when (or `after` from now when empty)
  std::chrono::steady_clock::duration after{};
  std::uint8_t what = 0;           ///< notify: the machine's outcome
  std::uint64_t id = 0;            ///< notify: whom it is for (a waiter)
  error_code ec{};                 ///< notify, complete
  std::uint32_t value = 0;         ///< notify: a number that goes with it (a generation)

  static request get_children_of(std::uint64_t tag, std::string path, std::uint8_t watch = no_slot) {
    return {.type = get_children, .tag = tag, .slot = watch, .path = std::move(path)};
  }
  static request get_data_of(std::uint64_t tag, std::string path, std::uint8_t watch = no_slot) {
    return {.type = get_data, .tag = tag, .slot = watch, .path = std::move(path)};
  }
  static request exists_of(std::uint64_t tag, std::string path, std::uint8_t watch = no_slot) {
    return {.type = exists, .tag = tag, .slot = watch, .path = std::move(path)};
  }
  static request wait_for(std::uint64_t tag, std::uint8_t watch) { return {.type = wait_watch, .tag = tag, .slot = watch}; }
  static request remove_watch_of(std::uint64_t tag, std::uint8_t watch) {
    return {.type = remove_watch, .tag = tag, .slot = watch};
  }
  static request timer_after(std::uint64_t tag, std::uint8_t s, std::chrono::steady_clock::duration d) {
    return {.type = timer, .tag = tag, .slot = s, .after = d};
  }
  static request timer_at(std::uint64_t tag, std::uint8_t s, std::chrono::steady_clock::time_point t) {
    return {.type = timer, .tag = tag, .slot = s, .at = t};
  }
  static request stop_timer(std::uint8_t s) { return {.type = cancel_timer, .slot = s}; }
  static request connection(std::uint64_t tag = 0) { return {.type = await_connection, .tag = tag}; }
  template <class Outcome>
  static request outcome(Outcome what, std::uint64_t id = 0, error_code ec = {}, std::uint32_t value = 0) {
    return {.type = notify, .what = static_cast<std::uint8_t>(what), .id = id, .ec = ec, .value = value};
  }
  template <class Outcome>
  static request outcome_on(Outcome what, std::string path, error_code ec = {}) {
    return {.type = notify, .path = std::move(path), .what = static_cast<std::uint8_t>(what), .ec = ec};
  }
  static request follow(std::uint64_t tag = 0) { return {.type = follow_session, .tag = tag}; }
  static request unfollow() { return {.type = stop_following}; }
  static request done(error_code ec) { return {.type = complete, .ec = ec}; }
  static request set_data_of(std::uint64_t tag, std::string path, std::string data, int version = -1) {
    return {.type = set_data, .tag = tag, .path = std::move(path), .data = std::move(data), .version = version};
  }

  /// notify's outcome, as the machine's enum.
  template <class Outcome>
  Outcome outcome_kind() const noexcept {
    return static_cast<Outcome>(what);
  }
};

/// The session as the runner saw it when an input arrived: its state and id, and its contact
/// with the server (the last reply, the validity deadline it implies, the negotiated timeout).
/// All empty for a session that does not tell them.
struct session_view {
  using time_point = std::chrono::steady_clock::time_point;
  session_state state = session_state::connecting;
  std::int64_t session_id = 0;
  time_point now{};
  time_point valid_until{};
  time_point last_acknowledged{};
  std::chrono::milliseconds session_timeout{0};
};

/// What the runner answers: a request's reply, a watch's event, a timer, the session's
/// connection (after await_connection), or the operation's cancellation.
struct input {
  enum kind : std::uint8_t { reply, watch_fired, timer_due, connection, cancelled, session };
  /// (a listing's result comes shared with the session's other askers of it: listing)
  using listing = std::shared_ptr<const children_result>;
  using value_type = std::variant<std::monostate, std::optional<node_stat>, data_result, children_result,
                                  create_result, std::vector<multi_result>, listing>;

  kind type;
  std::uint64_t tag = 0;  ///< the request's
  error_code ec{};        ///< reply: the request's error; watch_fired: the session ended and took it;
                          ///< connection: the session's end (empty: connected)
  value_type value{};     ///< reply: exists (the stat, none: no node), get_data, get_children, create, multi
  watch_event_type event{};  ///< watch_fired: what fired it
  bool total = false;      ///< cancelled: total cancellation only (wait for the cleanup)
  bool connected = false;  ///< cancelled, timer_due: the session is connected now
  session_state state{};   ///< session: the state the change told (seen: the session now)
  session_view seen{};     ///< the session when this input arrived

  const children_result* children() const noexcept {
    if (auto shared = std::get_if<listing>(&value)) return shared->get();
    return std::get_if<children_result>(&value);
  }
  const data_result* data() const noexcept { return std::get_if<data_result>(&value); }
  /// exists, set_data: the node's stat (none: no node).
  const node_stat* stat() const noexcept {
    auto st = std::get_if<std::optional<node_stat>>(&value);
    return st && st->has_value() ? &**st : nullptr;
  }
  /// exists: whether the node is there.
  bool node_exists() const noexcept {
    auto st = std::get_if<std::optional<node_stat>>(&value);
    return st && st->has_value();
  }
};

}  // namespace zklock::detail::sansio
