#include "model/tuning.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "toroid/error.hpp"

namespace toroid::model {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// A size as parse_size reads it back: "48", "3K", "96M" (exact multiples only).
std::string size_token(std::uint64_t b) {
  if (b >= (1u << 30) && b % (1u << 30) == 0) return fmt::format("{}G", b >> 30);
  if (b >= (1u << 20) && b % (1u << 20) == 0) return fmt::format("{}M", b >> 20);
  if (b >= (1u << 10) && b % (1u << 10) == 0) return fmt::format("{}K", b >> 10);
  return std::to_string(b);
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
    if (line.starts_with("choose ")) {
      // "choose <layout> = <rules>": the rules hold '=' too, so the first " = " splits.
      const auto sep = line.find(" = ");
      if (sep == std::string_view::npos)
        fail(fmt::format("'{}' is not 'choose <layout> = <rules>'", line));
      MeasuredChoices m;
      m.layout = std::string(trim(line.substr(7, sep - 7)));
      if (m.layout.empty()) fail(fmt::format("'{}' names no layout", line));
      try {
        m.rules = parse_algorithm_rules(trim(line.substr(sep + 3)));
      } catch (const InvalidArgument& e) {
        fail(fmt::format("choose {}: {}", m.layout, e.what()));
      }
      auto same = std::find_if(t.choices.begin(), t.choices.end(),
                               [&](const MeasuredChoices& o) { return o.layout == m.layout; });
      if (same == t.choices.end()) {
        t.choices.push_back(std::move(m));
        continue;
      }
      // Several lines for one layout (one per collective) join; a collective twice is an error.
      for (const AlgorithmRule& r : m.rules)
        for (const AlgorithmRule& o : same->rules)
          if (o.collective == r.collective && r.low < o.high && o.low < r.high)
            fail(fmt::format("choose {}: '{}' overlaps '{}' of an earlier line", m.layout, r.text,
                             o.text));
      same->rules.insert(same->rules.end(), m.rules.begin(), m.rules.end());
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
  // One line per layout and collective, its ranges in order ("allreduce:0-48=mpi,48-3K=...").
  for (const MeasuredChoices& m : t.choices)
    for (Collective c : kRuleCollectives) {
      std::vector<const AlgorithmRule*> mine;
      for (const AlgorithmRule& r : m.rules)
        if (r.collective == c) mine.push_back(&r);
      if (mine.empty()) continue;
      std::sort(mine.begin(), mine.end(),
                [](const AlgorithmRule* a, const AlgorithmRule* b) { return a->low < b->low; });
      std::string ranges;
      for (const AlgorithmRule* r : mine)
        ranges += fmt::format("{}{}-{}={}", ranges.empty() ? "" : ",", size_token(r->low),
                              r->high == kRuleNoEnd ? std::string("inf") : size_token(r->high),
                              to_string(r->algorithm));
      out += fmt::format("choose {} = {}:{}\n", m.layout, to_string(c), ranges);
    }
  return out;
}

const std::vector<AlgorithmRule>* Tuning::choices_for(std::string_view layout) const noexcept {
  for (const MeasuredChoices& m : choices)
    if (m.layout == layout) return &m.rules;
  return nullptr;
}

}  // namespace toroid::model
