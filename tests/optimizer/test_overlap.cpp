// Gradient summation overlapped with the backward pass, under mpirun: GradientReducer sums
// exactly whatever order each rank marks its gradients in; the buckets follow rank 0's ready
// order after the first step (or stay, with rebuilding off); ShardedOptimizer gives bitwise the
// same weights with ready() calls during the "backward pass" as with a plain step(); every
// ready() mistake is an error on every rank, after which the next step works.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "../mpi/mpi_test.hpp"
#include "api/internal.hpp"
#include "model.hpp"
#include "toroid/toroid.hpp"

using namespace toroid;
using testing::all_ranks;
using testing::Model;
using testing::Reference;
using testing::world_rank;
using testing::world_size;

namespace {

const std::vector<std::size_t> kOverlapSizes = {37, 1, 250, 1001, 5};

// Integer-valued gradients: every partial sum is exact in f32 (and in bf16 below 256), so the
// expected sum does not depend on the order the ranks are added in.
float grad_value(int step, int rank, std::size_t t, std::size_t i) {
  return static_cast<float>(
      static_cast<int>((i * 7 + t * 3 + static_cast<std::size_t>(step)) % 11) - 5 + rank);
}
float expected_sum(int step, int p, std::size_t t, std::size_t i) {
  float s = 0;
  for (int r = 0; r < p; ++r) s += grad_value(step, r, t, i);
  return s;
}

// A rank-dependent order: rank r marks the tensors rotated by r, so no two ranks agree.
std::vector<std::size_t> rank_order(std::size_t n, int rank) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::rotate(order.begin(), order.begin() + static_cast<long>(static_cast<std::size_t>(rank) % n),
              order.end());
  return order;
}

std::vector<std::vector<std::string>> names_in(const std::vector<std::size_t>& order,
                                               const std::vector<std::string>& names) {
  std::vector<std::vector<std::string>> out;
  for (std::size_t t : order) out.push_back({names[t]});
  return out;
}

}  // namespace

TEST_CASE("GradientReducer sums exactly in any ready order, f32 and bf16", "[overlap]") {
  const int p = world_size(), r = world_rank();
  Communicator comm(MPI_COMM_WORLD);
  for (bool bf16_grads : {false, true})
    for (bool bf16_wire : {false, true})
      for (bool average : {false, true}) {
        INFO("bf16 gradients " << bf16_grads << ", bf16 wire " << bf16_wire << ", average "
                               << average);
        std::vector<std::vector<float>> g32(kOverlapSizes.size());
        std::vector<std::vector<bfloat16>> g16(kOverlapSizes.size());
        std::vector<Gradient> grads;
        for (std::size_t t = 0; t < kOverlapSizes.size(); ++t) {
          g32[t].resize(kOverlapSizes[t]), g16[t].resize(kOverlapSizes[t]);
          if (bf16_grads)
            grads.emplace_back(Model::name_of(t), std::span<bfloat16>(g16[t]));
          else
            grads.emplace_back(Model::name_of(t), std::span<float>(g32[t]));
        }
        ReducerConfig config;
        config.bucket_bytes = 512,
        config.first_bucket_bytes = 64;  // many buckets, tensors straddle them
        config.bf16 = bf16_wire, config.average = average;
        GradientReducer reducer(comm, grads, config);
        bool exact = true;
        for (int step = 1; step <= 3; ++step) {
          for (std::size_t t = 0; t < kOverlapSizes.size(); ++t)
            for (std::size_t i = 0; i < kOverlapSizes[t]; ++i) {
              const float v = grad_value(step, r, t, i);
              if (bf16_grads)
                g16[t][i] = to_bfloat16(v);
              else
                g32[t][i] = v;
            }
          for (std::size_t t : rank_order(kOverlapSizes.size(), r + step)) {
            reducer.ready(Model::name_of(t));
            reducer.poll();
          }
          reducer.finish();
          for (std::size_t t = 0; t < kOverlapSizes.size(); ++t)
            for (std::size_t i = 0; i < kOverlapSizes[t]; ++i) {
              // The sum is exact on either wire; the mean is the sum times 1/p in f32, rounded
              // to bf16 last for bf16 gradients.
              float want = expected_sum(step, p, t, i);
              if (average) want *= 1.0f / static_cast<float>(p);
              if (bf16_grads) want = to_float(to_bfloat16(want));
              const float got = bf16_grads ? to_float(g16[t][i]) : g32[t][i];
              if (got != want) exact = false;
            }
        }
        CHECK(all_ranks(exact));
      }
}

TEST_CASE("GradientReducer buckets: reverse registration order, then rank 0's ready order",
          "[overlap]") {
  const int r = world_rank();
  Communicator comm(MPI_COMM_WORLD);
  std::vector<std::vector<float>> g(kOverlapSizes.size());
  std::vector<Gradient> grads;
  std::vector<std::string> names;
  for (std::size_t t = 0; t < kOverlapSizes.size(); ++t) {
    g[t].assign(kOverlapSizes[t], 1.0f);
    names.push_back(Model::name_of(t));
    grads.emplace_back(names[t], std::span<float>(g[t]));
  }
  for (bool rebuild : {true, false}) {
    INFO("rebuild " << rebuild);
    ReducerConfig config;
    config.bucket_bytes =
        4;  // one element per bucket: a bucket per element, so names tell the order
    config.first_bucket_bytes = 4;
    config.rebuild_buckets = rebuild;
    // Sizes of one element each, so buckets() lists tensors one per bucket.
    std::vector<std::vector<float>> one(4, std::vector<float>(1));
    std::vector<Gradient> small;
    for (std::size_t t = 0; t < 4; ++t) small.emplace_back(names[t], std::span<float>(one[t]));
    GradientReducer reducer(comm, small, config);
    CHECK(reducer.buckets() == names_in({3, 2, 1, 0}, names));
    const std::vector<std::size_t> order = rank_order(4, r + 1);  // rank 0 marks 1, 2, 3, 0
    for (std::size_t t : order) reducer.ready(t);
    reducer.finish();
    const auto after = reducer.buckets();
    CHECK(all_ranks(after ==
                    (rebuild ? names_in({1, 2, 3, 0}, names) : names_in({3, 2, 1, 0}, names))));
    // The second step sums right on the rebuilt layout, in yet another order.
    for (std::size_t t = 0; t < 4; ++t) one[t][0] = static_cast<float>(t + 1);
    for (std::size_t t : rank_order(4, r + 2)) reducer.ready(t);
    reducer.finish();
    bool right = true;
    for (std::size_t t = 0; t < 4; ++t)
      right = right && one[t][0] == static_cast<float>(t + 1);  // mean of equal values
    CHECK(all_ranks(right));
    // Only the first step rebuilds.
    for (std::size_t t = 0; t < 4; ++t) reducer.ready(t);
    reducer.finish();
    CHECK(all_ranks(reducer.buckets() == after));
  }
  (void)grads;
}

TEST_CASE("ShardedOptimizer: ready() during the backward pass gives bitwise the weights of step()",
          "[overlap]") {
  const int p = world_size(), r = world_rank();
  std::vector<std::string> topologies = {"auto"};
  if (p == 4) topologies.push_back("2x2");
  const std::string topology = GENERATE_COPY(from_range(topologies));
  Options options;
  options.topology = topology;
  Communicator comm(MPI_COMM_WORLD, options);
  struct Case {
    const char* label;
    OptimizerKind kind;
    double clip;
    bool shard, bf16;
  };
  const Case cases[] = {{"adam", OptimizerKind::adam, 0, true, false},
                        {"adamw bf16", OptimizerKind::adamw, 0, true, true},
                        {"sgd replicated", OptimizerKind::sgd, 0, false, false},
                        {"adamw clipped", OptimizerKind::adamw, 5, true, false},
                        {"lamb", OptimizerKind::lamb, 0, true, false},
                        {"lars bf16", OptimizerKind::lars, 5, true, true}};
  for (const Case& c : cases) {
    INFO(c.label << " at np " << p << ", topology " << topology);
    OptimizerConfig config;
    config.kind = c.kind, config.learning_rate = c.kind == OptimizerKind::lars ? 0.5 : 0.01;
    config.weight_decay = 0.01, config.max_grad_norm = c.clip, config.shard = c.shard,
    config.bf16_gradients = c.bf16;
    config.no_weight_decay = {"bias"};
    config.bucket_bytes = 1024, config.first_bucket_bytes = 128;
    Model plain(kOverlapSizes), overlapped(kOverlapSizes);
    ShardedOptimizer a(comm, plain.parameters(), config);
    ShardedOptimizer b(comm, overlapped.parameters(), config);
    for (int step = 1; step <= 6; ++step) {
      plain.set_gradients(step, r, p);
      a.step();
      // The "backward pass": last tensor first (so the layout is not rebuilt), progress between.
      for (std::size_t t = kOverlapSizes.size(); t-- > 0;) {
        overlapped.set_gradients(step, r, p);
        b.ready(t);
        b.poll();
      }
      b.step();
    }
    CHECK(all_ranks(plain.weights == overlapped.weights));
    CHECK(a.buckets() == b.buckets());
  }
}

TEST_CASE("ShardedOptimizer: the rebuilt layout moves the state with the elements", "[overlap]") {
  const int p = world_size(), r = world_rank();
  Communicator comm(MPI_COMM_WORLD);
  OptimizerConfig config;
  config.kind = OptimizerKind::adam, config.learning_rate = 0.01;
  config.bucket_bytes = 1024, config.first_bucket_bytes = 128;
  Model model(kOverlapSizes), fixed(kOverlapSizes);
  ShardedOptimizer opt(comm, model.parameters(), config);
  OptimizerConfig keep = config;
  keep.rebuild_buckets = false;
  ShardedOptimizer ref_opt(comm, fixed.parameters(), keep);
  Reference ref(model, config);
  const auto before = opt.buckets();
  for (int step = 1; step <= 8; ++step) {
    model.set_gradients(step, r, p);
    fixed.set_gradients(step, r, p);
    for (std::size_t t = 0; t < kOverlapSizes.size(); ++t)
      opt.ready(t);  // registration order: not the initial one
    opt.step();
    ref_opt.step();
    ref.advance(model);
  }
  CHECK(opt.buckets() != before);
  CHECK(ref_opt.buckets() == before);
  // Adam is elementwise: the layout changes only the order ranks are summed in (none at 2 ranks).
  double worst = 0;
  for (std::size_t t = 0; t < kOverlapSizes.size(); ++t)
    for (std::size_t i = 0; i < kOverlapSizes[t]; ++i)
      worst = std::max(worst, std::abs(double(model.weights[t][i]) - ref.w[t][i]) /
                                  std::max(std::abs(ref.w[t][i]), 1e-2));
  CHECK(all_ranks(worst <= 1e-4));
  if (p <= 2) CHECK(all_ranks(model.weights == fixed.weights));
}

TEST_CASE("ready() mistakes are errors on every rank, and the next step works", "[overlap]") {
  const int p = world_size(), r = world_rank();
  Communicator comm(MPI_COMM_WORLD);
  std::vector<std::vector<float>> g(kOverlapSizes.size());
  std::vector<Gradient> grads;
  for (std::size_t t = 0; t < kOverlapSizes.size(); ++t) {
    g[t].assign(kOverlapSizes[t], 1.0f);
    grads.emplace_back(Model::name_of(t), std::span<float>(g[t]));
  }
  ReducerConfig config;
  config.bucket_bytes = 512, config.first_bucket_bytes = 64, config.average = false;
  GradientReducer reducer(comm, grads, config);
  using Catch::Contains;
  const int bad = p - 1;  // the rank that makes the mistake
  const std::string on_bad = "on rank " + std::to_string(bad);
  auto mark_all_but = [&](std::size_t skip) {
    for (std::size_t t = kOverlapSizes.size(); t-- > 0;)
      if (r != bad || t != skip) reducer.ready(t);
  };
  mark_all_but(3);
  CHECK_THROWS_WITH(reducer.finish(),
                    Contains("gradient 3 'LayerNorm.weight' was never marked ready " + on_bad));
  mark_all_but(99);
  if (r == bad) reducer.ready("fc1.bias");
  CHECK_THROWS_WITH(reducer.finish(),
                    Contains("gradient 1 'fc1.bias' was marked ready twice in one step " + on_bad));
  mark_all_but(99);
  if (r == bad) reducer.ready("fc3.weight");
  CHECK_THROWS_WITH(reducer.finish(),
                    Contains("ready(\"fc3.weight\") " + on_bad + ": no gradient has that name"));
  mark_all_but(99);
  if (r == bad) reducer.ready(std::size_t{7});
  CHECK_THROWS_WITH(reducer.finish(),
                    Contains("ready(7) " + on_bad + ": index out of range (5 gradients)"));
  // After every error: a clean step sums right.
  for (auto& t : g) std::fill(t.begin(), t.end(), 1.0f);
  mark_all_but(99);
  reducer.finish();
  bool right = true;
  for (const auto& t : g)
    for (float x : t) right = right && x == static_cast<float>(p);
  CHECK(all_ranks(right));

  // The optimizer: a step with some ready() calls but not all is an error too.
  Model model(kOverlapSizes);
  ShardedOptimizer opt(comm, model.parameters(), OptimizerConfig{});
  if (r == bad) opt.ready("fc2.weight");
  CHECK_THROWS_WITH(opt.step(),
                    Contains("ShardedOptimizer") &&
                        Contains("parameter 0 'fc1.weight' was never marked ready " + on_bad));
  opt.step();  // none marked: every parameter is ready
  CHECK(opt.steps_taken() == 1);
}

TEST_CASE("GradientReducer bad construction is an error on every rank", "[overlap]") {
  Communicator comm(MPI_COMM_WORLD);
  using Catch::Contains;
  std::vector<float> a(4), b(4);
  CHECK_THROWS_WITH(GradientReducer(comm, {}), Contains("the gradient list is empty"));
  CHECK_THROWS_WITH(GradientReducer(comm, {{"w", std::span<float>(a)}, {"w", std::span<float>(b)}}),
                    Contains("gradient name 'w' is used by gradients 0 and 1"));
  CHECK_THROWS_WITH(GradientReducer(comm, {{"", std::span<float>(a)}}),
                    Contains("gradient 0 has an empty name"));
  ReducerConfig tiny;
  tiny.bucket_bytes = 2;
  CHECK_THROWS_WITH(GradientReducer(comm, {{"w", std::span<float>(a)}}, tiny),
                    Contains("bucket_bytes is 2, must be between 4 and 1 GiB"));
  if (world_size() > 1) {
    std::vector<Gradient> mine = {{"w", std::span<float>(a)}};
    if (world_rank() == 1) mine.emplace_back("v", std::span<float>(b));
    CHECK_THROWS_WITH(GradientReducer(comm, mine),
                      Contains("gradient count differs between ranks") && Contains("rank 1 has 2"));
    ReducerConfig differs;
    if (world_rank() == 0) differs.bucket_bytes = 1024;
    CHECK_THROWS_WITH(GradientReducer(comm, {{"w", std::span<float>(a)}}, differs),
                      Contains("configuration (hash) differs"));
  }
}

TEST_CASE("GradientReducer and ShardedOptimizer buckets run single-copy on one node", "[overlap]") {
  const int p = world_size(), r = world_rank();
  Communicator comm(MPI_COMM_WORLD);
  const auto single_copies = [&] {
    const auto& memory =
        internal::impl(comm).memory;  // single-copy (large buckets) or staged (small)
    return memory ? memory->single_copy_calls() + memory->staged_calls() : 0;
  };
  OptimizerConfig config;
  config.kind = OptimizerKind::adamw, config.learning_rate = 0.01, config.shard = true;
  // Two buckets of 32 KiB: above the staged sizes, so single-copy at every rank count.
  config.bucket_bytes = 32 * 1024, config.first_bucket_bytes = 32 * 1024;
  Model model({8192, 8192});
  ShardedOptimizer opt(comm, model.parameters(), config);
  const std::uint64_t before = single_copies();
  model.set_gradients(1, r, p);
  opt.step();
  // Every bucket's reduce-scatter and all-gather (one all-reduce alone, where nothing is
  // sharded), where the whole job is on one node.
  const std::size_t per_bucket = p > 1 ? 2 : 1, buckets = opt.buckets().size();
  const bool possible = internal::impl(comm).single_copy_possible();
  CHECK(all_ranks(single_copies() - before == (possible ? per_bucket * buckets : 0)));
  CHECK(possible == (testing::real_nodes() == 1));
}
