// Which kernels this process runs.
//
// Levels (kernels/isa.hpp), each a full table of kernels (kernels/table.hpp):
//   scalar  portable loops (scalar.cpp), built for the baseline ISA; always available and the
//           reference the others are tested against bit for bit.
//   avx2    256-bit AVX2 with F16C (f16 conversions) and FMA (avx2.cpp, built with
//           -mavx2 -mfma -mf16c). Haswell / Zen 1 and later.
//   avx512  512-bit AVX-512 F+BW+VL (avx512.cpp, built with -mavx512f -mavx512bw -mavx512vl):
//           masked tails, 16 f32 lanes. Skylake-SP / Zen 4 and later.
// The library itself is built without -march: only those two files carry ISA flags, and their
// code is reached solely through the tables below, after the CPU check. One build therefore
// runs on any x86-64; elsewhere the SIMD files compile to nothing and only scalar exists.
//
// The level is chosen once, on the first kernel lookup: the best the CPU (and OS, which must save
// the wider registers) supports, unless TOROID_ISA=scalar|avx2|avx512 forces one. Forcing a level
// the CPU lacks, or an unknown name, raises InvalidArgument; it never falls back silently.
#include <atomic>
#include <cstdlib>
#include <string>

#include "kernels/isa.hpp"
#include "kernels/table.hpp"
#include "toroid/error.hpp"
#include "toroid/settings.hpp"

namespace toroid::kernels {
namespace {

unsigned bit(Isa isa) { return 1u << static_cast<unsigned>(isa); }

bool cpu_has(Isa isa) noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  switch (isa) {
    case Isa::scalar:
      return true;
    case Isa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("f16c");
    case Isa::avx512:
      // libgcc's answers already include the OS check (XCR0 saves the ZMM state).
      return cpu_has(Isa::avx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  }
  return false;
#else
  return isa == Isa::scalar;
#endif
}

const KernelTable* built_table(Isa isa) {
  switch (isa) {
    case Isa::scalar:
      return &scalar_table();
    case Isa::avx2:
      return avx2_table();
    case Isa::avx512:
      return avx512_table();
  }
  return nullptr;
}

bool built(Isa isa) {
  switch (isa) {
    case Isa::scalar:
      return true;
    case Isa::avx2:
      return kAvx2Built;
    case Isa::avx512:
      return kAvx512Built;
  }
  return false;
}

unsigned supported_mask() {
  static const unsigned mask = [] {
    unsigned m = 0;
    for (Isa isa : kAllIsas)
      if (built(isa) && cpu_has(isa)) m |= bit(isa);
    return m;
  }();
  return mask;
}

std::string names(unsigned mask) {
  std::string s;
  for (Isa isa : kAllIsas)
    if (mask & bit(isa)) s += (s.empty() ? "" : ", ") + std::string(to_string(isa));
  return s;
}

}  // namespace

std::string_view to_string(Isa isa) noexcept {
  switch (isa) {
    case Isa::scalar:
      return "scalar";
    case Isa::avx2:
      return "avx2";
    case Isa::avx512:
      return "avx512";
  }
  return "?";
}

bool isa_supported(Isa isa) noexcept { return (supported_mask() & bit(isa)) != 0; }

Isa best_isa() noexcept {
  Isa best = Isa::scalar;
  for (Isa isa : kAllIsas)
    if (isa_supported(isa)) best = isa;
  return best;
}

Isa select_isa(std::string_view value, unsigned supported) {
  if (value.empty() || value == "auto") {
    Isa best = Isa::scalar;
    for (Isa isa : kAllIsas)
      if (supported & bit(isa)) best = isa;
    return best;
  }
  for (Isa isa : kAllIsas) {
    if (value != to_string(isa)) continue;
    if (!(supported & bit(isa)))
      throw InvalidArgument(
          "TOROID_ISA=" + std::string(value) +
          ": this CPU or build cannot run that level (available: " + names(supported) + ")");
    return isa;
  }
  throw InvalidArgument("TOROID_ISA='" + std::string(value) +
                        "' is not a kernel level (valid: auto, scalar, avx2, avx512)");
}

Isa select_isa(std::string_view value) { return select_isa(value, supported_mask()); }

Isa active_isa() {
  // A throwing initializer leaves the static unset, so every later call reports the bad value
  // again instead of running with some other level.
  static const Isa isa = [] {
    const char* env = setting_from_environment("TOROID_ISA");
    return select_isa(env ? env : "");
  }();
  return isa;
}

const KernelTable& kernels_for(Isa isa) {
  if (!isa_supported(isa))
    throw InvalidArgument(
        "kernel level " + std::string(to_string(isa)) +
        " is not available on this CPU or build (available: " + names(supported_mask()) + ")");
  return *built_table(isa);
}

namespace {
// Set once from TOROID_ISA on first use; use_isa() may switch it (benchmarks compare levels in
// one run). Relaxed ordering suffices: each value is a complete, immutable table.
std::atomic<const KernelTable*> current{nullptr};
}  // namespace

const KernelTable& active_kernels() {
  const KernelTable* t = current.load(std::memory_order_relaxed);
  if (!t) {
    t = &kernels_for(active_isa());
    current.store(t, std::memory_order_relaxed);
  }
  return *t;
}

void use_isa(Isa isa) { current.store(&kernels_for(isa), std::memory_order_relaxed); }

}  // namespace toroid::kernels
