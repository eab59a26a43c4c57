#include "pmpi/settings.hpp"

#include <cstdlib>
#include <string_view>

#include "core/parse_size.hpp"
#include "toroid/error.hpp"

namespace toroid::pmpi {
namespace {

std::string_view env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

Settings read_settings() {
  Settings s;
  try {
    if (const std::string_view v = env("TOROID_MIN_BYTES"); !v.empty()) s.min_bytes = parse_size(v, "TOROID_MIN_BYTES");
    const std::string_view log = env("TOROID_LOG");
    if (log == "info") s.log_info = true;
    else if (!log.empty() && log != "off")
      throw InvalidArgument("TOROID_LOG: '" + std::string(log) + "' is not off or info");
  } catch (const Error& e) {
    s.error = e.what();
    s.min_bytes = 0;
  }
  return s;
}

}  // namespace

const Settings& settings() {
  static const Settings s = read_settings();
  return s;
}

}  // namespace toroid::pmpi
