// The fenced resource's journal (resource.hpp): one record per message a client sent, with the
// resource's verdict on writes. The checker (checker.hpp) reads only this, so it can be fed a
// synthetic journal in a unit test (checker_test.cpp).
#pragma once

#include "resource_client.hpp"

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace zklock::fault {

struct record {
  std::string kind, who;
  std::int64_t token = 0;
  std::int64_t t_client = 0, t_recv = 0;
  std::string extra;
  int verdict = 0;  // writes: 1 accepted, -1 rejected; 0 not a write
};

inline bool is_write(const std::string& k) { return k == "grant" || k == "write" || k == "end"; }

// The side a section holds, from its grant ("... side=read"); peers that do not say are exclusive.
inline std::string side_of_grant(const std::string& extra) {
  auto at = extra.find("side=");
  if (at == std::string::npos) return "exclusive";
  return extra.substr(at + 5, extra.find(' ', at) == std::string::npos ? std::string::npos : extra.find(' ', at) - at - 5);
}
inline bool is_reader(const std::string& side) { return side == "read"; }

// "key=value" in a record's extra text ("" when absent): "deadline=120 'timed out'" -> "120".
inline std::string extra_field(const std::string& extra, const std::string& key) {
  for (std::size_t at = 0; (at = extra.find(key + "=", at)) != std::string::npos; ++at)
    if (at == 0 || extra[at - 1] == ' ') {
      const auto from = at + key.size() + 1;
      const auto to = extra.find(' ', from);
      return extra.substr(from, to == std::string::npos ? std::string::npos : to - from);
    }
  return {};
}

// A worker process may run several contenders (--sessions N: "zklock-0.1", "zklock-0.2"): the
// process is the name before the dot.
inline std::string process_of(const std::string& who) { return who.substr(0, who.find('.')); }

// journal.tsv: t_recv, t_client, kind, who, token, verdict, extra (tab-separated, one a line)
inline void write_journal(const std::string& file, const std::vector<record>& j) {
  std::ofstream out(file);
  for (auto& x : j)
    out << x.t_recv << "\t" << x.t_client << "\t" << x.kind << "\t" << x.who << "\t" << x.token << "\t" << x.verdict
        << "\t" << x.extra << "\n";
}

}  // namespace zklock::fault
