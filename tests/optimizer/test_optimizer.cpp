// ShardedOptimizer under mpirun: the sharded update equals the replicated one (every rank
// all-reduces and updates everything) and a double-precision single-process reference, for
// every rule; bf16 gradients stay within a stated tolerance; bad input is an error on every
// rank. (Checkpoints: test_checkpoint.cpp.)
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../mpi/mpi_test.hpp"
#include "model.hpp"
#include "toroid/toroid.hpp"

using namespace toroid;
using testing::all_ranks;
using testing::max_relative;
using testing::Model;
using testing::Reference;
using testing::world_rank;
using testing::world_size;

namespace {

// Not divisible by 2, 3 or 4; one tensor shorter than any shard; spread over several buckets.
const std::vector<std::size_t> kSizes = {37, 1, 250, 1001, 5};

struct Rule {
  const char* label;
  OptimizerConfig config;
};

std::vector<Rule> rules() {
  auto make = [](OptimizerKind k, double lr) {
    OptimizerConfig c;
    c.kind = k, c.learning_rate = lr, c.weight_decay = 0.01;
    c.no_weight_decay = {"bias", "LayerNorm"};
    c.no_trust_ratio = {"LayerNorm"};
    c.bucket_bytes = 1024;  // 256 elements: tensors straddle buckets and shards
    return c;
  };
  std::vector<Rule> out = {{"sgd", make(OptimizerKind::sgd, 0.05)},
                           {"sgd nesterov", make(OptimizerKind::sgd, 0.05)},
                           {"adam", make(OptimizerKind::adam, 0.01)},
                           {"adamw clipped", make(OptimizerKind::adamw, 0.01)},
                           {"lamb", make(OptimizerKind::lamb, 0.01)},
                           {"lars clipped", make(OptimizerKind::lars, 0.5)}};
  out[1].config.nesterov = true;
  out[3].config.max_grad_norm = 5.0;  // the gradient norm is about 25: clipping is active
  out[5].config.max_grad_norm = 5.0;
  return out;
}

double max_relative(const std::vector<std::vector<float>>& a,
                    const std::vector<std::vector<double>>& b) {
  std::vector<std::vector<float>> bf;
  for (const auto& t : b) bf.emplace_back(t.begin(), t.end());
  return testing::max_relative(a, bf);
}

// Largest over tensors of ||a - b|| / ||b|| (L2): the relative error of each tensor as a vector.
double max_tensor_relative(const std::vector<std::vector<float>>& a,
                           const std::vector<std::vector<float>>& b) {
  double worst = 0;
  for (std::size_t t = 0; t < a.size(); ++t) {
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < a[t].size(); ++i) {
      const double d = double(a[t][i]) - b[t][i];
      diff += d * d, norm += double(b[t][i]) * b[t][i];
    }
    worst = std::max(worst, norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff));
  }
  return worst;
}

}  // namespace

TEST_CASE("sharded update equals the replicated update and the reference, every rule",
          "[optimizer]") {
  const int p = world_size(), r = world_rank();
  // The default topology (a ring on one node), and a 2D torus where the rank count allows one:
  // there the gradients go through the 2D reduce-scatter and all-gather.
  std::vector<std::string> topologies = {"auto"};
  if (p == 4) topologies.push_back("2x2");
  if (p == 6) topologies.push_back("3x2");
  const std::string topology = GENERATE_COPY(from_range(topologies));
  Options options;
  options.topology = topology;
  Communicator comm(MPI_COMM_WORLD, options);
  for (const Rule& rule : rules()) {
    INFO(rule.label << " at np " << p << ", topology " << comm.topology().to_string());
    Model sharded(kSizes), replicated(kSizes);
    OptimizerConfig rc = rule.config;
    rc.shard = false;
    ShardedOptimizer a(comm, sharded.parameters(), rule.config);
    ShardedOptimizer b(comm, replicated.parameters(), rc);
    Reference ref(sharded, rule.config);
    double worst_trust = 0;
    for (int step = 1; step <= 20; ++step) {
      sharded.set_gradients(step, r, p);
      replicated.set_gradients(step, r, p);
      a.step();
      b.step();
      ref.advance(sharded);
      for (std::size_t t = 0; t < kSizes.size(); ++t)
        worst_trust =
            std::max(worst_trust, std::abs(a.trust_ratios()[t] - ref.trust[t]) / ref.trust[t]);
    }
    // Sharded and replicated sum the gradients in different orders (reduce-scatter against
    // all-reduce), so they agree to f32 rounding, not bit for bit.
    const double vs_replicated = max_tensor_relative(sharded.weights, replicated.weights);
    const double vs_reference = max_relative(sharded.weights, ref.w);
    CAPTURE(vs_replicated, vs_reference, worst_trust);
    if (std::getenv("TOROID_TEST_VERBOSE") && r == 0)
      std::printf("%s np %d %s: vs_replicated %.3g vs_reference %.3g trust %.3g\n", rule.label, p,
                  topology.c_str(), vs_replicated, vs_reference, worst_trust);
    CHECK(all_ranks(vs_replicated <= 1e-6));
    CHECK(all_ranks(vs_reference <= 1e-4));
    CHECK(all_ranks(worst_trust <= 1e-4));
    CHECK(a.steps_taken() == 20);
    // Every rank ends with the same weights (the all-gather delivered every shard).
    double sum = 0;
    for (const auto& t : sharded.weights)
      for (float x : t) sum += x;
    double lo = sum, hi = sum;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == hi);
  }
}

TEST_CASE("trust ratios of LAMB and LARS are not trivially one, and exclusions are honoured",
          "[optimizer]") {
  Communicator comm(MPI_COMM_WORLD);
  for (OptimizerKind kind : {OptimizerKind::lamb, OptimizerKind::lars}) {
    Model model(kSizes);
    OptimizerConfig c;
    c.kind = kind, c.weight_decay = 0.01, c.no_trust_ratio = {"LayerNorm"};
    ShardedOptimizer opt(comm, model.parameters(), c);
    model.set_gradients(1, world_rank(), world_size());
    opt.step();
    const auto ratios = opt.trust_ratios();
    CHECK(ratios[3] == 1.0);  // LayerNorm.weight: excluded
    CHECK(std::abs(ratios[0] - 1.0) > 1e-3);
  }
}

TEST_CASE("bf16 gradients: within tolerance of the f32 update", "[optimizer]") {
  // Gradients are rounded to bf16 (8 significant bits) before the first addition and after
  // every hop, so each element of the mean carries up to about 2^-8 relative error per hop.
  // Stated tolerance: after 20 steps every weight is within 2% of the f32 run's total weight
  // change (max |w - w0| over all elements).
  const int p = world_size(), r = world_rank();
  Communicator comm(MPI_COMM_WORLD);
  for (const Rule& rule : rules()) {
    for (bool bf16_storage : {false, true}) {
      INFO(rule.label << (bf16_storage ? ", bf16 gradient storage" : ", f32 gradient storage"));
      Model exact(kSizes), rounded(kSizes);
      const auto start = exact.weights;
      std::vector<std::vector<bfloat16>> bf(kSizes.size());
      for (std::size_t t = 0; t < kSizes.size(); ++t) bf[t].resize(kSizes[t]);
      std::vector<Parameter> params;
      for (std::size_t t = 0; t < kSizes.size(); ++t) {
        if (bf16_storage)
          params.emplace_back(rounded.names[t], std::span<float>(rounded.weights[t]),
                              std::span<const bfloat16>(bf[t]));
        else
          params.emplace_back(rounded.names[t], std::span<float>(rounded.weights[t]),
                              std::span<const float>(rounded.grads[t]));
      }
      OptimizerConfig rc = rule.config;
      rc.bf16_gradients = true;
      ShardedOptimizer a(comm, exact.parameters(), rule.config);
      ShardedOptimizer b(comm, params, rc);
      for (int step = 1; step <= 20; ++step) {
        exact.set_gradients(step, r, p);
        rounded.set_gradients(step, r, p);
        for (std::size_t t = 0; t < kSizes.size(); ++t)
          for (std::size_t i = 0; i < kSizes[t]; ++i) bf[t][i] = to_bfloat16(rounded.grads[t][i]);
        a.step();
        b.step();
      }
      double moved = 0, diff = 0;
      for (std::size_t t = 0; t < kSizes.size(); ++t)
        for (std::size_t i = 0; i < kSizes[t]; ++i) {
          moved = std::max(moved, std::abs(double(exact.weights[t][i]) - start[t][i]));
          diff = std::max(diff, std::abs(double(exact.weights[t][i]) - rounded.weights[t][i]));
        }
      CAPTURE(moved, diff);
      if (std::getenv("TOROID_TEST_VERBOSE") && r == 0)
        std::printf("bf16 %s storage %d np %d: diff/moved %.3g\n", rule.label, int(bf16_storage), p,
                    diff / moved);
      CHECK(all_ranks(moved > 0 && diff > 0 && diff <= 0.02 * moved));
    }
  }
}

TEST_CASE("optimizer bad input is an error on every rank", "[optimizer]") {
  Communicator comm(MPI_COMM_WORLD);
  Model model(kSizes);
  OptimizerConfig c;
  using Catch::Contains;
  CHECK_THROWS_WITH(ShardedOptimizer(comm, {}, c), Contains("the parameter list is empty"));

  std::vector<float> w(10), g(9);
  CHECK_THROWS_WITH(
      ShardedOptimizer(comm, {Parameter("w", std::span<float>(w), std::span<const float>(g))}, c),
      Contains("parameter 0 'w' has 10 weights but 9 gradients"));

  for (double lr : {std::nan(""), -0.1}) {
    OptimizerConfig bad = c;
    bad.learning_rate = lr;
    CHECK_THROWS_WITH(ShardedOptimizer(comm, model.parameters(), bad),
                      Contains("learning_rate is") && Contains("finite and >= 0"));
  }
  OptimizerConfig bad_beta = c;
  bad_beta.beta2 = 1.0;
  CHECK_THROWS_WITH(ShardedOptimizer(comm, model.parameters(), bad_beta),
                    Contains("beta2 is 1, must be in [0, 1)"));

  auto params = model.parameters();
  params.push_back(params[0]);
  CHECK_THROWS_WITH(ShardedOptimizer(comm, params, c),
                    Contains("parameter name 'fc1.weight' is used by parameters 0 and 5"));

  if (world_size() > 1) {
    // One rank's list differs: every rank gets the same error, naming the ranks.
    auto mine = model.parameters();
    if (world_rank() == 1) mine.pop_back();
    CHECK_THROWS_WITH(
        ShardedOptimizer(comm, mine, c),
        Contains("parameter count differs between ranks") && Contains("rank 1 has 4"));
    // An argument error on one rank only still reaches every rank.
    std::vector<Parameter> one_bad = model.parameters();
    if (world_rank() == 0)
      one_bad[2] = Parameter("fc2.weight", std::span<float>(w), std::span<const float>(g));
    CHECK_THROWS_WITH(ShardedOptimizer(comm, one_bad, c),
                      Contains("has 10 weights but 9 gradients"));
  }

  SECTION("a schedule that goes bad stops the step on every rank") {
    OptimizerConfig s = c;
    s.schedule = [](std::int64_t step, double base) { return step == 3 ? -base : base; };
    ShardedOptimizer opt(comm, model.parameters(), s);
    opt.step(), opt.step();
    CHECK_THROWS_WITH(opt.step(), Contains("the learning-rate schedule gave -0.001 at step 3"));
  }
}
