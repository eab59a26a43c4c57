#include "exec/slot_fill.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/reduce.hpp"
#include "toroid/mpi_helpers.hpp"

namespace toroid::exec {
namespace {

constexpr int kTag = 0x51f;

// Rank 0 (receiver) and `sender` take turns: rank 0 says "go", the sender fills the area one
// way, timing that, and sends the time; rank 0 times its reduction of the area into a vector
// of its own. A way's cost is its fill and its reduction together (a fill of lines the
// receiver still holds takes them back from its cache first, which cores far apart also feel).
// Rounds alternate the ways; the first round of each is not timed (it takes the pages' first
// touch).
void time_pair(MPI_Comm node, int local, int sender, std::byte* area, SlotFillProbe::Way best[2]) {
  const std::size_t n = kProbeBytes / sizeof(float);
  const kernels::ReduceFn reduce = kernels::reduce_fn(DataType::f32, ReduceOp::sum);
  const kernels::CopyFn stream = kernels::copy_stream_fn();
  std::vector<float> own(n, 1.0f), out(n, 0.0f);
  auto since = [](std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  };
  double fill_us = 0;
  for (int round = 0; round < 2 * (kProbeRounds + 1); ++round) {
    const int way = round % 2;  // 0 cached, 1 streaming
    if (local == sender) {
      mpi_check(MPI_Recv(&fill_us, 1, MPI_DOUBLE, 0, kTag, node, MPI_STATUS_IGNORE), "MPI_Recv");
      const auto t0 = std::chrono::steady_clock::now();
      if (way == 0)
        std::memcpy(area, own.data(), kProbeBytes);
      else
        stream(area, own.data(), kProbeBytes);
      fill_us = since(t0);
      mpi_check(MPI_Send(&fill_us, 1, MPI_DOUBLE, 0, kTag, node), "MPI_Send");
    } else {
      mpi_check(MPI_Send(&fill_us, 1, MPI_DOUBLE, sender, kTag, node), "MPI_Send");
      mpi_check(MPI_Recv(&fill_us, 1, MPI_DOUBLE, sender, kTag, node, MPI_STATUS_IGNORE),
                "MPI_Recv");
      const auto t0 = std::chrono::steady_clock::now();
      reduce(out.data(), own.data(), area, n);
      const double read_us = since(t0);
      if (round >= 2 && fill_us + read_us < best[way].total_us()) best[way] = {fill_us, read_us};
    }
  }
}

}  // namespace

const char* to_string(SlotFill f) noexcept {
  return f == SlotFill::streaming ? "streaming" : "cached";
}

SlotFillProbe measure_slot_fill(MPI_Comm node, int local, int local_count,
                                const std::function<std::byte*(int sender)>& area) {
  SlotFillProbe p;
  p.measured = true;
  const int senders = std::min(local_count - 1, kProbeSenders);
  for (int s = 1; s <= senders; ++s) {
    if (local != 0 && local != s) continue;
    constexpr double kNone = std::numeric_limits<double>::infinity();
    SlotFillProbe::Way best[2] = {{kNone, 0}, {kNone, 0}};  // cached, streaming
    time_pair(node, local, s, area(s), best);
    if (local != 0) continue;
    if (s == 1) p.cached = best[0], p.streaming = best[1];
    ++p.senders;
    if (best[1].total_us() * kMargin < best[0].total_us()) ++p.senders_streaming;
  }
  double result[6] = {p.cached.fill_us,
                      p.cached.read_us,
                      p.streaming.fill_us,
                      p.streaming.read_us,
                      static_cast<double>(p.senders),
                      static_cast<double>(p.senders_streaming)};
  mpi_check(MPI_Bcast(result, 6, MPI_DOUBLE, 0, node), "MPI_Bcast");
  p.cached = {result[0], result[1]}, p.streaming = {result[2], result[3]};
  p.senders = static_cast<int>(result[4]), p.senders_streaming = static_cast<int>(result[5]);
  return p;
}

std::string describe(const SlotFillProbe& p) {
  // With several senders the numbers are the first one's and the vote says how the rest went
  // (a header that read "cached" beside one sender's faster streaming looked like a wrong call).
  const std::string who = p.senders > 1
                              ? fmt::format(" from {} senders, {} faster streamed; the first's",
                                            p.senders, p.senders_streaming)
                              : std::string();
  return fmt::format(
      "measured per {} KiB{}, fill + read: cached {:.1f} + {:.1f} us, streaming {:.1f} + {:.1f} "
      "us",
      kProbeBytes >> 10, who, p.cached.fill_us, p.cached.read_us, p.streaming.fill_us,
      p.streaming.read_us);
}

SlotFill slot_fill_of(const SlotFillProbe& p) noexcept {
  return p.measured && 2 * p.senders_streaming > p.senders ? SlotFill::streaming : SlotFill::cached;
}

}  // namespace toroid::exec
