#include <zklock/error.hpp>

#include <catch2/catch.hpp>

#include <set>
#include <string>

using namespace zklock;

TEST_CASE("every ZooKeeper return code has its own message", "[unit][error]") {
  const int codes[] = {-1, -2, -3, -4, -5, -6, -7, -8, -9, -13, -14, -15, -100, -101, -102, -103,
                       -108, -110, -111, -112, -113, -114, -115, -116, -117, -118, -119, -120, -121,
                       -123, -124, -127};
  std::set<std::string> messages;
  for (int c : codes) {
    error_code ec = zk_error(c);
    CHECK(ec);
    CHECK(ec.category() == zk_category());
    CHECK(std::string(ec.category().name()) == "zookeeper");
    CHECK(ec.message().find("unknown") == std::string::npos);
    messages.insert(ec.message());
  }
  CHECK(messages.size() == std::size(codes));
  CHECK_FALSE(zk_error(0));
  CHECK(zk_error(-4) == zk_errc::connection_loss);
  CHECK(make_error_code(zk_errc::no_node).value() == -101);
  CHECK(zk_error(-999).message().find("unknown") != std::string::npos);
}

TEST_CASE("zklock's own conditions have their own category and messages", "[unit][error]") {
  std::set<std::string> messages;
  for (int v = static_cast<int>(errc::empty_connect_string); v <= static_cast<int>(errc::connection_unavailable); ++v) {
    error_code ec = static_cast<errc>(v);
    CHECK(ec.category() == zklock_category());
    CHECK(ec.message().find("unknown") == std::string::npos);
    messages.insert(ec.message());
  }
  CHECK(messages.size() == static_cast<std::size_t>(errc::connection_unavailable) - static_cast<std::size_t>(errc::empty_connect_string) + 1);
  CHECK(error_code(errc::lock_lost) != error_code(zk_errc::session_expired));
}

TEST_CASE("the conditions a user tests: every session, connection and lock outcome belongs to one", "[unit][error]") {
  // connection_lost: the request may or may not have applied, or ZooKeeper could not be asked
  for (error_code ec : {error_code(zk_errc::connection_loss), error_code(zk_errc::operation_timeout),
                        error_code(zk_errc::runtime_inconsistency), error_code(errc::connection_unavailable)})
    CHECK(ec == condition::connection_lost);
  // session_lost: no session (ended, or none could be established)
  for (error_code ec : {error_code(zk_errc::session_expired), error_code(zk_errc::closing), error_code(zk_errc::invalid_state),
                        error_code(errc::session_expired), error_code(errc::session_closed), error_code(errc::not_connected),
                        error_code(errc::connect_timeout)})
    CHECK(ec == condition::session_lost);
  // lock_unavailable is contention only: a timeout while disconnected does not blame it
  CHECK(error_code(errc::lock_busy) == condition::lock_unavailable);
  CHECK(error_code(errc::lock_timeout) == condition::lock_unavailable);
  CHECK(error_code(errc::connection_unavailable) != condition::lock_unavailable);
  CHECK(error_code(errc::lock_lost) == condition::lock_lost);
  CHECK(error_code(errc::lock_lost) != condition::session_lost);
  // each code belongs to one condition at most
  for (int v = static_cast<int>(errc::empty_connect_string); v <= static_cast<int>(errc::connection_unavailable); ++v) {
    error_code ec = static_cast<errc>(v);
    int n = (ec == condition::connection_lost) + (ec == condition::session_lost) + (ec == condition::lock_unavailable) +
            (ec == condition::lock_lost);
    INFO(ec.message());
    CHECK(n <= 1);
  }
}

TEST_CASE("error conditions group the codes", "[unit][error]") {
  CHECK(error_code(zk_errc::connection_loss) == condition::connection_lost);
  CHECK(error_code(zk_errc::operation_timeout) == condition::connection_lost);
  CHECK(error_code(zk_errc::runtime_inconsistency) == condition::connection_lost);  // the C client dropped the connection
  CHECK(error_code(zk_errc::session_expired) == condition::session_lost);
  CHECK(error_code(errc::session_expired) == condition::session_lost);
  CHECK(error_code(errc::session_closed) == condition::session_lost);
  CHECK(error_code(zk_errc::closing) == condition::session_lost);
  CHECK(error_code(errc::lock_busy) == condition::lock_unavailable);
  CHECK(error_code(errc::lock_timeout) == condition::lock_unavailable);
  CHECK(error_code(errc::lock_lost) != condition::lock_unavailable);
  CHECK(error_code(zk_errc::no_node) != condition::session_lost);
  CHECK(error_code(zk_errc::no_node) != condition::connection_lost);
}
