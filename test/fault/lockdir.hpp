// The lock dir seen from outside the clients, by sessions of the harness's own (direct to the
// ensemble): what a run left behind (nodes, watches), and the foreign-write nemesis's writes.
#pragma once

#include "watches.hpp"
#include "zk_server.hpp"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace zklock::fault {

struct leftovers {
  int nodes = -1;
  std::vector<std::string> node_names;
  int watches = 0;
  std::vector<watches_note> watch_notes;
};

// Children of `dir` (-1 when it could not be read); `names`: "name owner=0x<session>".
int count_nodes(const std::string& connect, const std::string& dir, std::vector<std::string>* names);

// Every member's counts of its watches (watches.hpp: wchs and mntr; "" from a member that does
// not answer), in member order.
std::vector<member_watch_answers> ask_watches(const zklock::test::zk_ensemble& ens);

// The watches the run on the lock dir `dir` left on the members (watches_left, summed):
// `before`, ask_watches() before the run's clients started. `silent`: the members that did not
// say their counts (no answer, or "not currently serving requests"), each counted as a watch.
int count_watches(const zklock::test::zk_ensemble& ens, const std::string& dir,
                  const std::vector<member_watch_answers>& before, std::vector<watches_note>* notes,
                  int* silent = nullptr);

// Another client writing to lock nodes: one session lists each dir in `dirs`
// and sets the data of every child (the holder's and the waiters' nodes), `rounds` times,
// `gap_ms` apart. The data cycles through Curator's revocation request "__REVOKE__", zklock's
// own markers, empty and random bytes. Returns the setData calls that succeeded; `log` gets one
// line per write ("<node> <- <what>").
int write_to_lock_nodes(const std::string& connect, const std::vector<std::string>& dirs, int rounds, int gap_ms,
                        std::mt19937_64& rng, std::vector<std::string>* log);

// An operator's `delete` (operator-delete): one session of the harness reads `path`'s owner
// ("0x<session id>", as the workers say it in "hello") and deletes it. `at`: CLOCK_MONOTONIC ns
// right before the delete was sent (nobody can be granted on its account earlier). Returns ""
// or what failed.
std::string delete_node(const std::string& connect, const std::string& path, std::string* owner, std::int64_t* at);

}  // namespace zklock::fault
