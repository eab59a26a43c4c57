// "4096", "4K", "256M", "1G" -> bytes (binary multiples).
#pragma once

#include <cstdint>
#include <string_view>

namespace toroid {

// Throws InvalidArgument "<what>: '<text>' is not a size (...)" on bad text or overflow.
std::uint64_t parse_size(std::string_view text, std::string_view what);

}  // namespace toroid
