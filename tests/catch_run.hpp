// Catch2's session behind one function, so a test binary's main need not compile Catch2's
// implementation (tests/catch_impl.cpp holds it, built once for every test binary).
#pragma once

#include <string>

namespace toroid_test {

// Applies Catch2's command line; when it is bad (Catch2 has said why) sets `command_line_ok`
// false and returns the exit status. Otherwise runs the selected tests, reporting into
// `report_file` (empty: standard output), and returns Catch2's status (0: all passed).
int run_catch(int argc, char** argv, const std::string& report_file, bool& command_line_ok);

}  // namespace toroid_test
