#include "history.hpp"

#include <cctype>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace zklock::fault {

namespace {

std::int64_t num(const std::string& s, std::int64_t fallback = -1) {
  if (s.empty()) return fallback;
  try {
    return std::stoll(s);
  } catch (...) {
    return fallback;
  }
}

}  // namespace

history history_of(const std::vector<record>& j, history_run run) {
  history h;
  h.run = std::move(run);
  std::map<std::string, int> open;  // contender -> index of its last acquire in h.acquires
  auto current = [&](const std::string& who) -> h_acquire* {
    auto it = open.find(who);
    return it == open.end() ? nullptr : &h.acquires[std::size_t(it->second)];
  };
  int write_id = 0;
  for (auto& x : j) {
    if (x.kind == "acquire") {
      h_acquire a;
      a.id = int(h.acquires.size()) + 1;
      a.process = x.who;
      a.invoke_ns = x.t_client;
      if (x.extra == "read" || x.extra == "write") a.side = x.extra;
      open[x.who] = int(h.acquires.size());
      h.acquires.push_back(a);
      continue;
    }
    h_acquire* a = current(x.who);
    if (!a) continue;
    const bool pending = a->complete_ns == 0;
    if (pending && (x.kind == "grant" || x.kind == "dead_grant")) {
      a->complete_ns = x.t_client;
      a->outcome = "ok";
      a->token = x.token;
      if (x.kind == "grant") {
        a->node = x.extra.substr(0, x.extra.find(' '));
        std::string side = side_of_grant(x.extra);
        if (side != "exclusive" || a->side == "exclusive") a->side = side;
        a->child_events = num(extra_field(x.extra, "ev"));
      } else {
        a->stop_ns = a->told_lost_ns = x.t_client;  // past its validity already: never used
        a->told_how = "dead at its grant";
      }
    } else if (pending && x.kind == "acquire_error") {
      a->complete_ns = x.t_client;
      a->outcome = "error";
      a->error = x.extra;
    }
    if (a->outcome != "ok") continue;
    if (is_write(x.kind)) {
      h_write w;
      w.id = ++write_id;
      w.acquire = a->id;
      w.process = x.who;
      w.token = x.token;
      w.invoke_ns = x.t_client;
      w.complete_ns = x.t_recv;
      w.outcome = x.verdict > 0 ? "ok" : "refused";
      h.writes.push_back(w);
      a->last_write_ns = std::max(a->last_write_ns, x.t_client);
      if (x.kind == "end" && !a->stop_ns) a->stop_ns = x.t_client;
      if (x.verdict < 0 && !a->told_lost_ns) {
        a->told_lost_ns = x.t_recv;
        a->told_how = "refused by the register";
      }
    } else if (x.kind == "zkwrite") {
      h_write w;
      w.id = ++write_id;
      w.acquire = a->id;
      w.process = x.who;
      w.resource = "znode";
      w.token = x.token;
      w.invoke_ns = num(extra_field(x.extra, "invoke"), x.t_client);
      w.complete_ns = x.t_client;
      std::string outcome = extra_field(x.extra, "outcome");
      w.outcome = outcome.rfind("error", 0) == 0 ? "error" : outcome;
      if (w.outcome == "error") w.error = outcome.size() > 6 ? outcome.substr(6) : "";
      w.read = num(extra_field(x.extra, "read"));
      w.value = num(extra_field(x.extra, "value"));
      w.version = num(extra_field(x.extra, "version"));
      w.fenced = extra_field(x.extra, "fenced") != "0";
      h.writes.push_back(w);
      a->last_write_ns = std::max(a->last_write_ns, w.invoke_ns);
      if (w.outcome == "refused" && !a->told_lost_ns) {
        a->told_lost_ns = x.t_client;
        a->told_how = "refused by the znode's check op";
      }
    } else if (x.kind == "lost") {
      if (!a->told_lost_ns) {
        a->told_lost_ns = x.t_client;
        a->told_how = x.extra;
      }
      if (!a->stop_ns) a->stop_ns = x.t_client;
    } else if (x.kind == "lost_cause") {
      if (a->lost_cause.empty()) a->lost_cause = x.extra;
    } else if (x.kind == "released") {
      if (!a->stop_ns) a->stop_ns = x.t_client;
    }
  }
  return h;
}

namespace {

std::string quoted(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20) o += ' ';
    else o += c;
  }
  return o + "\"";
}

// A flat JSON object's members (strings, integers, booleans): all a history line holds.
std::map<std::string, std::string> parse_flat(const std::string& line) {
  std::map<std::string, std::string> m;
  std::size_t i = 0;
  auto ws = [&] {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
  };
  auto str = [&] {
    if (line[i] != '"') throw std::runtime_error("expected a string");
    std::string s;
    for (++i; i < line.size() && line[i] != '"'; ++i) {
      if (line[i] == '\\' && i + 1 < line.size()) ++i;
      s += line[i];
    }
    if (i >= line.size()) throw std::runtime_error("unterminated string");
    ++i;
    return s;
  };
  ws();
  if (i >= line.size() || line[i] != '{') throw std::runtime_error("expected an object");
  ++i;
  for (;;) {
    ws();
    if (i < line.size() && line[i] == '}') break;
    std::string key = str();
    ws();
    if (i >= line.size() || line[i] != ':') throw std::runtime_error("expected ':'");
    ++i;
    ws();
    if (i < line.size() && line[i] == '"') {
      m[key] = str();
    } else {
      auto from = i;
      while (i < line.size() && line[i] != ',' && line[i] != '}') ++i;
      auto v = line.substr(from, i - from);
      while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
      m[key] = v;
    }
    ws();
    if (i < line.size() && line[i] == ',') {
      ++i;
      continue;
    }
    if (i < line.size() && line[i] == '}') break;
    throw std::runtime_error("expected ',' or '}'");
  }
  return m;
}

}  // namespace

void write_history(const std::string& file, const history& h) {
  std::ofstream out(file);
  auto& r = h.run;
  out << "{\"type\":\"run\",\"scenario\":" << quoted(r.scenario) << ",\"run\":" << r.run << ",\"seed\":" << r.seed
      << ",\"recipe\":" << quoted(r.recipe) << ",\"capacity\":" << r.capacity
      << ",\"max_local_handoffs\":" << r.max_local_handoffs << ",\"session_timeout_ns\":" << r.session_timeout_ns
      << ",\"lock_delay_ns\":" << r.lock_delay_ns << ",\"liveness_margin_ns\":" << r.liveness_margin_ns
      << ",\"heal_ns\":" << r.heal_ns << ",\"end_ns\":" << r.end_ns << ",\"mutant\":" << quoted(r.mutant) << "}\n";
  for (auto& a : h.acquires)
    out << "{\"type\":\"acquire\",\"id\":" << a.id << ",\"process\":" << quoted(a.process)
        << ",\"side\":" << quoted(a.side) << ",\"invoke_ns\":" << a.invoke_ns << ",\"complete_ns\":" << a.complete_ns
        << ",\"outcome\":" << quoted(a.outcome) << ",\"error\":" << quoted(a.error) << ",\"token\":" << a.token
        << ",\"node\":" << quoted(a.node) << ",\"stop_ns\":" << a.stop_ns << ",\"last_write_ns\":" << a.last_write_ns
        << ",\"told_lost_ns\":" << a.told_lost_ns << ",\"told_how\":" << quoted(a.told_how)
        << ",\"lost_cause\":" << quoted(a.lost_cause) << ",\"child_events\":" << a.child_events << "}\n";
  for (auto& w : h.writes)
    out << "{\"type\":\"write\",\"id\":" << w.id << ",\"acquire\":" << w.acquire << ",\"process\":" << quoted(w.process)
        << ",\"resource\":" << quoted(w.resource) << ",\"token\":" << w.token << ",\"invoke_ns\":" << w.invoke_ns
        << ",\"complete_ns\":" << w.complete_ns << ",\"outcome\":" << quoted(w.outcome)
        << ",\"error\":" << quoted(w.error) << ",\"read\":" << w.read << ",\"value\":" << w.value
        << ",\"version\":" << w.version << ",\"fenced\":" << (w.fenced ? "true" : "false") << "}\n";
  for (auto& p : h.pauses)
    out << "{\"type\":\"pause\",\"process\":" << quoted(p.process) << ",\"from_ns\":" << p.from_ns
        << ",\"to_ns\":" << p.to_ns << "}\n";
}

history read_history(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file);
  history h;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::map<std::string, std::string> m;
    try {
      m = parse_flat(line);
    } catch (const std::exception& e) {
      throw std::runtime_error(file + ":" + std::to_string(n) + ": " + e.what());
    }
    auto i = [&](const char* k, std::int64_t d = 0) { return m.count(k) ? num(m[k], d) : d; };
    auto s = [&](const char* k) { return m.count(k) ? m[k] : std::string(); };
    const std::string type = s("type");
    if (type == "run") {
      auto& r = h.run;
      r.scenario = s("scenario");
      r.run = int(i("run"));
      try {
        r.seed = std::stoull(s("seed"));
      } catch (...) {
        r.seed = 0;
      }
      r.recipe = s("recipe");
      r.capacity = int(i("capacity", 1));
      r.max_local_handoffs = int(i("max_local_handoffs"));
      r.session_timeout_ns = i("session_timeout_ns");
      r.lock_delay_ns = i("lock_delay_ns");
      r.liveness_margin_ns = i("liveness_margin_ns", r.liveness_margin_ns);
      r.heal_ns = i("heal_ns");
      r.end_ns = i("end_ns");
      r.mutant = s("mutant");
    } else if (type == "acquire") {
      h_acquire a;
      a.id = int(i("id"));
      a.process = s("process");
      a.side = s("side");
      a.invoke_ns = i("invoke_ns");
      a.complete_ns = i("complete_ns");
      a.outcome = s("outcome");
      a.error = s("error");
      a.token = i("token");
      a.node = s("node");
      a.stop_ns = i("stop_ns");
      a.last_write_ns = i("last_write_ns");
      a.told_lost_ns = i("told_lost_ns");
      a.told_how = s("told_how");
      a.lost_cause = m.count("lost_cause") ? s("lost_cause") : lost_cause_not_recorded;
      a.child_events = i("child_events", -1);
      h.acquires.push_back(a);
    } else if (type == "write") {
      h_write w;
      w.id = int(i("id"));
      w.acquire = int(i("acquire"));
      w.process = s("process");
      w.resource = s("resource");
      w.token = i("token");
      w.invoke_ns = i("invoke_ns");
      w.complete_ns = i("complete_ns");
      w.outcome = s("outcome");
      w.error = s("error");
      w.read = i("read", -1);
      w.value = i("value", -1);
      w.version = i("version", -1);
      w.fenced = s("fenced") != "false";
      h.writes.push_back(w);
    } else if (type == "pause") {
      h.pauses.push_back({s("process"), i("from_ns"), i("to_ns")});
    } else {
      throw std::runtime_error(file + ":" + std::to_string(n) + ": unknown type '" + type + "'");
    }
  }
  return h;
}

}  // namespace zklock::fault
