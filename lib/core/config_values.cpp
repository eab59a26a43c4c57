#include "core/config_values.hpp"

#include <charconv>
#include <string>

#include "core/parse_size.hpp"
#include "toroid/error.hpp"

namespace toroid {
namespace {

[[noreturn]] void bad(std::string_view what, std::string_view text, std::string_view why) {
  throw InvalidArgument(std::string(what) + ": '" + std::string(text) + "' " + std::string(why));
}

}  // namespace

bool parse_switch(std::string_view text, std::string_view what) {
  if (text == "1" || text == "on") return true;
  if (text == "0" || text == "off") return false;
  bad(what, text, "is not 0, 1, on or off");
}

bool parse_log(std::string_view text, std::string_view what) {
  if (text == "info") return true;
  if (text == "off") return false;
  bad(what, text, "is not off or info");
}

double parse_seconds(std::string_view text, std::string_view what) {
  // from_chars rather than strtod: no locale, no leading blanks, and the whole text must be the
  // number (strtod would stop at an embedded NUL and call the rest parsed).
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !(v >= 0) || v > kMaxTimeoutSeconds)
    bad(what, text, "is not a number of seconds in [0, 1e6]");
  return v;
}

std::size_t checked_segment_bytes(std::uint64_t bytes, std::string_view what) {
  if (bytes < kMinSegmentBytes || bytes > kMaxSegmentBytes)
    throw InvalidArgument(std::string(what) + ": segment size " + std::to_string(bytes) +
                          " bytes is outside [64, 1G]");
  return static_cast<std::size_t>(bytes);
}

std::size_t parse_segment_bytes(std::string_view text, std::string_view what) {
  return checked_segment_bytes(parse_size(text, what), what);
}

std::vector<int> parse_node_counts(std::string_view text, std::string_view what) {
  std::vector<int> counts;
  long long total = 0;
  // Every comma separates two items, so "3,", ",3" and "3,,2" have an empty item and fail.
  for (std::size_t start = 0;;) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item =
        text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    int v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || v < 1)
      bad(what, text, "has '" + std::string(item) + "', which is not a positive rank count");
    total += v;
    if (total > kMaxRanks) bad(what, text, "adds up to more than 16M ranks");
    counts.push_back(v);
    if (comma == std::string_view::npos) return counts;
    start = comma + 1;
  }
}

}  // namespace toroid
