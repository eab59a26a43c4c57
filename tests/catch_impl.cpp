// Catch2's implementation (the slowest file of the tests to build), compiled once for every test
// binary; each binary's main calls run_catch (unit/main.cpp, mpi/main.cpp).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_run.hpp"

namespace toroid_test {

int run_catch(int argc, char** argv, const std::string& report_file, bool& command_line_ok) {
  Catch::Session session;
  if (int rc = session.applyCommandLine(argc, argv); rc != 0) {
    command_line_ok = false;
    return rc;
  }
  command_line_ok = true;
  if (!report_file.empty()) session.configData().outputFilename = report_file;
  return session.run();
}

}  // namespace toroid_test
