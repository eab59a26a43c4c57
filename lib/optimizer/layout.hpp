// Where every element of the flattened parameters lives: buckets, padding, shards.
//
//   order:   tensors in bucket order (e.g. 2, 1, 0: last layer first, as gradients become ready)
//   flat:    | tensor 2 ................ | tensor 1 .... | tensor 0 ......... |
//   bucket:  |<- bucket 0 ->|<--------- bucket 1 (bucket_elements) --------->|<- bucket 2 ->|pad|
//   shards:  |p0 |p1 |p2 |p3 |  part 0  |  part 1  |  part 2  |  part 3  |     |p0 |p1 |p2 |p3 |
//
// Terms: the *flat* vector is the tensors concatenated in bucket order. A *bucket* is a run of
// at most `bucket_elements` flat elements (the first at most `first_bucket_elements`, so that
// communication can start early), reduced and gathered with one collective; its *padded*
// length is the next multiple of the part count, so every *shard* (a part's share of a bucket)
// has the same length. A *piece* is the run of one tensor inside a bucket or a shard; a tensor
// may straddle buckets. Padding belongs to no tensor: it is zero in every gradient, never counts
// in a norm, and its state stays zero.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace toroid::optimizer {

struct Piece {
  std::size_t tensor = 0;         // parameter index (registration order)
  std::size_t tensor_offset = 0;  // first element inside the tensor
  std::size_t offset = 0;         // first element inside the bucket (or the shard, for `own`)
  std::size_t count = 0;
};

struct Bucket {
  std::size_t flat_begin = 0;    // first flat element
  std::size_t length = 0;        // real elements
  std::size_t padded = 0;        // length rounded up to a multiple of the part count
  std::size_t padded_begin = 0;  // where the bucket starts when every bucket is padded
  std::size_t shard = 0;         // padded / parts
  std::size_t own_begin = 0;     // this part's shard starts here inside the bucket
  std::size_t state_offset = 0;  // ... and here inside this part's state arrays
  std::vector<Piece> pieces;     // every tensor run of the bucket
  std::vector<Piece> own;        // the tensor runs inside this part's shard
};

struct Layout {
  std::vector<std::size_t> order;  // tensors in bucket order
  std::vector<Bucket> buckets;
  std::size_t total = 0;           // flat elements over all tensors
  std::size_t padded_total = 0;    // ... with every bucket's padding
  std::size_t state_elements = 0;  // this part's shard lengths added over buckets
  std::size_t max_padded = 0;
  std::size_t max_shard = 0;
};

// `sizes`: elements per tensor, in registration order; `order`: a permutation of the tensors
// (empty: registration order). Bucket lengths are rounded down to a multiple of `parts` (at
// least `parts`); the first bucket is at most as long as the others. Part `part` of `parts`
// owns shard `part` of every bucket.
Layout make_layout(std::span<const std::size_t> sizes, std::span<const std::size_t> order,
                   std::size_t first_bucket_elements, std::size_t bucket_elements, int parts,
                   int part);

// The tensors in reverse registration order (the order a backward pass produces them).
std::vector<std::size_t> reverse_order(std::size_t tensors);

}  // namespace toroid::optimizer
