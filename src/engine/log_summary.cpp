#include "engine/log_summary.hpp"

namespace zklock::detail {

namespace {
std::string_view between(std::string_view m, std::string_view before, std::string_view after) {
  auto i = m.find(before);
  if (i == std::string_view::npos) return {};
  i += before.size();
  auto j = m.find(after, i);
  return j == std::string_view::npos ? std::string_view{} : m.substr(i, j - i);
}
}  // namespace

log_level log_summary::classify(log_level level, std::string_view m, std::optional<line>& summary) {
  summary.reset();
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.remove_suffix(1);
  // "Socket HOST:PORT zk retcode=-4, errno=111(Connection refused): ..."
  if (auto server = between(m, "Socket ", " zk retcode="); !server.empty()) {
    // A session's expiry is news, not retry chatter.
    if (m.find("has expired") != std::string_view::npos) return level;
    auto it = failures_.find(server);
    if (it == failures_.end()) it = failures_.emplace(std::string(server), server_failures{}).first;
    auto& f = it->second;
    if (f.noted) {  // the attempt note_failure counted, with its own reason
      f.noted = false;
      f.last_line = std::string(m);
      return log_level::debug;
    }
    if (f.last_line != m) {
      f.last_line = std::string(m);
      // recv() found the end of the stream: the C client says EHOSTDOWN ("Host is down") for
      // what is a server closing the connection (one that stops, or refuses to serve us). Said
      // once the next attempt fails too, with its cause: a server that stopped refuses it.
      bool closed = m.find("errno=112(") != std::string_view::npos;
      f.reason = closed ? std::string("the server closed the connection") : std::string(between(m, "(", ")"));
      if (++f.attempts > 1 || !closed) summary = first_summary(server, f);
    }
    return log_level::debug;
  }
  // Closing a session whose server does not answer (stopped, or gone unnoticed): the C client
  // waits 1.5 s for the reply to its close request and says so; the session ends on the
  // server at its timeout all the same, and nothing the program can act on.
  if (m.find("Delaying connection after exhaustively trying") != std::string_view::npos ||
      m.find("Exceeded deadline by") != std::string_view::npos ||
      m.find("wait_for_session_to_be_closed") != std::string_view::npos)
    return log_level::debug;
  return level;
}

std::optional<log_summary::line> log_summary::note_failure(std::string_view server, std::string reason) {
  auto it = failures_.find(server);
  if (it == failures_.end()) it = failures_.emplace(std::string(server), server_failures{}).first;
  auto& f = it->second;
  f.noted = true;
  f.reason = std::move(reason);
  ++f.attempts;
  return first_summary(server, f);
}

std::optional<log_summary::line> log_summary::first_summary(std::string_view server, server_failures& f) {
  if (f.reported) return std::nullopt;
  f.reported = true;
  return line{log_level::warn, "zklock: ZooKeeper server " + std::string(server) + " unreachable: " + f.reason +
                                   " (retrying; the C client's lines at debug level)"};
}

std::string log_summary::failures() const {
  std::string r;
  for (const auto& [server, f] : failures_)
    r += (r.empty() ? "" : "; ") + server + ": " + f.reason + ", " + std::to_string(f.attempts) +
         (f.attempts == 1 ? " attempt" : " attempts");
  return r;
}

std::string log_summary::causes() const {
  std::string r;
  for (const auto& [server, f] : failures_) r += (r.empty() ? "" : "; ") + server + ": " + f.reason;
  return r;
}

}  // namespace zklock::detail
