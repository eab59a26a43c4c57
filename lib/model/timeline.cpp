#include "model/timeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "model/selector.hpp"

namespace toroid::model {
namespace {

std::string escaped(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
      continue;
    }
    out += c;
  }
  return out;
}

bool sends(std::string_view kind) { return kind == "send"; }
bool local(std::string_view kind) { return kind == "copy" || kind == "scale" || kind == "local"; }

// The step's channel, as its track is named.
std::string channel_name(const TraceStep& s) {
  if (local(s.kind)) return "local";
  return fmt::format("{} {} {} tag {}", sends(s.kind) ? "send" : "recv",
                     sends(s.kind) ? "->" : "<-", s.peer, s.tag);
}

}  // namespace

std::string chrome_trace_events(const RankTimeline& t) {
  std::string out;
  const auto add = [&](const std::string& event) {
    if (!out.empty()) out += ",\n";
    out += event;
  };
  add(fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"args":{{"name":"rank {}"}}}})",
                  t.rank, t.rank));
  add(fmt::format(R"({{"name":"process_sort_index","ph":"M","pid":{},"args":{{"sort_index":{}}}}})",
                  t.rank, t.rank));
  add(fmt::format(
      R"({{"name":"thread_name","ph":"M","pid":{},"tid":0,"args":{{"name":"collectives"}}}})",
      t.rank));
  for (std::size_t c = 0; c < t.calls.size(); ++c) {
    const TraceCall& call = t.calls[c];
    add(fmt::format(
        R"({{"name":"{} {}","cat":"call","ph":"X","pid":{},"tid":0,"ts":{:.3f},"dur":{:.3f},"args":{{"call":{},"bytes":{}}}}})",
        escaped(call.name), size_text(call.bytes), t.rank, call.start_us,
        std::max(0.0, call.end_us - call.start_us), c, call.bytes));
  }
  // Tracks: one per channel in the order they are first used, more where slices would overlap.
  std::vector<std::size_t> order(t.steps.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return t.steps[a].start_us < t.steps[b].start_us;
  });
  struct Track {
    int tid;
    double free_at;
  };
  std::map<std::string, std::vector<Track>> tracks;
  int next_tid = 1;
  for (std::size_t i : order) {
    const TraceStep& s = t.steps[i];
    const std::string channel = channel_name(s);
    std::vector<Track>& lanes = tracks[channel];
    Track* lane = nullptr;
    for (Track& l : lanes)
      if (l.free_at <= s.start_us) {
        lane = &l;
        break;
      }
    if (!lane) {
      lanes.push_back({next_tid++, 0});
      lane = &lanes.back();
      const std::string name =
          lanes.size() == 1 ? channel : fmt::format("{} #{}", channel, lanes.size());
      add(fmt::format(
          R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":"{}"}}}})", t.rank,
          lane->tid, name));
      add(fmt::format(
          R"({{"name":"thread_sort_index","ph":"M","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
          t.rank, lane->tid, lane->tid));
    }
    lane->free_at = std::max(s.end_us, s.start_us);
    const std::string what = local(s.kind) ? fmt::format("{} {}", s.kind, size_text(s.bytes))
                                           : fmt::format("{} {} {} {}", s.kind, size_text(s.bytes),
                                                         sends(s.kind) ? "->" : "<-", s.peer);
    add(fmt::format(
        R"({{"name":"{}","cat":"step","ph":"X","pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f},"args":{{"call":{},"step":{},"phase":{},"kind":"{}","peer":{},"tag":{},"bytes":{},"transport":"{}"}}}})",
        what, t.rank, lane->tid, s.start_us, std::max(0.0, s.end_us - s.start_us), s.call, s.step,
        s.phase, s.kind, s.peer, s.tag, s.bytes, s.via));
  }
  return out;
}

std::string_view chrome_trace_head() { return "{\"traceEvents\":[\n"; }

std::string chrome_trace_tail(std::string_view source, std::uint64_t dropped) {
  return fmt::format(
      "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{{\"source\":\"{}\",\"dropped\":{}}}}}\n",
      escaped(source), dropped);
}

std::string chrome_trace_file(const std::vector<std::string>& rank_events, std::string_view source,
                              std::uint64_t dropped) {
  std::string out(chrome_trace_head());
  bool first = true;
  for (const std::string& events : rank_events) {
    if (events.empty()) continue;
    if (!first) out += ",\n";
    out += events;
    first = false;
  }
  return out + chrome_trace_tail(source, dropped);
}

}  // namespace toroid::model
