#include "watches.hpp"

#include <algorithm>
#include <sstream>

namespace zklock::fault {

namespace {

// The number after `key` at the start of a line ("Total watches:3", "zk_watch_count\t3"), or -1.
int number_after(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) {
      try {
        return std::stoi(line.substr(key.size()));
      } catch (const std::exception&) {
        return -1;
      }
    }
  return -1;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string count_of(int n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "es");
}

}  // namespace

int data_watches(const member_watch_answers& a) { return number_after(a.wchs, "Total watches:"); }

int child_watches(const member_watch_answers& a) {
  const int all = number_after(a.mntr, "zk_watch_count\t");
  const int data = data_watches(a);
  return all < 0 || data < 0 ? -1 : all - data;
}

int watches_left(const member_watch_answers& before, const member_watch_answers& now, int member,
                 const std::string& dir, std::vector<watches_note>* notes) {
  const std::string server = "server " + std::to_string(member) + ": ";
  int n = 0;
  // data watches: wchp names their paths and sessions; the lock dir is the run's own
  std::istringstream in(now.wchp);
  std::string path;
  bool ours = false;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '/') {
      path = line;
      ours = line == dir || line.rfind(dir + "/", 0) == 0;
    } else if (auto at = line.find("0x"); ours && at != std::string::npos) {
      ++n;
      if (notes) notes->push_back({1, server + "data watch on " + path + " by " + line.substr(at)});
    }
  }
  // child watches: no four-letter word names their paths or sessions; whose: one of the
  // sessions connected to this member (cons)
  const int children = child_watches(now);
  if (children < 0) {
    ++n;
    if (notes)
      notes->push_back({1, server + "no watch count (mntr: '" + first_line(now.mntr) + "', wchs: '" +
                               first_line(now.wchs) + "')"});
    return n;
  }
  const int children_before = std::max(child_watches(before), 0);
  if (children > children_before) {
    const int left = children - children_before;
    n += left;
    if (notes) {
      std::string sessions;
      std::istringstream cons(now.cons);
      for (std::string line; std::getline(cons, line);)
        if (auto at = line.find("sid=0x"); at != std::string::npos)
          sessions += " " + line.substr(at + 4, line.find_first_of(",)", at) - at - 4);
      notes->push_back({left, server + count_of(left, "child watch") + " (mntr's zk_watch_count " +
                                  std::to_string(number_after(now.mntr, "zk_watch_count\t")) + " - wchs's " +
                                  count_of(number_after(now.wchs, "Total watches:"), "data watch") + ", " +
                                  count_of(children_before, "child watch") +
                                  " before the run) by one of the sessions there:" + (sessions.empty() ? " none" : sessions)});
    }
  }
  return n;
}

}  // namespace zklock::fault
