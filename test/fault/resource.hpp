// The fenced resource: a loopback TCP server on the harness's io_context that the clients
// report every step of their critical sections to (resource_client.hpp), accepts a write only
// with a fencing token >= the highest it has accepted (by recipe, see below), and journals
// every message with its own receive time (journal.hpp). The nemesis arms one-shot triggers on
// it ("the next grant: hold 5000 ms and blackhole that client").
#pragma once

#include "journal.hpp"

#include <boost/asio.hpp>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace zklock::fault {

class resource {
 public:
  // A one-shot action on the next message of `kind` (from anyone): returns text appended to the
  // reply ("HOLD 5000", "HOLD 400 PAUSE"). Runs on the io thread.
  using action = std::function<std::string(const record&)>;

  // How writes are fenced, by recipe:
  //  mutex: a write is accepted with a token >= the highest accepted.
  //  shared: a writer's write with a token >= the highest accepted from anyone (a reader granted
  //    after it makes it stale), a reader's with a token >= the highest accepted from a writer
  //    (readers' sections overlap each other legitimately, their order does not matter).
  //  semaphore: every write is accepted. Leases are not exclusive: N holders hold at once, and a
  //    newer lease's token says nothing about an older one's being gone, so no order of tokens
  //    can tell a stale holder from a live one (docs/RELIABILITY.md).
  explicit resource(boost::asio::io_context& ioc, std::string recipe = "mutex")
      : acceptor_(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0}), recipe_(std::move(recipe)) {
    accept();
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

  // `only`: the trigger fires on the first message of `kind` for which it returns true.
  void arm(std::string kind, action a, std::function<bool(const record&)> only = nullptr) {
    std::lock_guard lk(m_);
    trigger_kind_ = std::move(kind);
    trigger_ = std::move(a);
    trigger_only_ = std::move(only);
    fired_ = std::nullopt;
  }
  void disarm() {
    std::lock_guard lk(m_);
    trigger_ = nullptr;
  }
  // Waits until the armed trigger fired; returns the record that fired it.
  std::optional<record> wait_fired(std::chrono::milliseconds bound) {
    std::unique_lock lk(m_);
    cv_.wait_for(lk, bound, [&] { return fired_.has_value(); });
    if (!fired_) trigger_ = nullptr;
    return fired_;
  }
  // Waits until pred(journal) holds.
  bool wait_for(std::chrono::milliseconds bound, const std::function<bool(const std::vector<record>&)>& pred) {
    std::unique_lock lk(m_);
    return cv_.wait_for(lk, bound, [&] { return pred(journal_); });
  }
  std::vector<record> journal() {
    std::lock_guard lk(m_);
    return journal_;
  }

 private:
  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, boost::asio::ip::tcp::socket s) {
      if (ec) return;
      s.set_option(boost::asio::ip::tcp::no_delay(true));
      auto conn = std::make_shared<connection>(std::move(s));
      read(conn);
      accept();
    });
  }
  struct connection {
    explicit connection(boost::asio::ip::tcp::socket s) : sock(std::move(s)) {}
    boost::asio::ip::tcp::socket sock;
    boost::asio::streambuf in;
    std::string out;
  };
  void read(std::shared_ptr<connection> c) {
    boost::asio::async_read_until(c->sock, c->in, '\n', [this, c](boost::system::error_code ec, std::size_t n) {
      if (ec) return;
      std::string line(boost::asio::buffers_begin(c->in.data()), boost::asio::buffers_begin(c->in.data()) + n - 1);
      c->in.consume(n);
      c->out = handle(line) + "\n";
      boost::asio::async_write(c->sock, boost::asio::buffer(c->out), [this, c](boost::system::error_code ec, std::size_t) {
        if (!ec) read(c);
      });
    });
  }
  std::string handle(const std::string& line) {
    // a storm worker's user socket (zklock_worker.cpp): answered, not journaled
    if (line.rfind("ping ", 0) == 0) return "OK";
    record r;
    r.t_recv = mono_ns();
    std::istringstream in(line);
    in >> r.kind >> r.who >> r.token >> r.t_client;
    std::getline(in, r.extra);
    if (!r.extra.empty() && r.extra[0] == ' ') r.extra.erase(0, 1);
    std::string reply = "OK";
    action fire;
    {
      std::lock_guard lk(m_);
      if (r.kind == "grant") reader_[{r.who, r.token}] = is_reader(side_of_grant(r.extra));
      if (is_write(r.kind)) {
        const bool reader = recipe_ == "shared" && reader_[{r.who, r.token}];
        const std::int64_t bar = recipe_ == "semaphore" ? 0 : reader ? highest_writer_ : highest_;
        if (r.token >= bar) {
          highest_ = std::max(highest_, r.token);
          if (!reader) highest_writer_ = std::max(highest_writer_, r.token);
          r.verdict = 1;
        } else {
          r.verdict = -1;
          reply = "REJECT " + std::to_string(bar);
        }
      }
      if (trigger_ && r.kind == trigger_kind_ && r.verdict >= 0 && (!trigger_only_ || trigger_only_(r)))
        std::swap(fire, trigger_);
    }
    if (fire) {
      std::string more = fire(r);
      if (!more.empty()) reply += " " + more;
    }
    std::lock_guard lk(m_);
    if (fire) fired_ = r;
    journal_.push_back(std::move(r));
    cv_.notify_all();
    return reply;
  }

  boost::asio::ip::tcp::acceptor acceptor_;
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<record> journal_;
  std::string recipe_;
  std::int64_t highest_ = 0;         // the highest token accepted
  std::int64_t highest_writer_ = 0;  // shared: the highest token accepted from a writer
  std::map<std::pair<std::string, std::int64_t>, bool> reader_;  // (who, token) -> a reader's section
  std::string trigger_kind_;
  action trigger_;
  std::function<bool(const record&)> trigger_only_;
  std::optional<record> fired_;
};

}  // namespace zklock::fault
