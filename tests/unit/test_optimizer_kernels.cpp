// The fused optimizer kernels: the scalar level against the textbook formulas written out here
// in double, and every SIMD level against the scalar level bit for bit (the update kernels) or
// to rounding (the f64 sums of squares), at lengths that exercise every tail.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/table.hpp"

using namespace toroid::kernels;

namespace {

std::vector<float> random_floats(std::size_t n, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

struct Case {
  std::vector<float> w, g, m, v, u;
};

Case make_case(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  return {random_floats(n, rng, -2, 2), random_floats(n, rng, -1, 1),
          random_floats(n, rng, -0.5f, 0.5f), random_floats(n, rng, 0, 0.25f),
          std::vector<float>(n, 0.0f)};
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<const KernelTable*> simd_levels() {
  std::vector<const KernelTable*> out;
  for (Isa isa : kAllIsas)
    if (isa != Isa::scalar && isa_supported(isa)) out.push_back(&kernels_for(isa));
  return out;
}

const std::size_t kLengths[] = {0, 1, 3, 7, 8, 15, 16, 17, 31, 33, 64, 100, 257, 10'001};

}  // namespace

TEST_CASE("optimizer kernels: scalar level follows the formulas", "[kernels][optimizer]") {
  const auto& k = scalar_table().optimizer;
  const std::size_t n = 101;
  SECTION("sgd with momentum, nesterov and L2 weight decay") {
    for (bool nesterov : {false, true}) {
      Case c = make_case(n, 1), before = c;
      MomentumArgs a{0.5f, 0.01f, 0.9f, 1.0f, 0.1f, nesterov};
      k.momentum(c.w.data(), c.g.data(), c.m.data(), n, a);
      for (std::size_t i = 0; i < n; ++i) {
        const double g = 0.5 * before.g[i] + 0.01 * before.w[i];
        const double m = 0.9 * before.m[i] + g;
        const double d = nesterov ? g + 0.9 * m : m;
        CHECK(c.m[i] == Approx(m).epsilon(1e-5).margin(1e-6));
        CHECK(c.w[i] == Approx(before.w[i] - 0.1 * d).epsilon(1e-5).margin(1e-6));
      }
    }
  }
  SECTION("adam (L2) and adamw (decoupled) with bias correction") {
    for (bool decoupled : {false, true}) {
      Case c = make_case(n, 2), before = c;
      AdamArgs a;
      a.grad_scale = 0.25f, a.lr = 0.01f, a.weight_decay = 0.1f, a.decoupled = decoupled;
      a.inv_bias1 = static_cast<float>(1 / (1 - 0.9 * 0.9)),
      a.inv_bias2 = static_cast<float>(1 / (1 - 0.999 * 0.999));
      k.adam(c.w.data(), c.g.data(), c.m.data(), c.v.data(), n, a);
      for (std::size_t i = 0; i < n; ++i) {
        double g = 0.25 * before.g[i];
        if (!decoupled) g += 0.1 * before.w[i];
        const double m = 0.9 * before.m[i] + 0.1 * g;
        const double v = 0.999 * before.v[i] + 0.001 * g * g;
        double u = (m * a.inv_bias1) / (std::sqrt(v * a.inv_bias2) + 1e-8);
        if (decoupled) u += 0.1 * before.w[i];
        CHECK(c.m[i] == Approx(m).epsilon(1e-5).margin(1e-6));
        CHECK(c.v[i] == Approx(v).epsilon(1e-5).margin(1e-7));
        CHECK(c.w[i] == Approx(before.w[i] - 0.01 * u).epsilon(1e-5).margin(1e-6));
      }
    }
  }
  SECTION("lamb direction returns the squares of weights and direction; apply scales it") {
    Case c = make_case(n, 3), before = c;
    AdamArgs a;
    a.weight_decay = 0.01f;
    const SquareSums sums =
        k.lamb_direction(c.w.data(), c.g.data(), c.m.data(), c.v.data(), c.u.data(), n, a);
    CHECK(same_bits(c.w, before.w));  // the direction pass leaves the weights alone
    double w_sq = 0, u_sq = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double m = 0.9 * before.m[i] + 0.1 * before.g[i];
      const double v = 0.999 * before.v[i] + 0.001 * double(before.g[i]) * before.g[i];
      CHECK(c.u[i] ==
            Approx(m / (std::sqrt(v) + 1e-8) + 0.01 * before.w[i]).epsilon(1e-5).margin(1e-6));
      w_sq += double(before.w[i]) * before.w[i];
      u_sq += double(c.u[i]) * c.u[i];
    }
    CHECK(sums.w == Approx(w_sq).epsilon(1e-12));
    CHECK(sums.u == Approx(u_sq).epsilon(1e-12));
    k.apply(c.w.data(), c.u.data(), n, 0.5f);
    for (std::size_t i = 0; i < n; ++i) CHECK(c.w[i] == before.w[i] - 0.5f * c.u[i]);
  }
}

TEST_CASE("optimizer kernels: every SIMD level gives the scalar bits",
          "[kernels][optimizer][simd]") {
  const auto& ref = scalar_table().optimizer;
  for (const KernelTable* level : simd_levels()) {
    const auto& k = level->optimizer;
    for (std::size_t n : kLengths) {
      // One element in, so the loads are off the vector grid.
      INFO("isa " << to_string(level->isa) << " n " << n);
      for (bool nesterov : {false, true}) {
        Case a = make_case(n + 1, 7), b = a;
        const MomentumArgs args{0.3f, 0.02f, 0.9f, 0.7f, 0.05f, nesterov};
        ref.momentum(a.w.data() + 1, a.g.data() + 1, a.m.data() + 1, n, args);
        k.momentum(b.w.data() + 1, b.g.data() + 1, b.m.data() + 1, n, args);
        CHECK(same_bits(a.w, b.w));
        CHECK(same_bits(a.m, b.m));
      }
      for (bool decoupled : {false, true}) {
        Case a = make_case(n + 1, 8), b = a;
        AdamArgs args;
        args.grad_scale = 0.5f, args.lr = 1e-3f, args.weight_decay = 0.01f,
        args.decoupled = decoupled;
        args.inv_bias1 = 10.0f, args.inv_bias2 = 1000.5f;
        ref.adam(a.w.data() + 1, a.g.data() + 1, a.m.data() + 1, a.v.data() + 1, n, args);
        k.adam(b.w.data() + 1, b.g.data() + 1, b.m.data() + 1, b.v.data() + 1, n, args);
        CHECK(same_bits(a.w, b.w));
        CHECK(same_bits(a.m, b.m));
        CHECK(same_bits(a.v, b.v));
        const auto sa = ref.lamb_direction(a.w.data(), a.g.data(), a.m.data(), a.v.data(),
                                           a.u.data(), n + 1, args);
        const auto sb = k.lamb_direction(b.w.data(), b.g.data(), b.m.data(), b.v.data(), b.u.data(),
                                         n + 1, args);
        CHECK(same_bits(a.u, b.u));
        CHECK(sb.w == Approx(sa.w).epsilon(1e-12));
        CHECK(sb.u == Approx(sa.u).epsilon(1e-12));
        ref.apply(a.w.data() + 1, a.u.data() + 1, n, 0.3f);
        k.apply(b.w.data() + 1, b.u.data() + 1, n, 0.3f);
        CHECK(same_bits(a.w, b.w));
        CHECK(k.sum_squares(b.g.data() + 1, n) ==
              Approx(ref.sum_squares(a.g.data() + 1, n)).epsilon(1e-12));
      }
    }
  }
}
