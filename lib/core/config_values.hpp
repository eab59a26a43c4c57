// Text -> value for the TOROID_* settings that are not a topology, an algorithm name or an ISA
// level. Pure functions (no MPI, no environment): the configuration and node discovery call them,
// and the fuzzers drive them directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace toroid {

// Every function throws InvalidArgument whose message starts with `what` and quotes the text.

// "1"/"on" -> true, "0"/"off" -> false (TOROID_CHECK).
bool parse_switch(std::string_view text, std::string_view what);

// "info" -> true (rank 0 says what auto and the preload choose), "off" -> false (TOROID_LOG).
bool parse_log(std::string_view text, std::string_view what);

// Seconds in [0, 1e6], decimal or exponent notation (TOROID_TIMEOUT); 0 means off.
double parse_seconds(std::string_view text, std::string_view what);
inline constexpr double kMaxTimeoutSeconds = 1e6;

// Pipelining segment: a size (parse_size) within [kMinSegmentBytes, kMaxSegmentBytes].
std::size_t parse_segment_bytes(std::string_view text, std::string_view what);
std::size_t checked_segment_bytes(std::uint64_t bytes, std::string_view what);
inline constexpr std::uint64_t kMinSegmentBytes = 64;
inline constexpr std::uint64_t kMaxSegmentBytes = 1ull << 30;

// Emulated node sizes "3,2,3": every item a positive rank count, at most kMaxRanks in
// all (TOROID_NODES). Empty text is an error here; callers treat an unset variable separately.
std::vector<int> parse_node_counts(std::string_view text, std::string_view what);
// The most ranks toroid takes anywhere: the largest torus a topology may name, and the most
// TOROID_NODES may add up to (16M chips).
inline constexpr int kMaxRanks = 1 << 24;

}  // namespace toroid
