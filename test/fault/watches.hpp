// The watches a run left on the ensemble, from its members' four-letter words (no I/O:
// lockdir.cpp asks the servers, checker_test.cpp feeds answers captured from one).
#pragma once

#include <string>
#include <vector>

namespace zklock::fault {

// One member's answers to the four-letter words that speak of watches.
struct member_watch_answers {
  std::string wchp;  // path -> sessions
  std::string wchs;  // "N connections watching M paths\nTotal watches:W"
  std::string mntr;  // "zk_watch_count\tW" among the rest
  std::string cons;  // one line a connection, "sid=0x..." for those with a session
};

// The watches on `dir` or below it that member `member` holds now: `before`, its answers before
// the run's clients started; `now`, once they are idle. Each one left appends a line to `lines`
// ("server <member>: ...") naming the sessions that may hold it.
int watches_left(const member_watch_answers& before, const member_watch_answers& now, int member,
                 const std::string& dir, std::vector<std::string>* lines);

}  // namespace zklock::fault
