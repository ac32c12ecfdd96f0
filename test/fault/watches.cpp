#include "watches.hpp"

#include <sstream>

namespace zklock::fault {

int watches_left(const member_watch_answers& /*before*/, const member_watch_answers& now, int member,
                 const std::string& dir, std::vector<std::string>* lines) {
  int n = 0;
  std::istringstream in(now.wchp);
  bool ours = false;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '/') {
      ours = line == dir || line.rfind(dir + "/", 0) == 0;
    } else if (ours && line.find("0x") != std::string::npos) {
      ++n;
      if (lines) lines->push_back("server " + std::to_string(member) + ": " + line);
    }
  }
  return n;
}

}  // namespace zklock::fault
