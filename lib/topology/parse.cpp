// Text form of a topology: "XxY" with an optional ":wrap=xy|x|y|none".
#include <algorithm>
#include <charconv>
#include <string>

#include "core/config_values.hpp"
#include "toroid/error.hpp"
#include "toroid/topology.hpp"

namespace toroid {
namespace {

[[noreturn]] void bad(std::string_view text, std::string_view why) {
  throw TopologyError("invalid topology '" + std::string(text) + "': " + std::string(why) +
                      " (expected XxY, e.g. 4x2, optionally :wrap=xy|x|y|none, or auto)");
}

int parse_dim(std::string_view all, std::string_view part, const char* which) {
  int v = 0;
  const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
  if (part.empty() || ec != std::errc() || end != part.data() + part.size())
    bad(all, std::string(which) + " dimension '" + std::string(part) + "' is not an integer");
  if (v < 1) bad(all, std::string(which) + " dimension must be at least 1");
  return v;
}

}  // namespace

Torus2D Torus2D::parse(std::string_view text) {
  std::string_view shape = text;
  bool wrap_x = true, wrap_y = true;
  if (const auto colon = text.find(':'); colon != std::string_view::npos) {
    shape = text.substr(0, colon);
    const std::string_view opt = text.substr(colon + 1);
    if (opt == "wrap=xy" || opt == "wrap=yx") {
    } else if (opt == "wrap=x") {
      wrap_y = false;
    } else if (opt == "wrap=y") {
      wrap_x = false;
    } else if (opt == "wrap=none") {
      wrap_x = wrap_y = false;
    } else {
      bad(text, "unknown option '" + std::string(opt) + "'");
    }
  }
  const auto sep = shape.find('x');
  if (sep == std::string_view::npos) bad(text, "missing 'x' between the dimensions");
  if (const std::size_t more = std::count(shape.begin(), shape.end(), 'x'); more > 1)
    bad(text, std::to_string(more + 1) +
                  " dimensions: a Torus2D has two (toroid::Torus::parse takes 1 to 6, as "
                  "Options::topology and TOROID_TOPOLOGY do)");
  const int x = parse_dim(text, shape.substr(0, sep), "X");
  const int y = parse_dim(text, shape.substr(sep + 1), "Y");
  if (static_cast<long long>(x) * y > kMaxRanks) bad(text, "more than 16M chips");
  return Torus2D(x, y, wrap_x, wrap_y);
}

}  // namespace toroid
