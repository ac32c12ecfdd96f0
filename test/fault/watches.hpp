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

// The data watches a member holds (wchs's total) and its child watches (mntr's zk_watch_count,
// data and child watches, minus that total): -1 when it did not say.
int data_watches(const member_watch_answers& a);
int child_watches(const member_watch_answers& a);

// What a member said of some watches left: how many, and a line ("server <member>: ...") that
// names their kind, path if known, and the session or the sessions that may hold them.
struct watches_note {
  int count = 0;
  std::string what;
};

// The watches a run left that member `member` holds now: `before`, its answers before the run's
// clients started; `now`, once they are idle. Data watches on `dir` or below it (wchp: path and
// session); child watches anywhere on the member, more than before (no four-letter word lists
// them: mntr's zk_watch_count counts data and child watches, wchs's total the data watches);
// a member that does not say its counts, one. Appends a note a data watch, a note for the
// child watches.
int watches_left(const member_watch_answers& before, const member_watch_answers& now, int member,
                 const std::string& dir, std::vector<watches_note>* notes);

}  // namespace zklock::fault
