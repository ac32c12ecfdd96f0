// A fault-injecting TCP proxy on 127.0.0.1 for tests: forwards to a target, and on request
// swallows the server's replies, drops every connection, or drops them at a given ZooKeeper
// request. Runs on the test's io_context.
#pragma once

#include <boost/asio.hpp>

#include <array>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>

namespace zklock::test {

class tcp_proxy {
 public:
  tcp_proxy(boost::asio::any_io_executor ex, std::uint16_t target_port)
      : ex_(ex), acceptor_(ex, {boost::asio::ip::make_address("127.0.0.1"), 0}), target_port_(target_port) {
    accept();
  }
  ~tcp_proxy() {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    drop_all();
  }

  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  std::string connect_string() const { return "127.0.0.1:" + std::to_string(port()); }

  /// While true, bytes from the server are read and thrown away (requests still go through).
  void swallow_replies(bool on) { swallow_ = on; }
  /// While true, bytes in both directions are read and thrown away: connections stay open and
  /// nothing passes (a partition as a silent network makes it, not a refused connection).
  void blackhole(bool on) { blackhole_ = on; }
  /// Closes every proxied connection (both sides), as a network failure would.
  void drop_all() {
    for (auto& l : links_) {
      boost::system::error_code ignored;
      l->client.close(ignored);
      l->server.close(ignored);
    }
    links_.clear();
  }
  /// Resets every proxied connection (both sides) with an RST (SO_LINGER 0), as a crashed
  /// middlebox or a peer's kernel would: in-flight requests and replies are lost.
  void reset_all() {
    for (auto& l : links_) {
      boost::system::error_code ignored;
      l->client.set_option(boost::asio::socket_base::linger(true, 0), ignored);
      l->server.set_option(boost::asio::socket_base::linger(true, 0), ignored);
      l->client.close(ignored);
      l->server.close(ignored);
    }
    links_.clear();
  }
  /// Once the client sends a request of type `opcode` (ZooKeeper's OpCode: 18 is
  /// removeWatches), every connection is closed as drop_all does, and neither that request nor
  /// what came with it in the same read reaches the server: its reply is lost for certain.
  /// Once; -1 disarms it.
  void cut_at_request(std::int32_t opcode) { cut_opcode_ = opcode; }
  /// Counts from now on the requests of type `opcode` (ZooKeeper's OpCode: 12 is
  /// getChildren2) on node `path` that clients send through the proxy (requests_counted).
  void count_requests(std::int32_t opcode, std::string path) {
    count_opcode_ = opcode;
    count_path_ = std::move(path);
    counted_ = 0;
  }
  int requests_counted() const { return counted_; }
  /// How many times cut_at_request cut.
  int cuts() const { return cuts_; }
  int connections_accepted() const { return accepted_; }
  /// While false, new connections are closed at once (the server looks unreachable).
  void set_accepting(bool on) { accepting_ = on; }

 private:
  struct link {
    explicit link(boost::asio::any_io_executor ex) : client(ex), server(ex) {}
    boost::asio::ip::tcp::socket client, server;
    std::string unparsed;        // the client's bytes of a request not read whole yet
    bool connect_read = false;   // its first frame, the connect request (no request header)
  };

  // Whether the client's bytes `in` end a request of type `opcode`. Frames: a 4-byte big-endian
  // length, then the request: a header (xid, type) but in the connection's first frame.
  bool ends_request_of(link& l, std::string_view in, std::int32_t opcode) {
    auto be32 = [&l](std::size_t at) {
      std::uint32_t v = 0;
      for (std::size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(l.unparsed[at + i]);
      return v;
    };
    l.unparsed.append(in);
    bool found = false;
    while (l.unparsed.size() >= 4 && l.unparsed.size() - 4 >= be32(0)) {
      std::size_t frame = 4 + be32(0);
      if (l.connect_read && frame >= 12 && static_cast<std::int32_t>(be32(8)) == opcode) found = true;
      // a request's path: after its header, a 4-byte length and the bytes
      if (l.connect_read && frame >= 16 && count_opcode_ >= 0 && static_cast<std::int32_t>(be32(8)) == count_opcode_ &&
          frame >= 16 + be32(12) && l.unparsed.compare(16, be32(12), count_path_) == 0 && be32(12) == count_path_.size())
        ++counted_;
      l.connect_read = true;
      l.unparsed.erase(0, frame);
    }
    return found;
  }

  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, boost::asio::ip::tcp::socket s) {
      if (ec) return;
      if (!accepting_) {
        boost::system::error_code ignored;
        s.close(ignored);
        return accept();
      }
      ++accepted_;
      auto l = std::make_shared<link>(ex_);
      l->client = std::move(s);
      boost::system::error_code cec;
      l->server.connect({boost::asio::ip::make_address("127.0.0.1"), target_port_}, cec);
      if (!cec) {
        links_.push_back(l);
        pump(l, l->client, l->server, false);
        pump(l, l->server, l->client, true);
      }
      accept();
    });
  }

  void pump(std::shared_ptr<link> l, boost::asio::ip::tcp::socket& from, boost::asio::ip::tcp::socket& to,
            bool from_server) {
    auto buf = std::make_shared<std::array<char, 16384>>();
    from.async_read_some(boost::asio::buffer(*buf), [this, l, &from, &to, from_server, buf](boost::system::error_code ec,
                                                                                          std::size_t n) {
      if (ec) {
        boost::system::error_code ignored;
        l->client.close(ignored);
        l->server.close(ignored);
        return;
      }
      if (!from_server && ends_request_of(*l, {buf->data(), n}, cut_opcode_) && cut_opcode_ >= 0) {
        cut_opcode_ = -1;
        ++cuts_;
        return drop_all();
      }
      if (blackhole_ || (from_server && swallow_)) return pump(l, from, to, from_server);
      boost::asio::async_write(to, boost::asio::buffer(buf->data(), n),
                               [this, l, &from, &to, from_server, buf](boost::system::error_code ec, std::size_t) {
                                 if (ec) return;
                                 pump(l, from, to, from_server);
                               });
    });
  }

  boost::asio::any_io_executor ex_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::uint16_t target_port_;
  bool swallow_ = false;
  bool blackhole_ = false;
  bool accepting_ = true;
  int accepted_ = 0;
  std::int32_t cut_opcode_ = -1;  // cut_at_request
  int cuts_ = 0;
  std::int32_t count_opcode_ = -1;  // count_requests
  std::string count_path_;
  int counted_ = 0;
  std::list<std::shared_ptr<link>> links_;
};

}  // namespace zklock::test
