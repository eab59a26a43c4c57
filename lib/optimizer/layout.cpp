#include "optimizer/layout.hpp"

#include <algorithm>
#include <numeric>

namespace toroid::optimizer {
namespace {

// The tensor runs inside flat range [begin, end), with offsets relative to `base`. `starts[i]`
// is where tensor order[i] begins in the flat vector.
std::vector<Piece> pieces_in(std::span<const std::size_t> sizes, std::span<const std::size_t> order,
                             std::span<const std::size_t> starts, std::size_t begin,
                             std::size_t end, std::size_t base) {
  std::vector<Piece> out;
  if (begin >= end) return out;
  // First tensor whose range ends after `begin`.
  std::size_t i = static_cast<std::size_t>(std::upper_bound(starts.begin(), starts.end(), begin) -
                                           starts.begin()) -
                  1;
  for (; i < order.size() && starts[i] < end; ++i) {
    const std::size_t t = order[i];
    const std::size_t lo = std::max(begin, starts[i]);
    const std::size_t hi = std::min(end, starts[i] + sizes[t]);
    if (lo < hi) out.push_back({t, lo - starts[i], lo - base, hi - lo});
  }
  return out;
}

}  // namespace

std::vector<std::size_t> reverse_order(std::size_t tensors) {
  std::vector<std::size_t> order(tensors);
  std::iota(order.rbegin(), order.rend(), std::size_t{0});
  return order;
}

Layout make_layout(std::span<const std::size_t> sizes, std::span<const std::size_t> order,
                   std::size_t first_bucket_elements, std::size_t bucket_elements, int parts,
                   int part) {
  const auto p = static_cast<std::size_t>(parts);
  const auto me = static_cast<std::size_t>(part);
  bucket_elements = std::max(p, bucket_elements / p * p);
  first_bucket_elements = std::clamp(first_bucket_elements / p * p, p, bucket_elements);
  Layout layout;
  if (order.empty()) {
    layout.order.resize(sizes.size());
    std::iota(layout.order.begin(), layout.order.end(), std::size_t{0});
  } else {
    layout.order.assign(order.begin(), order.end());
  }
  std::vector<std::size_t> starts(sizes.size());
  for (std::size_t i = 0; i < layout.order.size(); ++i)
    starts[i] = layout.total, layout.total += sizes[layout.order[i]];
  for (std::size_t begin = 0; begin < layout.total;) {
    Bucket b;
    b.flat_begin = begin;
    b.length = std::min(layout.buckets.empty() ? first_bucket_elements : bucket_elements,
                        layout.total - begin);
    b.padded = (b.length + p - 1) / p * p;
    b.padded_begin = layout.padded_total;
    b.shard = b.padded / p;
    b.own_begin = me * b.shard;
    b.state_offset = layout.state_elements;
    b.pieces = pieces_in(sizes, layout.order, starts, begin, begin + b.length, begin);
    const std::size_t own_end = std::min(b.own_begin + b.shard, b.length);
    b.own = pieces_in(sizes, layout.order, starts, begin + b.own_begin,
                      begin + std::max(b.own_begin, own_end), begin + b.own_begin);
    layout.padded_total += b.padded;
    layout.state_elements += b.shard;
    layout.max_padded = std::max(layout.max_padded, b.padded);
    layout.max_shard = std::max(layout.max_shard, b.shard);
    begin += b.length;
    layout.buckets.push_back(std::move(b));
  }
  return layout;
}

}  // namespace toroid::optimizer
