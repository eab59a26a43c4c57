#include "exec/slot_way.hpp"

#include <algorithm>

namespace toroid::exec {

double SlotWay::recent_best() const noexcept {
  return *std::min_element(recent_, recent_ + recent_count_);
}

void SlotWay::record(bool streamed, double ns_per_byte) noexcept {
  if (streamed == streaming_) {
    recent_[recent_at_] = ns_per_byte;
    recent_at_ = (recent_at_ + 1) % kRecent;
    recent_count_ = std::min(recent_count_ + 1, kRecent);
    return;
  }
  if (recent_count_ < kRecent / 2) return;  // not enough of the current way to compare with
  const double current = recent_best();
  const double cached = streaming_ ? ns_per_byte : current;
  const double streaming = streaming_ ? current : ns_per_byte;
  const bool flip = streaming_ ? cached < kToCached * streaming : cached > kToStreaming * streaming;
  if (!flip) return;
  streaming_ = !streaming_;
  ++switches_;
  recent_[0] = ns_per_byte;  // the explored fill is the new way's first
  recent_count_ = recent_at_ = 1;
}

}  // namespace toroid::exec
