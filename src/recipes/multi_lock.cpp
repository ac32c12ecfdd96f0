#include "lock/chained_acquire.hpp"
#include "lock/lock_dir.hpp"
#include "sansio/multi_fsm.hpp"

#include <zklock/lock_guard.hpp>
#include <zklock/multi_lock.hpp>

namespace zklock::detail {

// multi_lock: one acquire after another, in the order given (sorted by path); all or nothing.

void release_all(std::vector<release_ticket> tickets, asio::any_io_executor ex, void_handler h) {
  if (tickets.empty()) return post_completion(ex, std::move(h), error_code(errc::already_released));
  struct state {
    void_handler h;
    asio::any_io_executor ex;
    std::size_t left;
    error_code ec;
  };
  auto st = std::make_shared<state>(state{std::move(h), ex, tickets.size(), {}});
  for (auto& t : tickets) {
    t.launch(void_handler([st](error_code ec) {
      auto rank = [](const error_code& e) {
        return !e ? 0 : e == errc::lock_lost ? 3 : e == errc::release_pending ? 2 : 1;
      };
      if (rank(ec) > rank(st->ec)) st->ec = ec;
      if (--st->left == 0) post_completion(st->ex, std::move(st->h), st->ec);
    }));
  }
}

namespace {
// The multi_lock operation: carries out multi_fsm's outcomes (src/sansio/multi_fsm.hpp).
class multi_acquire : public chained_acquire<multi_acquire, multi_guard> {
 public:
  multi_acquire(std::vector<multi_lock_item> items, pending<void(error_code, multi_guard)>::ptr op,
                std::chrono::steady_clock::duration timeout)
      : chained_acquire(std::move(op), timeout), items_(std::move(items)), fsm_(items_.size()) {}

  void start() {
    forward_cancellation();
    run(fsm_.start());
  }

 private:
  void run(const multi_fsm::actions& actions) {
    for (const auto& a : actions) {
      if (a.type == sansio::request::complete) {
        if (a.ec) {
          taken_.clear();
          op_->complete(a.ec, multi_guard{});
        } else {
          op_->complete({}, multi_guard(std::move(taken_)));
        }
        continue;
      }
      const auto i = static_cast<std::size_t>(a.id);
      switch (a.outcome_kind<multi_outcome>()) {
        case multi_outcome::acquire:
          step(items_[i].dir, lock_mode::wait, items_[i].kind, &multi_acquire::on_one);
          break;
        case multi_outcome::release:
          taken_[i].async_release([self = shared_from_this(), i](error_code) { self->run(self->fsm_.on_released(i)); });
          break;
      }
    }
  }

  void on_one(error_code ec, lock_guard g) {
    if (cancelled_) run(fsm_.cancel(asio::error::operation_aborted));
    if (!ec) taken_.push_back(std::move(g));
    run(fsm_.on_acquired(ec));
  }

  std::vector<multi_lock_item> items_;
  multi_fsm fsm_;
  std::vector<lock_guard> taken_;
};
}  // namespace

void start_multi(std::vector<multi_lock_item> items, multi_handler_t h, std::chrono::steady_clock::duration timeout,
                 asio::any_io_executor ex) {
  auto run_ex = ex;
  on_executor(run_ex, std::move(h), [items = std::move(items), timeout, ex = std::move(ex)](auto h) mutable {
    auto op = pending<void(error_code, multi_guard)>::make(std::move(h), std::move(ex));
    for (auto& i : items)
      if (i.dir->path_error) return op->complete(i.dir->path_error, multi_guard{});
    std::make_shared<multi_acquire>(std::move(items), std::move(op), timeout)->start();  // empty: path_empty
  });
}

}  // namespace zklock::detail
