// GradientReducer: the gradients checked on every rank, handed to a BucketReducer that
// all-reduces them bucket by bucket; finish() writes the (averaged) sums back.
#include "toroid/gradient_reducer.hpp"

#include <algorithm>

#include "kernels/convert.hpp"
#include "kernels/reduce.hpp"
#include "mpi_base/agreement.hpp"
#include "optimizer/bucket_reducer.hpp"
#include "optimizer/config.hpp"

namespace toroid {

struct GradientReducer::Impl {
  Impl(Communicator& c, std::vector<Gradient> g, const ReducerConfig& cfg)
      : comm(c), grads(std::move(g)), config(cfg), reducer(c, sources(grads), settings(cfg)) {}

  static std::vector<optimizer::GradientSource> sources(const std::vector<Gradient>& grads) {
    std::vector<optimizer::GradientSource> out;
    for (const auto& g : grads) out.push_back({g.name, g.data, g.count, g.type});
    return out;
  }
  static optimizer::ReducerSettings settings(const ReducerConfig& c) {
    optimizer::ReducerSettings s;
    s.reduction = optimizer::Reduction::allreduce;
    s.bf16_wire = c.bf16;
    s.first_bucket_bytes = c.first_bucket_bytes, s.bucket_bytes = c.bucket_bytes;
    s.rebuild = c.rebuild_buckets;
    s.algorithm = c.algorithm;
    s.owner = "GradientReducer", s.kind = "gradient";
    return s;
  }

  // The sums of bucket k (f32, in `reducer.result()`) into the gradients, scaled.
  void unpack(const optimizer::Bucket& b, float scale) {
    float* sums = reducer.result() + b.state_offset;
    if (scale != 1.0f)
      for (std::size_t i = 0; i < b.length; ++i) sums[i] *= scale;
    for (const auto& piece : b.pieces) {
      const Gradient& g = grads[piece.tensor];
      if (g.type == DataType::f32)
        kernels::copy(static_cast<float*>(g.data) + piece.tensor_offset, sums + piece.offset,
                      piece.count * sizeof(float));
      else
        kernels::convert(sums + piece.offset, static_cast<bfloat16*>(g.data) + piece.tensor_offset,
                         piece.count);
    }
  }

  Communicator& comm;
  std::vector<Gradient> grads;
  ReducerConfig config;
  optimizer::BucketReducer reducer;
};

GradientReducer::GradientReducer(Communicator& comm, std::vector<Gradient> grads,
                                 ReducerConfig config) {
  const MPI_Comm mpi = comm.mpi_comm();
  toroid::run_agreed(
      mpi, [&] { optimizer::validate(grads, config); }, comm.timeout_seconds());
  toroid::require_agreement(
      mpi, "GradientReducer",
      {{"gradient count", static_cast<std::int64_t>(grads.size())},
       {"gradient names, sizes and types (hash)", optimizer::gradients_hash(grads)},
       {"configuration (hash)", optimizer::reducer_config_hash(config)}},
      comm.timeout_seconds());
  impl_ = std::make_unique<Impl>(comm, std::move(grads), config);
}

GradientReducer::~GradientReducer() = default;

void GradientReducer::ready(std::size_t index) { impl_->reducer.ready(index); }
void GradientReducer::ready(std::string_view name) { impl_->reducer.ready(name); }
void GradientReducer::poll() { impl_->reducer.poll(); }

void GradientReducer::finish() {
  Impl& s = *impl_;
  s.reducer.close();
  const float scale = s.config.average ? 1.0f / static_cast<float>(s.comm.size()) : 1.0f;
  const auto& buckets = s.reducer.layout().buckets;
  for (std::size_t k = 0; k < buckets.size(); ++k) {
    s.reducer.wait(k);
    s.unpack(buckets[k], scale);
  }
  s.reducer.next_step();
}

std::vector<std::vector<std::string>> GradientReducer::buckets() const {
  return impl_->reducer.bucket_names();
}

}  // namespace toroid
