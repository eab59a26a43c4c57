// Instruction-set levels the kernels are built for, and which one this process runs.
#pragma once

#include <cstdint>
#include <string_view>

namespace toroid::kernels {

// Ordered: each level needs everything the one before it needs.
enum class Isa : std::uint8_t { scalar, avx2, avx512 };
inline constexpr Isa kAllIsas[] = {Isa::scalar, Isa::avx2, Isa::avx512};

std::string_view to_string(Isa isa) noexcept;
// What the CPU (and OS) supports and this build carries; scalar is always true.
bool isa_supported(Isa isa) noexcept;
// The best supported level.
Isa best_isa() noexcept;
// The level for a TOROID_ISA value: empty or "auto" gives best_isa(); otherwise the named level.
// Throws InvalidArgument for an unknown name or a level the CPU lacks. `supported` is a bit mask
// (1 << Isa) of usable levels: the real one by default, a made-up one in tests.
Isa select_isa(std::string_view env_value, unsigned supported);
Isa select_isa(std::string_view env_value);
// select_isa(TOROID_ISA), decided on the first call and kept for the life of the process.
Isa active_isa();

}  // namespace toroid::kernels
