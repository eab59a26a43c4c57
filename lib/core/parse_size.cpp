#include "core/parse_size.hpp"

#include <charconv>
#include <string>

#include "toroid/error.hpp"

namespace toroid {

std::uint64_t parse_size(std::string_view text, std::string_view what) {
  auto bad = [&](std::string_view why) -> std::uint64_t {
    throw InvalidArgument(std::string(what) + ": '" + std::string(text) + "' is not a size (" +
                          std::string(why) + "; expected e.g. 4096, 64K, 16M, 1G)");
  };
  if (!text.empty() && text.front() == '-') return bad("a size cannot be negative");
  std::uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p == text.data()) return bad("no number");
  std::uint64_t mult = 1;
  const std::string_view suffix(p, static_cast<std::size_t>(end - p));
  if (suffix == "" || suffix == "B")
    mult = 1;
  else if (suffix == "K" || suffix == "k" || suffix == "KiB")
    mult = 1ull << 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB")
    mult = 1ull << 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB")
    mult = 1ull << 30;
  else
    return bad("unknown suffix '" + std::string(suffix) + "'");
  if (v > UINT64_MAX / mult) return bad("too large");
  return v * mult;
}

}  // namespace toroid
