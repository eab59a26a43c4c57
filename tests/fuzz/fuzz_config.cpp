// The environment settings, as "NAME=value": ALGO, NODES, TIMEOUT, CHECK, SEGMENT. Each
// value parses to something valid that prints and re-parses to itself, or raises InvalidArgument.
#include <fmt/format.h>

#include <string>

#include "core/config_values.hpp"
#include "fuzz_check.hpp"
#include "toroid/algorithm.hpp"

namespace {

using namespace toroid;
using fuzz::require;

void algorithm(std::string_view v) {
  const Algorithm a = parse_algorithm(v);
  require(to_string(a) == v, "an algorithm parses from its own name only");
}

void nodes(std::string_view v) {
  const std::vector<int> counts = parse_node_counts(v, "TOROID_NODES");
  long long total = 0;
  for (int c : counts) total += c;
  require(!counts.empty() && total <= kMaxRanks, "node counts present and bounded");
  require(parse_node_counts(fmt::format("{}", fmt::join(counts, ",")), "TOROID_NODES") == counts,
          "printed node list re-parses to itself");
}

void timeout(std::string_view v) {
  const double s = parse_seconds(v, "TOROID_TIMEOUT");
  require(s >= 0 && s <= kMaxTimeoutSeconds, "timeout within range");
  require(parse_seconds(fmt::format("{}", s), "TOROID_TIMEOUT") == s, "printed seconds re-parse");
}

void check(std::string_view v) {
  const bool on = parse_switch(v, "TOROID_CHECK");
  require(parse_switch(on ? "on" : "off", "TOROID_CHECK") == on, "switch round trip");
}

void segment(std::string_view v) {
  const std::size_t b = parse_segment_bytes(v, "TOROID_SEGMENT_BYTES");
  require(b >= kMinSegmentBytes && b <= kMaxSegmentBytes, "segment within range");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::text_of(data, size);
  const std::size_t eq = text.find('=');
  if (eq == std::string_view::npos) return 0;
  const std::string_view name = text.substr(0, eq), value = text.substr(eq + 1);
  fuzz::expect_value_or_error([&] {
    if (name == "ALGO")
      algorithm(value);
    else if (name == "NODES")
      nodes(value);
    else if (name == "TIMEOUT")
      timeout(value);
    else if (name == "CHECK")
      check(value);
    else if (name == "SEGMENT")
      segment(value);
  });
  return 0;
}
