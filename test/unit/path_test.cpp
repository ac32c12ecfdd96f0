// Lock paths: the validation rules (one error per problem), the lock-path rule every recipe
// applies before it sends anything, and the path helpers. (Connect strings: connect_string_test.cpp.)
#include <zklock/error.hpp>
#include <zklock/mutex.hpp>
#include <zklock/path.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/session.hpp>

#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>

#include <string>
#include <utility>

using namespace zklock;

TEST_CASE("path validation gives a distinct error for each problem", "[unit][path]") {
  const std::pair<std::string, error_code> cases[] = {
      {"/", {}},
      {"/a", {}},
      {"/locks/orders/42", {}},
      {"/a/.b/..c/b..", {}},  // dots inside names are fine
      {"", errc::path_empty},
      {"locks/a", errc::path_not_absolute},
      {"/a/", errc::path_trailing_slash},
      {"/a//b", errc::path_empty_segment},
      {"/a/./b", errc::path_relative_segment},
      {"/a/..", errc::path_relative_segment},
      {"/.", errc::path_relative_segment},
      {std::string("/a\0b", 4), errc::path_control_character},
      {"/a\nb", errc::path_control_character},
      {"/a\x7f", errc::path_control_character},
      {"/" + std::string(max_path_length - 1, 'a'), {}},
      {"/" + std::string(max_path_length, 'a'), errc::path_too_long},
  };
  for (const auto& [path, want] : cases) {
    CAPTURE(path);
    CHECK(validate_path(path) == want);
  }
}

TEST_CASE("the root is no lock: a mutex and a semaphore on '/' fail with path_not_absolute, nothing sent",
          "[unit][path]") {
  // One rule (validate_lock_path) for every recipe. The session never connects: the path is
  // judged before the session (which would say not_connected).
  boost::asio::io_context ioc;
  session s(ioc, session_options{.connect = "127.0.0.1:1"});
  mutex root(s, "/");
  semaphore root_leases(s, "/", 2);
  mutex fine(s, "/locks/a");
  error_code mutex_ec, semaphore_ec, fine_ec;
  root.async_acquire([&](error_code ec, lock_guard) { mutex_ec = ec; });
  root_leases.async_try_acquire([&](error_code ec, lock_guard) { semaphore_ec = ec; });
  fine.async_try_acquire([&](error_code ec, lock_guard) { fine_ec = ec; });
  ioc.run();
  CHECK(mutex_ec == errc::path_not_absolute);
  CHECK(semaphore_ec == errc::path_not_absolute);
  // The message names the root, not "must start with '/'" (which "/" does).
  CHECK_THAT(mutex_ec.message(), Catch::Matchers::Contains("the root '/' cannot be a lock path"));
  CHECK_THAT(semaphore_ec.message(), Catch::Matchers::Contains("the root '/' cannot be a lock path"));
  CHECK(fine_ec == errc::not_connected);  // a fine path gets as far as the session
  CHECK(s.stats().requests_sent == 0);
}

TEST_CASE("validate_lock_path: validate_path's rule, and the root is no lock", "[unit][path]") {
  CHECK_FALSE(validate_lock_path("/locks/a"));
  CHECK(validate_lock_path("locks/a") == errc::path_not_absolute);
  CHECK(validate_lock_path("/locks/a/") == errc::path_trailing_slash);
  CHECK(validate_lock_path("") == errc::path_empty);
  CHECK(validate_lock_path("/") == errc::path_not_absolute);
  CHECK_THAT(validate_lock_path("/").message(), Catch::Matchers::Contains("the root '/' cannot be a lock path"));
  CHECK_FALSE(validate_path("/"));  // a valid znode path, only not a lock's
}

TEST_CASE("path helpers", "[unit][path]") {
  CHECK(parent_path("/a/b/c") == "/a/b");
  CHECK(parent_path("/a") == "/");
  CHECK(parent_path("/") == "");
  CHECK(node_name("/a/b/c") == "c");
  CHECK(join_path("/a", "b") == "/a/b");
  CHECK(join_path("/", "b") == "/b");
}
