// toroid-kernel-bench: every kernel at every ISA level this CPU runs, in GB/s, beside a copy and
// an add stream measured in the same run (absolute numbers on a shared machine are noise; the
// ratios are the evidence).
//
//   toroid-kernel-bench [--sizes 4K,256M] [--isa scalar,avx2,avx512] [--type f32,bf16,...]
//                       [--op sum,prod,min,max] [--time SECONDS]
//
// A size is the bytes of each operand array. GB/s counts every byte a kernel reads or writes:
// a reduce reads a and b and writes a separate dst (3 arrays), reduce-copy also writes the copy (4),
// divide reads and writes one (2), a conversion reads one type and writes the other, the
// optimizer kernels as listed where they are measured. Reductions
// and divide are shown as % of the add stream (dst = a + b over f32, the same 3-array traffic),
// conversions and the library's own copy (plain, apart by a multiple of 4 KiB or 16 bytes past
// one) as % of the copy. Each number is the best of repeated timed batches.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/parse_size.hpp"
#include "kernels/table.hpp"
#include "toroid/error.hpp"

using namespace toroid;
using namespace toroid::kernels;
using Clock = std::chrono::steady_clock;

namespace {

struct CommandLine {
  std::vector<std::size_t> sizes{4096, 256u << 20};
  std::vector<Isa> isas;
  std::vector<DataType> types{DataType::f32,  DataType::f64, DataType::f16,
                              DataType::bf16, DataType::i32, DataType::i64};
  std::vector<ReduceOp> ops{ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max};
  double seconds = 0.25;  // per measurement, at least
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t end = std::min(s.find(',', start), s.size());
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

CommandLine parse(int argc, char** argv) {
  CommandLine o;
  for (Isa isa : kAllIsas)
    if (isa_supported(isa)) o.isas.push_back(isa);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      fmt::print(
          "usage: toroid-kernel-bench [--sizes 4K,256M] [--isa scalar,avx2,avx512] "
          "[--type f32,f64,f16,bf16,i32,i64] [--op sum,prod,min,max] [--time SECONDS]\n");
      std::exit(0);
    }
    if (i + 1 >= argc) throw InvalidArgument("option " + arg + " needs a value");
    const std::string value = argv[++i];
    if (arg == "--sizes") {
      o.sizes.clear();
      for (const auto& s : split(value)) o.sizes.push_back(parse_size(s, "--sizes"));
    } else if (arg == "--isa") {
      o.isas.clear();
      for (const auto& s : split(value)) {
        const Isa isa = select_isa(s);  // throws for unknown or unsupported levels
        o.isas.push_back(isa);
      }
    } else if (arg == "--type") {
      o.types.clear();
      for (const auto& s : split(value)) o.types.push_back(parse_data_type(s));
    } else if (arg == "--op") {
      o.ops.clear();
      for (const auto& s : split(value)) o.ops.push_back(parse_reduce_op(s));
    } else if (arg == "--time") {
      o.seconds = std::stod(value);
    } else {
      throw InvalidArgument("unknown option " + arg + " (see --help)");
    }
  }
  return o;
}

// 64-byte aligned, touched (so page faults stay out of the timings).
struct Array {
  std::byte* p;
  explicit Array(std::size_t bytes)
      : p(static_cast<std::byte*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 4096 + 64))) {
    if (!p) throw Error("out of memory for " + std::to_string(bytes) + " bytes");
    std::memset(p, 0, bytes);
  }
  ~Array() { std::free(p); }
  Array(const Array&) = delete;
  Array& operator=(const Array&) = delete;
};

// Where in `into` a copy from `from` lands `distance` bytes past a multiple of 4 KiB from it
// (Array's slack holds the shift): glibc's memcpy is many times slower at 1-31 (kernels/reduce.hpp).
std::byte* past_4k(const Array& into, const Array& from, std::size_t distance) {
  const auto gap =
      reinterpret_cast<std::uintptr_t>(into.p) - reinterpret_cast<std::uintptr_t>(from.p);
  return into.p + (distance - gap) % 4096;
}

// Ordinary finite values of each type (no denormals: they measure microcode assists, not kernels).
void fill(DataType t, std::byte* p, std::size_t n, unsigned seed) {
  for (std::size_t i = 0; i < n; ++i) {
    const float v = 1.0f + static_cast<float>((i * 2654435761u + seed) % 1000) / 1024.0f;
    switch (t) {
      case DataType::f32:
        std::memcpy(p + 4 * i, &v, 4);
        break;
      case DataType::f64: {
        const double d = v;
        std::memcpy(p + 8 * i, &d, 8);
        break;
      }
      case DataType::f16: {
        const float16 h = to_float16(v);
        std::memcpy(p + 2 * i, &h, 2);
        break;
      }
      case DataType::bf16: {
        const bfloat16 h = to_bfloat16(v);
        std::memcpy(p + 2 * i, &h, 2);
        break;
      }
      case DataType::i32: {
        const std::int32_t x = static_cast<std::int32_t>(i * 7 + seed);
        std::memcpy(p + 4 * i, &x, 4);
        break;
      }
      case DataType::i64: {
        const std::int64_t x = static_cast<std::int64_t>(i * 7 + seed);
        std::memcpy(p + 8 * i, &x, 8);
        break;
      }
    }
  }
}

// Best seconds per call of fn: batches of calls long enough to time (>= 1 ms), repeated until
// `seconds` have passed and at least 3 batches ran.
double best_time(const std::function<void()>& fn, double seconds) {
  fn();  // warm: caches, pages, branch predictors
  std::size_t batch = 1;
  for (;;) {
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < batch; ++i) fn();
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    if (dt >= 1e-3) break;
    batch *= 2;
  }
  double best = 1e300, total = 0;
  for (int runs = 0; total < seconds || runs < 3; ++runs) {
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < batch; ++i) fn();
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::min(best, dt / static_cast<double>(batch));
    total += dt;
  }
  return best;
}

// The references, compiled for the baseline ISA like any caller's code.
void add_stream(float* __restrict d, const float* __restrict a, const float* __restrict b,
                std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) d[i] = a[i] + b[i];
}

struct Row {
  std::string kernel;
  std::size_t bytes;
  Isa isa;
  double gbps, pct;
  std::string ref;
};

std::string size_name(std::size_t b) {
  if (b >= (1u << 20) && b % (1u << 20) == 0) return std::to_string(b >> 20) + "M";
  if (b >= 1024 && b % 1024 == 0) return std::to_string(b >> 10) + "K";
  return std::to_string(b);
}

}  // namespace

int main(int argc, char** argv) try {
  const CommandLine o = parse(argc, argv);
  const std::size_t max_bytes = *std::max_element(o.sizes.begin(), o.sizes.end());
  Array a(max_bytes), b(max_bytes), d(max_bytes), c(max_bytes), e(max_bytes);
  std::vector<Row> rows;
  std::map<std::size_t, double> add_ref, copy_ref, copy16_ref;

  fmt::print("toroid-kernel-bench: levels on this CPU:");
  for (Isa isa : kAllIsas)
    if (isa_supported(isa)) fmt::print(" {}", to_string(isa));
  fmt::print(" (active: {})\n\n", to_string(active_isa()));

  for (std::size_t bytes : o.sizes) {
    const double t_budget = o.seconds;
    // References first and last, keeping the faster: the machine is shared, so a reference
    // slowed by a neighbour would flatter every kernel.
    auto measure_refs = [&] {
      fill(DataType::f32, a.p, bytes / 4, 1);
      fill(DataType::f32, b.p, bytes / 4, 2);
      const double t_copy = best_time([&] { std::memcpy(d.p, a.p, bytes); }, t_budget);
      const double t_add = best_time(
          [&] {
            add_stream(reinterpret_cast<float*>(d.p), reinterpret_cast<const float*>(a.p),
                       reinterpret_cast<const float*>(b.p), bytes / 4);
          },
          t_budget);
      copy_ref[bytes] = std::max(copy_ref[bytes], 2.0 * bytes / t_copy / 1e9);
      std::byte* d16 = past_4k(d, a, 16);
      const double t_copy16 = best_time([&] { std::memcpy(d16, a.p, bytes); }, t_budget);
      copy16_ref[bytes] = std::max(copy16_ref[bytes], 2.0 * bytes / t_copy16 / 1e9);
      add_ref[bytes] = std::max(add_ref[bytes], 3.0 * bytes / t_add / 1e9);
    };
    measure_refs();

    auto record = [&](std::string kernel, Isa isa, double traffic, double t, bool vs_copy) {
      rows.push_back(
          {std::move(kernel), bytes, isa, traffic / t / 1e9, 0, vs_copy ? "copy" : "add"});
    };
    for (DataType t : o.types) {
      const std::size_t es = size_of(t), n = bytes / es;
      fill(t, a.p, n, 1);
      fill(t, b.p, n, 2);
      for (Isa isa : o.isas) {
        const KernelTable& k = kernels_for(isa);
        for (ReduceOp op : o.ops) {
          const ReduceFn fn = k.reduce_for(t, op);
          // Out of place, exactly the add stream's traffic (in place would skip the write's
          // read-for-ownership and flatter the kernel).
          const double tr = best_time([&] { fn(d.p, a.p, b.p, n); }, t_budget);
          record(fmt::format("{} {}", to_string(op), to_string(t)), isa, 3.0 * n * es, tr, false);
        }
        const ReduceCopyFn rc = k.reduce_copy_for(t, ReduceOp::sum);
        const double trc = best_time([&] { rc(d.p, c.p, a.p, b.p, n); }, t_budget);
        record(fmt::format("sum+copy {}", to_string(t)), isa, 4.0 * n * es, trc, false);
        if (is_floating(t)) {
          const DivideFn div = k.divide[KernelTable::index(t)];
          std::memcpy(d.p, a.p, bytes);
          const double td = best_time([&] { div(d.p, n, 1); }, t_budget);  // by 1: values stay put
          record(fmt::format("divide {}", to_string(t)), isa, 2.0 * n * es, td, false);
        }
      }
    }
    // The library's own copy (kernels/reduce.hpp), as % of memcpy: apart by a multiple of 4 KiB,
    // and 16 bytes past one, where memcpy's rep movsb slows down (the references line).
    for (Isa isa : o.isas) {
      const CopyFn copy = kernels_for(isa).copy;
      for (std::size_t distance : {0, 16}) {
        std::byte* to = past_4k(d, a, distance);
        const double tc = best_time([&] { copy(to, a.p, bytes); }, t_budget);
        record(distance ? "copy +16 past 4K" : "copy", isa, 2.0 * bytes, tc, true);
      }
    }
    // Conversions: `bytes` of f32 in or out.
    const std::size_t nf = bytes / 4;
    fill(DataType::f32, a.p, nf, 3);
    for (Isa isa : o.isas) {
      const KernelTable& k = kernels_for(isa);
      struct Conv {
        const char* name;
        ConvertFn fn;
      };
      const Conv narrow[] = {{"f32->bf16", k.f32_to_bf16}, {"f32->f16", k.f32_to_f16}};
      const Conv widen[] = {{"bf16->f32", k.bf16_to_f32}, {"f16->f32", k.f16_to_f32}};
      for (const Conv& cv : narrow) {
        const double tc = best_time([&] { cv.fn(a.p, d.p, nf); }, t_budget);
        record(cv.name, isa, 6.0 * nf, tc, true);
      }
      k.f32_to_bf16(a.p, b.p, nf);
      for (const Conv& cv : widen) {
        const double tc = best_time([&] { cv.fn(b.p, d.p, nf); }, t_budget);
        record(cv.name, isa, 6.0 * nf, tc, true);
      }
    }
    // The fused optimizer kernels on f32 arrays of `bytes` each: w, g, m, v (and u for LAMB).
    // Traffic per element: adam 4 reads + 3 writes, momentum 3 + 2, lamb direction 4 + 3,
    // apply 2 + 1, sum of squares 1 read.
    if (std::find(o.types.begin(), o.types.end(), DataType::f32) != o.types.end()) {
      float* w = reinterpret_cast<float*>(a.p);
      float* g = reinterpret_cast<float*>(b.p);
      float* m = reinterpret_cast<float*>(c.p);
      float* v = reinterpret_cast<float*>(d.p);
      float* u = reinterpret_cast<float*>(e.p);
      for (std::size_t i = 0; i < nf; ++i) w[i] = 0.5f, g[i] = 0.01f, m[i] = 0.0f, v[i] = 0.0f;
      for (Isa isa : o.isas) {
        const OptimizerKernels& k = kernels_for(isa).optimizer;
        // A zero learning rate keeps every value where it is, so repeated calls time the same work.
        AdamArgs adam;
        adam.lr = 0.0f;
        const MomentumArgs momentum{1.0f, 0.0f, 0.0f, 1.0f, 0.0f, false};
        const double ta = best_time([&] { k.adam(w, g, m, v, nf, adam); }, t_budget);
        record("adam f32", isa, 28.0 * nf, ta, false);
        const double tl = best_time([&] { k.lamb_direction(w, g, m, v, u, nf, adam); }, t_budget);
        record("lamb dir f32", isa, 28.0 * nf, tl, false);
        const double tm = best_time([&] { k.momentum(w, g, m, nf, momentum); }, t_budget);
        record("momentum f32", isa, 20.0 * nf, tm, false);
        const double tp = best_time([&] { k.apply(w, u, nf, 0.0f); }, t_budget);
        record("apply f32", isa, 12.0 * nf, tp, false);
        volatile double sink = 0;
        const double ts = best_time([&] { sink = sink + k.sum_squares(g, nf); }, t_budget);
        record("sumsq f32", isa, 4.0 * nf, ts, true);
      }
    }
    measure_refs();
  }

  for (Row& r : rows)
    r.pct = 100.0 * r.gbps / (r.ref == "copy" ? copy_ref[r.bytes] : add_ref[r.bytes]);

  fmt::print("references (best of two rounds):\n");
  for (std::size_t bytes : o.sizes)
    fmt::print(
        "  {:>5}  copy {:7.1f} GB/s   add stream {:7.1f} GB/s   (memcpy 16 bytes past 4 KiB "
        "apart: {:.1f} GB/s)\n",
        size_name(bytes), copy_ref[bytes], add_ref[bytes], copy16_ref[bytes]);

  // One line per kernel and size: each level's GB/s and % of its reference, then best / scalar.
  fmt::print("\n{:<16} {:>5}", "kernel", "size");
  for (Isa isa : o.isas) fmt::print(" {:>18}", fmt::format("{} GB/s (%ref)", to_string(isa)));
  fmt::print("  {:>4} {:>12}\n", "ref", "best/scalar");
  std::vector<std::pair<std::string, std::size_t>> keys;
  for (const Row& r : rows)
    if (std::find(keys.begin(), keys.end(), std::pair{r.kernel, r.bytes}) == keys.end())
      keys.emplace_back(r.kernel, r.bytes);
  for (const auto& [kernel, bytes] : keys) {
    fmt::print("{:<16} {:>5}", kernel, size_name(bytes));
    double scalar = 0, best = 0;
    std::string ref;
    for (Isa isa : o.isas)
      for (const Row& r : rows)
        if (r.kernel == kernel && r.bytes == bytes && r.isa == isa) {
          fmt::print(" {:>18}", fmt::format("{:.1f} ({:.0f}%)", r.gbps, r.pct));
          if (isa == Isa::scalar) scalar = r.gbps;
          best = std::max(best, r.gbps);
          ref = r.ref;
        }
    if (scalar > 0)
      fmt::print("  {:>4} {:>11.1f}x\n", ref, best / scalar);
    else
      fmt::print("  {:>4} {:>12}\n", ref, "-");
  }
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "toroid-kernel-bench: {}\n", e.what());
  return 2;
}
