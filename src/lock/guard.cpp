// lock_guard's members and the release ticket: what a user's guard does with its hold.
#include "lock/hold.hpp"

#include <zklock/lock_guard.hpp>

#include <boost/asio/post.hpp>

namespace zklock {

namespace detail {

namespace {
// Gives back one hold from any thread: only posts to the session's executor.
void release_in_background(std::shared_ptr<hold> h) {
  auto ex = h->session()->executor();
  asio::post(ex, [h = std::move(h)] { h->release_one(nullptr); });
}
}  // namespace

release_ticket::~release_ticket() {
  if (hold_) release_in_background(std::move(hold_));
}

void release_ticket::launch(void_handler h) {
  if (!hold_) return post_completion(ex_, std::move(h), error_code(errc::already_released));
  auto held = std::exchange(hold_, nullptr);
  auto ex = held->session()->executor();
  on_executor(ex, std::move(h), [held = std::move(held)](auto h) mutable { held->release_one(std::move(h)); });
}

void wait_lost(const std::shared_ptr<hold>& h, void_handler handler) {
  on_open_hold(h, std::move(handler), [h](auto op) { h->wait_lost(std::move(op)); });
}

void wait_deadline(const std::shared_ptr<hold>& h, std::chrono::steady_clock::duration lead, void_handler handler) {
  on_open_hold(h, std::move(handler), [h, lead](auto op) {
    hook_cancel(*op, std::weak_ptr<hold>(h), [raw = op.get()](hold& self, asio::cancellation_type) {
      self.forget_deadline_waiter(raw);
      raw->abort();
    });
    h->wait_deadline(lead, std::move(op));
  });
}

// (A revocation wait on a lost hold says lock_lost, without its cause.)
void wait_revoked(const std::shared_ptr<hold>& h, void_handler handler) {
  on_open_hold(h, std::move(handler), [h](auto op) { h->wait_revoked(std::move(op)); }, errc::lock_lost);
}

}  // namespace detail

lock_guard& lock_guard::operator=(lock_guard&& other) noexcept {
  if (this != &other) {
    if (hold_ && !released_) detail::release_in_background(std::move(hold_));
    hold_ = std::move(other.hold_);
    ex_ = other.ex_;
    released_ = std::exchange(other.released_, false);
  }
  return *this;
}

lock_guard::~lock_guard() {
  if (hold_ && !released_) detail::release_in_background(std::move(hold_));
}

detail::release_ticket lock_guard::take_release_ticket() noexcept {
  bool was_released = std::exchange(released_, true);
  return detail::release_ticket(was_released ? nullptr : hold_, ex_);
}

bool lock_guard::owns_lock() const noexcept { return hold_ && !released_ && hold_->owns(); }

lock_status lock_guard::status() const noexcept {
  if (!hold_) return lock_status::released;
  // A release the server refused for good left our node in place: not a clean release.
  if (released_) return hold_->machine().release_failure() ? lock_status::lost : lock_status::released;
  return hold_->status();
}

const std::string& lock_guard::node_path() const noexcept {
  static const std::string empty;
  return hold_ ? hold_->node() : empty;
}

std::int64_t lock_guard::fencing_token() const noexcept { return hold_ ? hold_->fencing_token() : 0; }

int lock_guard::hold_count() const noexcept { return hold_ ? hold_->count() : 0; }

lock_kind lock_guard::kind() const noexcept { return hold_ ? hold_->kind() : lock_kind::exclusive; }

std::chrono::steady_clock::time_point lock_guard::valid_until() const noexcept {
  if (!owns_lock()) return std::chrono::steady_clock::time_point::min();
  return hold_->session()->valid_until();
}

asio::cancellation_slot lock_guard::lost_slot() const noexcept {
  return hold_ ? hold_->lost_slot() : asio::cancellation_slot();
}

}  // namespace zklock
