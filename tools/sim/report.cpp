#include "sim/report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "model/sim_limit.hpp"

namespace toroid::sim_cli {

std::string link_name(const Torus& t, int link) {
  if (link < 0) return "-";
  const int per = model::directions_per_chip(t), dir = link % per;
  return fmt::format("{}{}{}", link / per, dir % 2 ? '-' : '+', "xyzwvu"[dir / 2]);
}

namespace {

// The model's per-dimension figures joined by `sep` ("80/80"), scaled.
std::string per_dimension(const CommandLine& o, const model::PerDimension& v, double scale,
                          std::string_view sep) {
  std::string out;
  for (int d = 0; d < std::max(2, o.model.topology.dimensions()); ++d)
    out += fmt::format("{}{:g}", d ? sep : "", v[static_cast<std::size_t>(d)] * scale);
  return out;
}

std::string model_line(const CommandLine& o) {
  const auto& m = o.model;
  std::string axes;
  for (int d = 0; d < std::max(2, m.topology.dimensions()); ++d) {
    if (d) axes += '/';
    axes += "xyzwvu"[d];
  }
  return fmt::format(
      "preset {}  topology {}{}  link {} GB/s ({})  hop {} us  reduce {:g} GB/s  segment {}  dtype "
      "{}",
      o.preset, m.topology.to_string(),
      o.axes ? fmt::format("  along {} (sub-tori {})", o.axes->to_string(),
                           m.topology.along(*o.axes).to_string())
             : "",
      per_dimension(o, m.link_bytes_per_s, 1e-9, "/"), axes,
      per_dimension(o, m.hop_latency_s, 1e6, "/"), m.reduce_bytes_per_s / 1e9, m.segment_bytes,
      to_string(o.type));
}

// Errors on one line without quotes, so CSV and JSON stay valid.
std::string flat(std::string s) {
  for (char& c : s) {
    if (c == '\n') c = ';';
    if (c == '"' || c == '\\') c = '\'';
  }
  return s;
}

std::uint64_t max_link_bytes(const model::SimResult& r) {
  return r.link_bytes.empty() ? 0 : *std::max_element(r.link_bytes.begin(), r.link_bytes.end());
}

}  // namespace

std::string Row::name() const {
  return algo == Algorithm::automatic ? fmt::format("auto:{}", to_string(picked))
                                      : std::string(to_string(algo));
}

void write_links_header(std::FILE* f, const CommandLine& o) {
  const Torus2D t = *o.model.topology.as_torus2d();  // checked by parse_options
  fmt::print(f, "# topology {} wrap_x {} wrap_y {}\n", t.to_string(), t.wraps(Axis::x) ? 1 : 0,
             t.wraps(Axis::y) ? 1 : 0);
  fmt::print(f, "op,algo,bytes,x,y,dir,link_bytes,busy_s,util\n");
}

void write_links(std::FILE* f, const CommandLine& o, const Row& r) {
  static constexpr const char* dirs[] = {"+x", "-x", "+y", "-y"};
  const model::SimResult& s = r.result;
  const Torus2D t = *o.model.topology.as_torus2d();
  for (std::size_t l = 0; l < s.link_bytes.size(); ++l) {
    const Coord c = t.coord_of(static_cast<int>(l / 4));
    fmt::print(f, "{},{},{},{},{},{},{},{:.9g},{:.4f}\n", to_string(r.op), r.name(), r.bytes, c.x,
               c.y, dirs[l % 4], s.link_bytes[l], s.link_busy_s[l],
               s.time_s > 0 ? s.link_busy_s[l] / s.time_s : 0.0);
  }
}

void Report::begin() {
  if (o_.format == "json") {
    const auto& m = o_.model;
    fmt::print(out_,
               "{{\n  \"model\": {{\"preset\": \"{}\", \"topology\": \"{}\", \"link_gbps\": [{}], "
               "\"hop_us\": [{}], "
               "\"reduce_gbps\": {}, \"segment_bytes\": {}, \"dtype\": \"{}\", \"link_sharing\": "
               "\"processor_sharing\"}},\n  \"rows\": [",
               o_.preset, m.topology.to_string(), per_dimension(o_, m.link_bytes_per_s, 1e-9, ", "),
               per_dimension(o_, m.hop_latency_s, 1e6, ", "), m.reduce_bytes_per_s / 1e9,
               m.segment_bytes, to_string(o_.type));
    return;
  }
  fmt::print(out_, "# toroid-sim  {}\n", model_line(o_));
  fmt::print(
      out_,
      "# time = last chip's finish; busiest = link dir (chip, direction) with the most busy time; "
      "util = its busy time / time\n"
      "# bound = bandwidth bound, floor = diameter x hop latency, reduce = reduction bound, "
      "ports = port bound (the chip with the fewest links), distance = a chip's ports and how far "
      "its data must still go, of_limit = max(bound, floor, reduce, ports, distance) / time "
      "(docs/simulator.md)\n"
      "# ran (sim_ranks) = chips simulated: one per class of chips whose schedules are moved "
      "copies of each other, or every chip (--symmetry)\n");
  if (o_.format == "csv")
    fmt::print(
        out_,
        "op,algo,bytes,count,time_us,bound_us,floor_us,reduce_us,ports_us,distance_us,of_limit,"
        "algbw,busbw,"
        "busiest_link,"
        "busiest_util,max_link_bytes,phases,transfers,max_hops,sim_s,sim_ranks,error\n");
  else
    fmt::print(
        out_,
        "{:<15}{:<14}{:>12}{:>14}{:>12}{:>10}{:>11}{:>11}{:>13}{:>9}{:>10}{:>10}{:>14}{:>7}{:"
        ">8}{:>6}{:>8}{:>7}"
        "\n",
        "op", "algo", "bytes", "time(us)", "bound(us)", "floor(us)", "reduce(us)", "ports(us)",
        "distance(us)", "of_limit", "algbw", "busbw", "busiest", "util", "phases", "hops", "sim(s)",
        "ran");
}

void Report::row(const Row& r) {
  const model::SimResult& s = r.result;
  const std::uint64_t count = r.bytes / size_of(o_.type);
  const model::SimLimit limit =
      model::limit_of(o_.axes ? model::model_along(o_.model, *o_.axes) : o_.model, r.op, r.bytes);
  const double bound_us = limit.bandwidth_s * 1e6, floor_us = limit.latency_s * 1e6,
               reduce_us = limit.reduction_s * 1e6, ports_us = limit.port_s * 1e6,
               distance_us = limit.distance_s * 1e6;
  const double of_limit = s.time_s > 0 ? limit.limit_s() / s.time_s : 0.0;
  if (o_.format == "json") {
    fmt::print(
        out_,
        "{}\n    {{\"op\": \"{}\", \"algo\": \"{}\", \"bytes\": {}, \"count\": {}, \"time_us\": "
        "{:.4f}, \"bound_us\": {:.4f}, \"floor_us\": {:.4f}, \"reduce_us\": {:.4f}, "
        "\"ports_us\": {:.4f}, \"distance_us\": {:.4f}, \"of_limit\": {:.4f}, "
        "\"algbw\": {:.4f}, \"busbw\": {:.4f}, \"busiest_link\": \"{}\", \"busiest_util\": {:.4f}, "
        "\"max_link_bytes\": {}, \"phases\": {}, \"transfers\": {}, \"max_hops\": {}, \"sim_s\": "
        "{:.3f}, \"sim_ranks\": {}, "
        "\"error\": \"{}\"",
        first_ ? "" : ",", to_string(r.op), r.name(), r.bytes, count, s.time_s * 1e6, bound_us,
        floor_us, reduce_us, ports_us, distance_us, of_limit, s.algbw_gbps, s.busbw_gbps,
        link_name(o_.model.topology, s.busiest_link), s.busiest_utilisation, max_link_bytes(s),
        s.rank0_phases.size(), s.transfers, s.max_hops, r.wall_s, s.simulated_ranks, flat(s.error));
    if (o_.phases) {
      fmt::print(out_, ", \"rank0_phases\": [");
      for (std::size_t i = 0; i < s.rank0_phases.size(); ++i)
        fmt::print(out_, "{}[{}, {:.4f}, {:.4f}]", i ? ", " : "", s.rank0_phases[i].phase,
                   s.rank0_phases[i].start_s * 1e6, s.rank0_phases[i].end_s * 1e6);
      fmt::print(out_, "]");
    }
    fmt::print(out_, "}}");
    first_ = false;
    return;
  }
  if (o_.format == "csv") {
    fmt::print(out_,
               "{},{},{},{},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{},{:."
               "4f},{},{},"
               "{},{},{:.3f},{},\"{}\"\n",
               to_string(r.op), r.name(), r.bytes, count, s.time_s * 1e6, bound_us, floor_us,
               reduce_us, ports_us, distance_us, of_limit, s.algbw_gbps, s.busbw_gbps,
               link_name(o_.model.topology, s.busiest_link), s.busiest_utilisation,
               max_link_bytes(s), s.rank0_phases.size(), s.transfers, s.max_hops, r.wall_s,
               s.simulated_ranks, flat(s.error));
  } else {
    fmt::print(
        out_,
        "{:<15}{:<14}{:>12}{:>14.2f}{:>12.2f}{:>10.2f}{:>11.2f}{:>11.2f}{:>13.2f}{:>9.3f}{:>10.2f}"
        "{:>10.2f}{:>14}{:>7.2f}{:>8}{:>6}{:>8.2f}{:>7}\n",
        to_string(r.op), r.name(), r.bytes, s.time_s * 1e6, bound_us, floor_us, reduce_us, ports_us,
        distance_us, of_limit, s.algbw_gbps, s.busbw_gbps,
        link_name(o_.model.topology, s.busiest_link), s.busiest_utilisation, s.rank0_phases.size(),
        s.max_hops, r.wall_s, s.simulated_ranks);
    if (!s.error.empty()) fmt::print(out_, "  error: {}\n", s.error);
  }
  if (o_.phases && o_.format != "json") {
    for (const auto& p : s.rank0_phases)
      fmt::print(out_, "#   rank 0 phase {:>5}: {:>14.3f} .. {:>14.3f} us ({:.3f} us)\n", p.phase,
                 p.start_s * 1e6, p.end_s * 1e6, (p.end_s - p.start_s) * 1e6);
  }
}

void Report::end() {
  if (o_.format == "json") fmt::print(out_, "\n  ]\n}}\n");
}

}  // namespace toroid::sim_cli
