#include "exec/tuning.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <sstream>

#include "toroid/error.hpp"

namespace toroid::exec {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view to_string(LinkClass c) noexcept {
  switch (c) {
    case LinkClass::shm:
      return "shm";
    case LinkClass::mpi:
      return "mpi";
    case LinkClass::network:
      return "network";
  }
  return "?";
}

Tuning default_tuning() {
  Tuning t;
  t[LinkClass::shm] = LinkParams{0.35e-6, 8.5e9};
  t[LinkClass::mpi] = LinkParams{0.75e-6, 6.8e9};
  t[LinkClass::network] = LinkParams{30e-6, 0.12e9};
  t.reduce_bytes_per_s = 7.5e9;
  return t;
}

Tuning parse_tuning(std::string_view text, std::string_view source) {
  Tuning t;
  t.source = std::string(source);
  t.links = {};
  bool header = false, reduce = false;
  std::array<int, kLinkClasses> alpha_line{}, bw_line{};
  int n = 0;
  auto fail = [&](const std::string& why) {
    throw InvalidArgument(fmt::format("tuning file {}:{}: {}", source, n, why));
  };
  std::istringstream in{std::string(text)};
  for (std::string raw; std::getline(in, raw);) {
    ++n;
    std::string_view line = raw;
    if (const auto hash = line.find('#'); hash != std::string_view::npos)
      line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    if (!header) {
      if (line != "toroid-tuning 1")
        fail(fmt::format("'{}' is not the header 'toroid-tuning 1' (a file written by toroid-tune)",
                         line));
      header = true;
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) fail(fmt::format("'{}' is not 'key = value'", line));
    const std::string_view key = trim(line.substr(0, eq)), text_value = trim(line.substr(eq + 1));
    if (key == "network.links") {
      if (text_value != "switch" && text_value != "torus")
        fail(fmt::format("network.links: '{}' is not switch or torus", text_value));
      t.network_torus = text_value == "torus";
      continue;
    }
    double v = 0;
    const auto [end, ec] =
        std::from_chars(text_value.data(), text_value.data() + text_value.size(), v);
    if (ec != std::errc() || end != text_value.data() + text_value.size() || !std::isfinite(v))
      fail(fmt::format("{}: '{}' is not a number", key, text_value));
    if (key == "reduce.gbps") {
      if (!(v > 0)) fail(fmt::format("reduce.gbps must be positive, is {}", text_value));
      t.reduce_bytes_per_s = v * 1e9;
      reduce = true;
      continue;
    }
    const auto dot = key.find('.');
    const std::string_view cls = key.substr(0, dot),
                           field = dot == std::string_view::npos ? "" : key.substr(dot + 1);
    int c = -1;
    for (int i = 0; i < kLinkClasses; ++i)
      if (cls == to_string(static_cast<LinkClass>(i))) c = i;
    if (c < 0 || (field != "alpha_us" && field != "gbps"))
      fail(
          fmt::format("unknown key '{}' (expected shm|mpi|network.alpha_us, shm|mpi|network.gbps, "
                      "network.links, reduce.gbps)",
                      key));
    auto& p = t.links[static_cast<std::size_t>(c)];
    if (!p) p = LinkParams{-1, -1};
    if (field == "alpha_us") {
      if (v < 0) fail(fmt::format("{} must not be negative, is {}", key, text_value));
      p->alpha_s = v * 1e-6;
      alpha_line[static_cast<std::size_t>(c)] = n;
    } else {
      if (!(v > 0)) fail(fmt::format("{} must be positive, is {}", key, text_value));
      p->bytes_per_s = v * 1e9;
      bw_line[static_cast<std::size_t>(c)] = n;
    }
  }
  if (!header) fail("empty: no 'toroid-tuning 1' header");
  if (!reduce) fail("no reduce.gbps");
  for (int c = 0; c < kLinkClasses; ++c) {
    const auto name = to_string(static_cast<LinkClass>(c));
    const auto i = static_cast<std::size_t>(c);
    if (alpha_line[i] && !bw_line[i]) fail(fmt::format("{}.alpha_us without {}.gbps", name, name));
    if (bw_line[i] && !alpha_line[i]) fail(fmt::format("{}.gbps without {}.alpha_us", name, name));
  }
  return t;
}

std::string format_tuning(const Tuning& t, std::string_view header) {
  std::string out;
  std::istringstream in{std::string(header)};
  for (std::string line; std::getline(in, line);) out += "# " + line + "\n";
  out += "toroid-tuning 1\n";
  for (int c = 0; c < kLinkClasses; ++c) {
    const auto& p = t.links[static_cast<std::size_t>(c)];
    if (!p) continue;
    const auto name = to_string(static_cast<LinkClass>(c));
    out += fmt::format("{}.alpha_us = {:.4g}\n{}.gbps = {:.4g}\n", name, p->alpha_s * 1e6, name,
                       p->bytes_per_s / 1e9);
  }
  if (t.network_torus) out += "network.links = torus\n";
  out += fmt::format("reduce.gbps = {:.4g}\n", t.reduce_bytes_per_s / 1e9);
  return out;
}

}  // namespace toroid::exec
