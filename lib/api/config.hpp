// Resolved configuration of a Communicator: API options first, then TOROID_* environment
// variables, then defaults.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "model/algorithm_rules.hpp"
#include "toroid/algorithm.hpp"
#include "toroid/communicator.hpp"

namespace toroid::api {

// Debug builds of the library (no NDEBUG) check collective arguments across ranks unless told
// not to: a mismatch caught while developing costs less than a hang found in production.
#ifdef NDEBUG
inline constexpr bool kCheckByDefault = false;
#else
inline constexpr bool kCheckByDefault = true;
#endif

struct Config {
  std::string topology = "auto";
  Algorithm algorithm = Algorithm::automatic;
  std::vector<model::AlgorithmRule>
      rules;                 // override auto for size ranges (TOROID_ALGO="allreduce:...")
  std::string tuning_file;   // TOROID_TUNING: auto's link parameters; empty: the built-in defaults
  bool log_choices = false;  // TOROID_LOG=info: rank 0 says what auto picks, once per size class
  std::size_t segment_bytes = default_segment_bytes;
  bool segment_bytes_given = false;  // by Options or TOROID_SEGMENT_BYTES
  bool check = kCheckByDefault;      // compare collective arguments across ranks before each call
  std::string nodes;                 // emulated node sizes ("3,2,3"); empty: the real nodes
  double timeout_s = 0;              // watchdog (TOROID_TIMEOUT); 0: off
  Transport transport = Transport::automatic;
  ProgressMode progress = ProgressMode::caller;
  SlotStores slot_stores = SlotStores::automatic;
  std::string trace;  // TOROID_TRACE: the timeline's file (exec/tracer.hpp); empty: none
};

// Throws InvalidArgument naming the option or environment variable and its value.
Config resolve_config(const Options& options);

// The TOROID_* variables resolve_config reads for these options (those the options leave
// empty). They decide what every rank runs, so they must agree across ranks (TOROID_ISA is not
// among them: every kernel level gives the same bits).
std::vector<const char*> variables_read(const Options& options);

// Whether `options` sets the field named `option` (a Setting::option of toroid/settings.hpp), so
// that its variable is not read. Every option of the table has its line: an unknown name is
// std::logic_error (tests/unit/test_settings.cpp asks for each).
bool option_given(const Options& options, std::string_view option);

}  // namespace toroid::api
