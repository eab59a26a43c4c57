#include "optimizer/layout.hpp"

#include <algorithm>

namespace toroid::optimizer {
namespace {

// The tensor runs inside flat range [begin, end), with offsets relative to `base`.
std::vector<Piece> pieces_in(std::span<const std::size_t> sizes,
                             std::span<const std::size_t> starts, std::size_t begin,
                             std::size_t end, std::size_t base) {
  std::vector<Piece> out;
  if (begin >= end) return out;
  // First tensor whose range ends after `begin`.
  std::size_t t = static_cast<std::size_t>(
      std::upper_bound(starts.begin(), starts.end(), begin) - starts.begin()) - 1;
  for (; t < sizes.size() && starts[t] < end; ++t) {
    const std::size_t lo = std::max(begin, starts[t]);
    const std::size_t hi = std::min(end, starts[t] + sizes[t]);
    if (lo < hi) out.push_back({t, lo - starts[t], lo - base, hi - lo});
  }
  return out;
}

}  // namespace

Layout make_layout(std::span<const std::size_t> sizes, std::size_t bucket_elements, int parts,
                   int part) {
  const auto p = static_cast<std::size_t>(parts);
  const auto me = static_cast<std::size_t>(part);
  bucket_elements = std::max(p, bucket_elements / p * p);
  std::vector<std::size_t> starts(sizes.size());
  Layout layout;
  for (std::size_t t = 0; t < sizes.size(); ++t) starts[t] = layout.total, layout.total += sizes[t];
  for (std::size_t begin = 0; begin < layout.total; begin += bucket_elements) {
    Bucket b;
    b.flat_begin = begin;
    b.length = std::min(bucket_elements, layout.total - begin);
    b.padded = (b.length + p - 1) / p * p;
    b.shard = b.padded / p;
    b.own_begin = me * b.shard;
    b.state_offset = layout.state_elements;
    b.pieces = pieces_in(sizes, starts, begin, begin + b.length, begin);
    const std::size_t own_end = std::min(b.own_begin + b.shard, b.length);
    b.own = pieces_in(sizes, starts, begin + b.own_begin, begin + std::max(b.own_begin, own_end),
                      begin + b.own_begin);
    layout.state_elements += b.shard;
    layout.max_padded = std::max(layout.max_padded, b.padded);
    layout.max_shard = std::max(layout.max_shard, b.shard);
    layout.buckets.push_back(std::move(b));
  }
  return layout;
}

}  // namespace toroid::optimizer
