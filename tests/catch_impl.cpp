// Catch2's implementation (the slowest file of the tests to build), compiled once for every test
// binary; each binary's main calls run_catch (unit/main.cpp, mpi/main.cpp).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "catch_extras.hpp"
#include "catch_run.hpp"

namespace toroid_test {
namespace {

// The cases SKIP_CASE ended, with their reasons, in the order they ran.
std::vector<std::pair<std::string, std::string>>& skipped() {
  static std::vector<std::pair<std::string, std::string>> cases;
  return cases;
}

void report_skipped(std::ostream& out) {
  if (skipped().empty()) return;
  out << "skipped " << skipped().size() << " test case" << (skipped().size() == 1 ? "" : "s")
      << " (counted as passed above; nothing of theirs ran here):\n";
  for (const auto& [name, why] : skipped()) out << "  " << name << ": " << why << "\n";
}

}  // namespace

void note_skipped(const std::string& why) {
  skipped().emplace_back(Catch::getResultCapture().getCurrentTestName(), why);
}

int run_catch(int argc, char** argv, const std::string& report_file, bool& command_line_ok) {
  Catch::Session session;
  if (int rc = session.applyCommandLine(argc, argv); rc != 0) {
    command_line_ok = false;
    return rc;
  }
  command_line_ok = true;
  // A case that asserts nothing fails, as `-w NoAssertions` would make it (SKIP_CASE for one
  // that cannot run here).
  session.configData().warnings = static_cast<Catch::WarnAbout::What>(
      session.configData().warnings | Catch::WarnAbout::NoAssertions);
  if (!report_file.empty()) session.configData().outputFilename = report_file;
  const int failed = session.run();
  if (report_file.empty()) {
    report_skipped(std::cout);
  } else {
    std::ofstream out(report_file, std::ios::app);
    report_skipped(out);
  }
  return failed;
}

}  // namespace toroid_test
