#include "sansio/multi_fsm.hpp"

namespace zklock::detail {

multi_fsm::actions multi_fsm::start() {
  if (phase_ != phase::idle) return {};
  if (count_ == 0) {
    phase_ = phase::done;
    return {sansio::request::done(errc::path_empty)};
  }
  phase_ = phase::acquiring;
  return {sansio::request::outcome(multi_outcome::acquire, 0)};
}

multi_fsm::actions multi_fsm::on_acquired(error_code ec) {
  if (phase_ != phase::acquiring) return {};
  if (!ec) ++taken_;  // held now, even if a cancellation came first: it is given back below
  if (!ec && cancelled_) ec = cancelled_;
  if (ec) return roll_back(ec);
  if (taken_ == count_) {
    phase_ = phase::done;
    return {sansio::request::done({})};
  }
  return {sansio::request::outcome(multi_outcome::acquire, taken_)};
}

multi_fsm::actions multi_fsm::cancel(error_code reason) {
  if (phase_ == phase::acquiring && !cancelled_) cancelled_ = reason;
  return {};
}

multi_fsm::actions multi_fsm::roll_back(error_code ec) {
  result_ = ec;
  if (taken_ == 0) {
    phase_ = phase::done;
    return {sansio::request::done(ec)};
  }
  phase_ = phase::rolling_back;
  releases_left_ = taken_;
  actions out;
  for (std::size_t i = 0; i < taken_; ++i) out.push_back(sansio::request::outcome(multi_outcome::release, i));
  return out;
}

multi_fsm::actions multi_fsm::on_released(std::size_t index) {
  if (phase_ != phase::rolling_back || index >= taken_ || releases_left_ == 0) return {};
  if (--releases_left_ > 0) return {};
  taken_ = 0;
  phase_ = phase::done;
  return {sansio::request::done(result_)};
}

}  // namespace zklock::detail
