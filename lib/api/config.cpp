#include "api/config.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/config_values.hpp"
#include "toroid/error.hpp"
#include "toroid/settings.hpp"

namespace toroid::api {
namespace {

// Every variable is read through the table of settings (toroid/settings.hpp).
const char* env(const char* name) { return setting_from_environment(name); }

// parse(value), with a parser's error prefixed by the variable's name ("TOROID_ALGO: ...").
template <class Parse>
auto parse_env(const char* name, const char* value, Parse parse) {
  try {
    return parse(value);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(std::string(name) + ": " + e.what());
  }
}

}  // namespace

bool option_given(const Options& o, std::string_view option) {
  if (option == "topology") return !o.topology.empty();
  if (option == "algorithm") return o.algorithm.has_value();
  // Rules are not read from TOROID_ALGO where an algorithm is forced either.
  if (option == "algorithm_rules") return !o.algorithm_rules.empty() || o.algorithm.has_value();
  if (option == "segment_bytes") return o.segment_bytes != 0;
  if (option == "check") return o.check.has_value();
  if (option == "nodes") return !o.nodes.empty();
  if (option == "timeout_seconds") return o.timeout_seconds.has_value();
  if (option == "transport") return o.transport.has_value();
  if (option == "progress") return o.progress.has_value();
  if (option == "slot_stores") return o.slot_stores.has_value();
  if (option == "trace") return !o.trace.empty();
  throw std::logic_error("option_given: Options has no field " + std::string(option));
}

Config resolve_config(const Options& options) {
  Config c;
  if (!options.topology.empty())
    c.topology = options.topology;
  else if (const char* v = env("TOROID_TOPOLOGY"))
    c.topology = v;

  if (options.algorithm) {
    c.algorithm = *options.algorithm;
  } else if (const char* v = env("TOROID_ALGO"); v && !model::is_rule_list(v)) {
    c.algorithm = parse_env("TOROID_ALGO", v, parse_algorithm);
  }
  // Rules: from the options, else from TOROID_ALGO when it holds rules (and no algorithm is
  // forced by the options: then the rules could never apply).
  if (!options.algorithm_rules.empty()) {
    try {
      c.rules = model::parse_algorithm_rules(options.algorithm_rules);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(std::string("Options::algorithm_rules: ") + e.what());
    }
  } else if (const char* v = env("TOROID_ALGO");
             v && model::is_rule_list(v) && !options.algorithm) {
    c.rules = parse_env("TOROID_ALGO", v, model::parse_algorithm_rules);
  }
  if (const char* v = env("TOROID_TUNING")) c.tuning_file = v;
  if (const char* v = env("TOROID_LOG")) c.log_choices = parse_log(v, "TOROID_LOG");

  if (options.segment_bytes != 0)
    c.segment_bytes = checked_segment_bytes(options.segment_bytes, "Options::segment_bytes");
  else if (const char* v = env("TOROID_SEGMENT_BYTES"))
    c.segment_bytes = parse_segment_bytes(v, "TOROID_SEGMENT_BYTES");
  c.segment_bytes_given = options.segment_bytes != 0 || env("TOROID_SEGMENT_BYTES");

  if (options.check) {
    c.check = *options.check;
  } else if (const char* v = env("TOROID_CHECK")) {
    c.check = parse_switch(v, "TOROID_CHECK");
  }
  if (options.timeout_seconds) {
    c.timeout_s = *options.timeout_seconds;
  } else if (const char* v = env("TOROID_TIMEOUT")) {
    c.timeout_s = parse_seconds(v, "TOROID_TIMEOUT");
  }
  if (c.timeout_s < 0) throw InvalidArgument("Options::timeout_seconds must not be negative");
  if (options.nodes == "real")
    c.nodes.clear();
  else if (!options.nodes.empty())
    c.nodes = options.nodes;
  else if (const char* v = env("TOROID_NODES"))
    c.nodes = v;
  if (options.transport) {
    c.transport = *options.transport;
  } else if (const char* v = env("TOROID_TRANSPORT")) {
    c.transport = parse_env("TOROID_TRANSPORT", v, parse_transport);
  }
  if (options.progress) {
    c.progress = *options.progress;
  } else if (const char* v = env("TOROID_PROGRESS")) {
    c.progress = parse_env("TOROID_PROGRESS", v, parse_progress_mode);
  }
  if (options.slot_stores) {
    c.slot_stores = *options.slot_stores;
  } else if (const char* v = env("TOROID_SLOT_STORES")) {
    c.slot_stores = parse_env("TOROID_SLOT_STORES", v, parse_slot_stores);
  }
  if (!options.trace.empty())
    c.trace = options.trace;
  else if (const char* v = env("TOROID_TRACE"))
    c.trace = v;
  return c;
}

std::vector<const char*> variables_read(const Options& o) {
  std::vector<const char*> names;
  for (const Setting& s : settings()) {
    if (s.scope != SettingScope::communicator || !s.must_agree || s.variable.empty()) continue;
    if (!s.option.empty() && option_given(o, s.option)) continue;
    if (std::find(names.begin(), names.end(), s.variable.data()) == names.end())
      names.push_back(s.variable.data());  // the table's literals end in a null
  }
  return names;
}

}  // namespace toroid::api

namespace toroid {

std::string_view to_string(Transport t) noexcept {
  switch (t) {
    case Transport::automatic:
      return "auto";
    case Transport::mpi:
      return "mpi";
    case Transport::shm:
      return "shm";
  }
  return "?";
}

std::string_view to_string(ProgressMode p) noexcept {
  return p == ProgressMode::thread ? "thread" : "caller";
}

ProgressMode parse_progress_mode(std::string_view name) {
  for (ProgressMode p : {ProgressMode::caller, ProgressMode::thread})
    if (name == to_string(p)) return p;
  throw InvalidArgument("unknown progress mode '" + std::string(name) +
                        "' (expected caller or thread)");
}

std::string_view to_string(SlotStores s) noexcept {
  switch (s) {
    case SlotStores::automatic:
      return "auto";
    case SlotStores::cached:
      return "cached";
    case SlotStores::streaming:
      return "streaming";
  }
  return "?";
}

SlotStores parse_slot_stores(std::string_view name) {
  for (SlotStores s : {SlotStores::automatic, SlotStores::cached, SlotStores::streaming})
    if (name == to_string(s)) return s;
  throw InvalidArgument("unknown slot stores '" + std::string(name) +
                        "' (expected auto, cached or streaming)");
}

Transport parse_transport(std::string_view name) {
  for (Transport t : {Transport::automatic, Transport::mpi, Transport::shm})
    if (name == to_string(t)) return t;
  throw InvalidArgument("unknown transport '" + std::string(name) +
                        "' (expected auto, mpi or shm)");
}

}  // namespace toroid
