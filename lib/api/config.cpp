#include "api/config.hpp"

#include <cstdlib>
#include <string>

#include "core/parse_size.hpp"
#include "toroid/error.hpp"

namespace toroid::api {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

std::size_t checked_segment(std::uint64_t bytes, const std::string& what) {
  if (bytes < 64 || bytes > (1ull << 30))
    throw InvalidArgument(what + ": segment size " + std::to_string(bytes) +
                          " bytes is outside [64, 1G]");
  return static_cast<std::size_t>(bytes);
}

}  // namespace

Config resolve_config(const Options& options) {
  Config c;
  if (!options.topology.empty()) c.topology = options.topology;
  else if (const char* v = env("TOROID_TOPOLOGY")) c.topology = v;

  if (options.algorithm) {
    c.algorithm = *options.algorithm;
  } else if (const char* v = env("TOROID_ALGO")) {
    try {
      c.algorithm = parse_algorithm(v);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(std::string("TOROID_ALGO: ") + e.what());
    }
  }

  if (options.segment_bytes != 0) c.segment_bytes = checked_segment(options.segment_bytes, "Options::segment_bytes");
  else if (const char* v = env("TOROID_SEGMENT_BYTES"))
    c.segment_bytes = checked_segment(parse_size(v, "TOROID_SEGMENT_BYTES"), "TOROID_SEGMENT_BYTES");

  if (options.check) {
    c.check = *options.check;
  } else if (const char* v = env("TOROID_CHECK")) {
    const std::string s = v;
    if (s == "1" || s == "on") c.check = true;
    else if (s == "0" || s == "off") c.check = false;
    else throw InvalidArgument("TOROID_CHECK: '" + s + "' is not 0, 1, on or off");
  }
  if (options.timeout_seconds) {
    c.timeout_s = *options.timeout_seconds;
  } else if (const char* v = env("TOROID_TIMEOUT")) {
    char* end = nullptr;
    c.timeout_s = std::strtod(v, &end);
    if (end == v || *end != '\0' || !(c.timeout_s >= 0) || c.timeout_s > 1e6)
      throw InvalidArgument(std::string("TOROID_TIMEOUT: '") + v + "' is not a number of seconds in [0, 1e6]");
  }
  if (c.timeout_s < 0) throw InvalidArgument("Options::timeout_seconds must not be negative");
  if (!options.nodes.empty()) c.nodes = options.nodes;
  else if (const char* v = env("TOROID_NODES")) c.nodes = v;
  return c;
}

}  // namespace toroid::api
