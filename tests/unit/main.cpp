// The unit binaries' main: Catch2's session as it comes (tests/catch_impl.cpp).
#include "catch_run.hpp"

int main(int argc, char** argv) {
  bool command_line_ok = true;
  return toroid_test::run_catch(argc, argv, "", command_line_ok);
}
