// Every setting of the library in one table: its `Options` field (communicator.hpp) and its
// TOROID_* environment variable, what it takes and its default. The configuration code reads the
// variables through this table, the preload and the kernels too; the Python keywords are its
// option names, and the tests hold docs/configuration.md, the library's sources and the Python
// module to it (tests/unit/test_settings.cpp, tests/python).
#pragma once

#include <span>
#include <string_view>

#include "toroid/export.hpp"

TOROID_API_BEGIN
namespace toroid {

// Who reads a variable, and when: a Communicator as it is made, the process once (the kernel
// level), or only the preload (libtoroid_preload.so).
enum class SettingScope { communicator, process, preload };

struct Setting {
  std::string_view option;    // the Options field; "" where the setting is a variable only
  std::string_view variable;  // "TOROID_..."; "" where it is an option only
  std::string_view values;    // what it takes, in short (docs/configuration.md says more)
  std::string_view default_value;
  SettingScope scope = SettingScope::communicator;
  // Decides what every rank runs, so ranks compare it when a communicator is made (and the
  // preload at MPI_Init): an error naming the ranks where it differs, never a hang.
  bool must_agree = true;
};

// The table, options first in the order Options declares them. One variable may back two
// options: TOROID_ALGO holds an algorithm (Options::algorithm) or rules (algorithm_rules).
std::span<const Setting> settings() noexcept;

// The value of a variable of the table ("TOROID_TOPOLOGY"); null where it is unset or empty.
// A name outside the table is a programming error: std::logic_error.
const char* setting_from_environment(std::string_view variable);

}  // namespace toroid
TOROID_API_END
