// The buckets under GradientReducer and ShardedOptimizer: gradients packed as they become
// ready, one persistent non-blocking collective per bucket started in bucket order, results
// in one f32 array, the ready() bookkeeping and its errors, and the rebuild of the layout from
// the observed ready order after the first step.
//
//   ready(t) -> pack t's pieces into packed[] -> bucket k complete and k == next? start k (, k+1...)
//   close()  -> agree across ranks that every tensor was marked once (else drain and throw)
//   wait(k)  -> result[state_offset(k) ..) holds bucket k's sum (this part's shard, or all of it)
//
// Terms (layout.hpp): `packed` holds every bucket with its padding, in the wire type; `result`
// is f32, `layout.state_elements` long: the shard of each bucket (reduce-scatter), or the whole
// bucket (all-reduce, one part: there result and packed coincide for an f32 wire).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "optimizer/layout.hpp"
#include "toroid/algorithm.hpp"
#include "toroid/communicator.hpp"
#include "toroid/request.hpp"
#include "toroid/types.hpp"

namespace toroid::optimizer {

struct GradientSource {
  std::string name;
  const void* data;
  std::size_t count;
  DataType type;  // f32 or bf16
};

enum class Reduction { allreduce, reduce_scatter };

struct ReducerSettings {
  Reduction reduction = Reduction::allreduce;
  bool bf16_wire = false;
  std::size_t first_bucket_bytes = 0, bucket_bytes = 0;  // in the wire type
  bool rebuild = true;
  std::optional<Algorithm> algorithm;
  std::string owner;  // "GradientReducer", "ShardedOptimizer": the start of messages
  std::string kind;   // "gradient", "parameter"
};

class BucketReducer {
 public:
  BucketReducer(Communicator& comm, std::vector<GradientSource> sources, ReducerSettings settings);
  ~BucketReducer();  // completes what is in flight

  const Layout& layout() const noexcept { return layout_; }
  std::size_t tensors() const noexcept { return sources_.size(); }
  std::vector<std::vector<std::string>> bucket_names() const;  // tensor names per bucket

  void ready(std::size_t tensor);
  void ready(std::string_view name);
  void ready_all();  // every tensor not marked yet, in bucket order
  bool any_marked() const noexcept { return marked_ > 0 || !problem_.empty(); }
  void poll();

  // Collective; see the top. On error every bucket is completed first, the marks are cleared.
  void close();
  void wait(std::size_t bucket);
  float* result() noexcept { return result_; }
  // The packed buffer when the wire is f32 (free for other use once a bucket's wait returned,
  // until the next step's ready()), else null.
  float* packed_f32() noexcept { return packed_f32_.empty() ? nullptr : packed_f32_.data(); }

  // Collective, after the step's results were used: clears the marks. After the first step in
  // which every rank marked every tensor with ready(), and when rebuilding is on, re-cuts the
  // buckets in rank 0's ready order; returns the previous layout when it did.
  std::optional<Layout> next_step();

 private:
  void build(std::span<const std::size_t> order);
  void clear_marks();  // a new step: nothing marked, nothing started
  void start_complete_buckets();
  void pack(std::size_t tensor);
  void record(std::string problem);

  Communicator& comm_;
  std::vector<GradientSource> sources_;
  std::unordered_map<std::string_view, std::size_t>
      index_of_;  // name -> tensor (views into sources_)
  ReducerSettings settings_;
  Layout layout_;
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>>
      pieces_of_;  // tensor -> (bucket, piece)
  // Communicator::allocate's memory: on one node the buckets' collectives (all under `auto`)
  // take the single-copy path.
  Buffer<bfloat16> packed_bf16_, out_bf16_;
  Buffer<float> packed_f32_, result_own_;
  float* result_ = nullptr;
  std::vector<Request> requests_;
  std::vector<char> done_;            // per bucket: this step's collective has completed
  std::vector<std::size_t> pending_;  // per bucket: tensors not yet ready
  std::size_t next_ = 0;              // next bucket to start
  std::vector<char> marked_flags_;
  std::size_t marked_ = 0;
  std::vector<std::size_t> observed_;  // ready() order of this step
  bool all_by_ready_ = true;           // no ready_all() this step
  std::string problem_;                // the first bad ready() of this step
  std::int64_t steps_ = 0;
};

}  // namespace toroid::optimizer
