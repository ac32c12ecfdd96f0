// The session's window of outstanding requests, without I/O: at most `limit` requests are with
// the C client (sent, not yet answered); the rest wait here, in the order they were made. A
// listing of a dir that is still waiting here serves the later listings of the same dir made
// before it leaves (they coalesce, up to `limit` askers, at least 2, on one listing): the joined listing
// moves to the place of the newest one, so it is sent after every request made before any of
// its askers (a contender's listing is still sent after its own create: ZooKeeper answers a
// session's requests in order). An earlier asker then sees the state after requests made
// after its own (a state between its request and its answer, as a read may). The engine
// (engine/requests.cpp) keeps one of these; `T` is what it sends.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace zklock::detail {

enum class request_class {
  other,
  listing,  ///< get_children without a watch: may coalesce
};

template <class T>
class request_window {
 public:
  /// `max_askers`: the most askers one listing serves (0: the window's size, at least 2).
  explicit request_window(std::size_t limit, std::size_t max_askers = 0)
      : limit_(limit == 0 ? 1 : limit), max_askers_(max_askers ? max_askers : std::max<std::size_t>(limit_, 2)) {}

  std::size_t limit() const noexcept { return limit_; }
  /// Sent and not answered yet.
  std::size_t outstanding() const noexcept { return outstanding_; }
  /// Waiting here.
  std::size_t queued() const noexcept { return queue_.size(); }
  /// The most that were ever outstanding at once.
  std::size_t max_outstanding() const noexcept { return max_outstanding_; }
  /// The most that ever waited here at once.
  std::size_t max_queued() const noexcept { return max_queued_; }
  /// Listings that joined one already waiting.
  std::uint64_t coalesced() const noexcept { return coalesced_; }

  /// A request may go now: nothing waits before it and the window has room. Counts it
  /// outstanding when it does.
  bool try_send() noexcept {
    if (!queue_.empty() || outstanding_ >= limit_) return false;
    note_sent();
    return true;
  }

  /// A listing of `path` that waits here and may take one more asker, moved to the back (the
  /// caller adds its asker to it); nullptr when none (the caller pushes its own). Moving it
  /// back keeps it after every request made before the new asker.
  T* join_listing(const std::string& path) {
    auto it = listings_.find(path);
    if (it == listings_.end()) return nullptr;
    auto e = it->second;
    queue_.splice(queue_.end(), queue_, e);
    ++coalesced_;
    // Full: it stops moving back, so a stream of askers cannot hold it back for ever.
    if (++e->askers >= max_askers_) listings_.erase(it);
    return &e->payload;
  }

  /// Queues a request that could not go now.
  void push(request_class cls, std::string path, T payload) {
    queue_.push_back(entry{cls, path, std::move(payload)});
    if (cls == request_class::listing && max_askers_ > 1) listings_[std::move(path)] = std::prev(queue_.end());
    if (queue_.size() > max_queued_) max_queued_ = queue_.size();
  }

  /// A sent request was answered (or will never be: the C client refused it).
  void on_done() noexcept {
    if (outstanding_ > 0) --outstanding_;
  }

  /// The next waiting request when the window has room, counted outstanding (the caller calls
  /// on_done if it does not send it after all).
  std::optional<T> next() {
    if (queue_.empty() || outstanding_ >= limit_) return std::nullopt;
    auto& e = queue_.front();
    if (e.cls == request_class::listing) {
      auto it = listings_.find(e.path);
      if (it != listings_.end() && it->second == queue_.begin()) listings_.erase(it);
    }
    T payload = std::move(e.payload);
    queue_.pop_front();
    note_sent();
    return payload;
  }

  /// Everything waiting, in order, taken out (the session ended: the caller fails them).
  std::vector<T> take_all() {
    std::vector<T> all;
    all.reserve(queue_.size());
    for (auto& e : queue_) all.push_back(std::move(e.payload));
    queue_.clear();
    listings_.clear();
    return all;
  }

  /// The C client failed everything outstanding at once (its handle closed).
  void forget_outstanding() noexcept { outstanding_ = 0; }

 private:
  struct entry {
    request_class cls;
    std::string path;
    T payload;
    std::size_t askers = 1;
  };
  void note_sent() noexcept {
    ++outstanding_;
    if (outstanding_ > max_outstanding_) max_outstanding_ = outstanding_;
  }

  std::size_t limit_, max_askers_;
  std::size_t outstanding_ = 0, max_outstanding_ = 0, max_queued_ = 0;
  std::uint64_t coalesced_ = 0;
  std::list<entry> queue_;
  // The listings that may still take askers, by dir (the newest of each).
  std::unordered_map<std::string, typename std::list<entry>::iterator> listings_;
};

}  // namespace zklock::detail
