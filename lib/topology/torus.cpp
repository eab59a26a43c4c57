#include "toroid/torus.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <deque>

#include "core/config_values.hpp"
#include "toroid/error.hpp"

namespace toroid {
namespace {

constexpr char kNames[] = "xyzwvu";

// The twist's short and long sizes when `sizes` has one: 3D, sizes k and 2k only, both present.
std::optional<int> twist_short_size(const std::vector<int>& sizes) {
  if (sizes.size() != 3) return std::nullopt;
  const int k = *std::min_element(sizes.begin(), sizes.end());
  bool has_long = false;
  for (int s : sizes) {
    if (s != k && s != 2 * k) return std::nullopt;
    has_long = has_long || s == 2 * k;
  }
  if (!has_long || k < 2) return std::nullopt;
  return k;
}

}  // namespace

Torus::Torus(std::vector<int> sizes, std::vector<bool> wraps, bool twisted)
    : sizes_(std::move(sizes)), wraps_(std::move(wraps)), twisted_(twisted) {
  if (sizes_.empty() || sizes_.size() > static_cast<std::size_t>(kMaxDimensions))
    throw TopologyError(
        fmt::format("a torus has 1 to {} dimensions, not {}", kMaxDimensions, sizes_.size()));
  if (wraps_.empty()) wraps_.assign(sizes_.size(), true);
  if (wraps_.size() != sizes_.size())
    throw TopologyError(
        fmt::format("{} wraparound flags for {} dimensions", wraps_.size(), sizes_.size()));
  long long chips = 1;
  for (std::size_t d = 0; d < sizes_.size(); ++d) {
    if (sizes_[d] < 1)
      throw TopologyError(
          fmt::format("dimension {} ({}) has size {}; at least 1", d, kNames[d], sizes_[d]));
    chips *= sizes_[d];
    if (chips > kMaxRanks) throw TopologyError("a torus of more than 16M chips");
  }
  chips_ = static_cast<int>(chips);
  if (twisted_) {
    const bool all_wrap = std::all_of(wraps_.begin(), wraps_.end(), [](bool w) { return w; });
    if (!twist_short_size(sizes_) || !all_wrap)
      throw TopologyError(fmt::format(
          "{} cannot be twisted: a twisted torus is 3D with sizes k and 2k only (k x k x 2k or "
          "k x 2k x 2k, in any order), every dimension wrapping",
          Torus(sizes_, wraps_).to_string()));
  }
}

Torus::Torus(const Torus2D& t)
    : Torus({t.x_dim(), t.y_dim()}, {t.wraps(Axis::x), t.wraps(Axis::y)}) {}

std::vector<int> Torus::coord_of(int rank) const {
  if (rank < 0 || rank >= chips_)
    throw InvalidArgument(fmt::format("rank {} is not a chip of {}", rank, to_string()));
  std::vector<int> c(sizes_.size());
  for (std::size_t d = 0; d < sizes_.size(); ++d) {
    c[d] = rank % sizes_[d];
    rank /= sizes_[d];
  }
  return c;
}

int Torus::rank_of(std::span<const int> coord) const {
  if (coord.size() != sizes_.size())
    throw InvalidArgument(fmt::format("a coordinate of {} numbers for the {} dimensions of {}",
                                      coord.size(), sizes_.size(), to_string()));
  int rank = 0;
  for (std::size_t d = sizes_.size(); d-- > 0;) {
    if (coord[d] < 0 || coord[d] >= sizes_[d])
      throw InvalidArgument(
          fmt::format("coordinate {} along {} is outside {}", coord[d], kNames[d], to_string()));
    rank = rank * sizes_[d] + coord[d];
  }
  return rank;
}

std::optional<int> Torus::neighbour(int rank, int d, int direction) const {
  std::vector<int> c = coord_of(rank);
  const auto i = static_cast<std::size_t>(d);
  const int k = sizes_.at(i);
  if (k < 2 || (direction != 1 && direction != -1)) return std::nullopt;
  const int to = c[i] + direction;
  if (to >= 0 && to < k) {
    c[i] = to;
    return rank_of(c);
  }
  if (!wraps_[i]) return std::nullopt;
  c[i] = (to + k) % k;
  // A short dimension's wraparound lands half way round every long one (the header's picture).
  if (twisted_) {
    const int shorter = *twist_short_size(sizes_);
    if (k == shorter)
      for (std::size_t e = 0; e < sizes_.size(); ++e)
        if (sizes_[e] == 2 * shorter) c[e] = (c[e] + direction * shorter + sizes_[e]) % sizes_[e];
  }
  return rank_of(c);
}

bool Torus::adjacent(int a, int b) const {
  for (int d = 0; d < dimensions(); ++d)
    for (int dir : {1, -1})
      if (neighbour(a, d, dir) == b) return true;
  return false;
}

std::vector<int> Torus::line_through(int rank, int d) const {
  std::vector<int> c = coord_of(rank);
  const auto i = static_cast<std::size_t>(d);
  std::vector<int> line(static_cast<std::size_t>(sizes_.at(i)));
  for (int v = 0; v < sizes_[i]; ++v) {
    c[i] = v;
    line[static_cast<std::size_t>(v)] = rank_of(c);
  }
  return line;
}

bool Torus::ring_along(int d) const {
  const auto i = static_cast<std::size_t>(d);
  return wraps_.at(i) && !(twisted_ && sizes_[i] == *twist_short_size(sizes_));
}

std::vector<int> Torus::hops_from(int rank) const {
  std::vector<int> hops(static_cast<std::size_t>(chips_), -1);
  std::deque<int> next{rank};
  hops.at(static_cast<std::size_t>(rank)) = 0;
  while (!next.empty()) {
    const int r = next.front();
    next.pop_front();
    for (int d = 0; d < dimensions(); ++d)
      for (int dir : {1, -1})
        if (const auto n = neighbour(r, d, dir); n && hops[static_cast<std::size_t>(*n)] < 0) {
          hops[static_cast<std::size_t>(*n)] = hops[static_cast<std::size_t>(r)] + 1;
          next.push_back(*n);
        }
  }
  return hops;
}

int ports_along(int size, bool wraps, int x) noexcept {
  if (size < 2) return 0;
  if (size == 2) return 1;
  return wraps || (x > 0 && x < size - 1) ? 2 : 1;
}

int Torus::ports(int rank) const {
  int n = 0;
  for (int d = 0; d < dimensions(); ++d) n += ports(rank, d);
  return n;
}

int Torus::ports(int rank, int d) const {
  const auto i = static_cast<std::size_t>(d);
  // A twisted short dimension of 2: its wraparound leads to another row, a second port.
  if (twisted_ && sizes_.at(i) == 2 && !ring_along(d)) return 2;
  return ports_along(sizes_.at(i), wraps_[i], coord_of(rank)[i]);
}

Torus Torus::along(Axes axes) const {
  std::vector<int> sizes;
  std::vector<bool> wraps;
  for (int d = 0; d < dimensions(); ++d)
    if (axes.has(d)) {
      sizes.push_back(size(d));
      wraps.push_back(ring_along(d));
    }
  if (sizes.empty()) return Torus({1});
  return Torus(std::move(sizes), std::move(wraps));
}

std::vector<int> Torus::group_along(int rank, Axes axes) const {
  std::vector<int> c = coord_of(rank);
  std::vector<int> chosen;
  for (int d = 0; d < dimensions(); ++d)
    if (axes.has(d)) chosen.push_back(d);
  int members = 1;
  for (int d : chosen) members *= size(d);
  std::vector<int> group(static_cast<std::size_t>(members));
  for (int i = 0; i < members; ++i) {
    int rest = i;  // the member's coordinates along the chosen dimensions, the first fastest
    for (int d : chosen) {
      c[static_cast<std::size_t>(d)] = rest % size(d);
      rest /= size(d);
    }
    group[static_cast<std::size_t>(i)] = rank_of(c);
  }
  return group;
}

int Torus::position_along(int rank, Axes axes) const {
  const std::vector<int> c = coord_of(rank);
  int position = 0, stride = 1;
  for (int d = 0; d < dimensions(); ++d)
    if (axes.has(d)) {
      position += c[static_cast<std::size_t>(d)] * stride;
      stride *= size(d);
    }
  return position;
}

Axes Axes::parse(std::string_view text) {
  Axes out{};
  if (text.empty()) throw InvalidArgument("axes '': expected letters of x y z w v u, e.g. 'xz'");
  for (char ch : text) {
    const char* at = std::find(kNames, kNames + Torus::kMaxDimensions, ch);
    if (at == kNames + Torus::kMaxDimensions)
      throw InvalidArgument(fmt::format(
          "axes '{}': '{}' is not an axis; expected letters of x y z w v u, e.g. 'xz'", text, ch));
    const Axes one(static_cast<Axis>(at - kNames));
    if ((out.bits_ & one.bits_) != 0)
      throw InvalidArgument(fmt::format("axes '{}': '{}' appears twice", text, ch));
    out.bits_ |= one.bits_;
  }
  return out;
}

std::string Axes::to_string() const {
  std::string out;
  for (int d = 0; d < Torus::kMaxDimensions; ++d)
    if (has(d)) out += kNames[d];
  return out;
}

std::optional<Torus2D> Torus::as_torus2d() const {
  if (twisted_ || sizes_.size() > 2) return std::nullopt;
  if (sizes_.size() == 1) return Torus2D(sizes_[0], 1, wraps_[0], true);
  return Torus2D(sizes_[0], sizes_[1], wraps_[0], wraps_[1]);
}

std::string Torus::to_string() const {
  std::string s;
  for (std::size_t d = 0; d < sizes_.size(); ++d) {
    if (d) s += 'x';
    s += std::to_string(sizes_[d]);
  }
  std::string wrapping;
  for (std::size_t d = 0; d < sizes_.size(); ++d)
    if (wraps_[d]) wrapping += kNames[d];
  std::vector<std::string> options;
  if (wrapping.size() != sizes_.size())
    options.push_back("wrap=" + (wrapping.empty() ? std::string("none") : wrapping));
  if (twisted_) options.push_back("twist");
  for (std::size_t i = 0; i < options.size(); ++i) {
    s += i ? ',' : ':';
    s += options[i];
  }
  return s;
}

void Torus::require_size(int communicator_size) const {
  if (communicator_size != chips_)
    throw TopologyError(fmt::format("topology {} needs {} ranks, communicator has {}", to_string(),
                                    chips_, communicator_size));
}

namespace {

[[noreturn]] void bad_torus(std::string_view text, const std::string& why) {
  throw TopologyError(fmt::format(
      "invalid topology '{}': {} (expected sizes joined by 'x', 1 to {} of them, e.g. 4x2 or "
      "16x16x16, optionally :wrap=LETTERS|none and/or :twist, e.g. 128x32:wrap=y, 4x4x8:twist; or "
      "auto)",
      text, why, Torus::kMaxDimensions));
}

}  // namespace

Torus Torus::parse(std::string_view text) {
  const auto colon = text.find(':');
  const std::string_view shape = text.substr(0, colon);
  std::vector<int> sizes;
  for (std::size_t at = 0;;) {
    const std::size_t x = shape.find('x', at);
    const std::string_view part = shape.substr(at, x == std::string_view::npos ? x : x - at);
    if (sizes.size() == static_cast<std::size_t>(kMaxDimensions))
      bad_torus(text, fmt::format("more than {} dimensions", kMaxDimensions));
    int v = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size())
      bad_torus(text, fmt::format("{} dimension '{}' is not an integer",
                                  static_cast<char>(std::toupper(kNames[sizes.size()])), part));
    if (v < 1)
      bad_torus(text, fmt::format("{} dimension must be at least 1",
                                  static_cast<char>(std::toupper(kNames[sizes.size()]))));
    sizes.push_back(v);
    if (x == std::string_view::npos) break;
    at = x + 1;
  }
  std::vector<bool> wraps(sizes.size(), true);
  bool twisted = false, wrap_given = false;
  if (colon != std::string_view::npos) {
    std::string_view options = text.substr(colon + 1);
    for (;;) {
      const std::size_t comma = options.find(',');
      const std::string_view opt = options.substr(0, comma);
      if (opt == "twist") {
        twisted = true;
      } else if (opt.starts_with("wrap=") && !wrap_given) {
        wrap_given = true;
        const std::string_view letters = opt.substr(5);
        wraps.assign(sizes.size(), false);
        if (letters != "none") {
          if (letters.empty()) bad_torus(text, "wrap= names no dimension");
          for (char l : letters) {
            const std::string_view names(kNames, sizes.size());
            const std::size_t d = names.find(l);
            if (d == std::string_view::npos)
              bad_torus(text,
                        fmt::format("'{}' in wrap= is not one of its dimensions ({})", l, names));
            if (wraps[d]) bad_torus(text, fmt::format("'{}' named twice in wrap=", l));
            wraps[d] = true;
          }
        }
      } else {
        bad_torus(text, fmt::format("unknown option '{}'", opt));
      }
      if (comma == std::string_view::npos) break;
      options = options.substr(comma + 1);
    }
  }
  try {
    return Torus(std::move(sizes), std::move(wraps), twisted);
  } catch (const TopologyError& e) {
    bad_torus(text, e.what());
  }
}

}  // namespace toroid
