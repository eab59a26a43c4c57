// Two additions to Catch2 2.13 for every test binary, whose runner fails a case that asserts
// nothing (run_catch turns on `-w NoAssertions`: a case that can pass without checking anything
// is a case that can hide a broken one).
// - REQUIRE_SAYING / CHECK_SAYING: one assertion per comparison of a sweep, whose message (the
//   case's type, op, count, shape...) is built only when it fails: the sweeps compare thousands
//   of cases and a CHECK with INFO would format every message.
// - SKIP_CASE: a case that cannot run here (one rank, no SIMD level, no single-copy path) says
//   why, and the run ends with a list of the skipped cases and their count (Catch2 2 has no
//   skip of its own, so the case itself records one passing assertion: "skipped: why").
#pragma once

#include <catch2/catch.hpp>
#include <string>

#define REQUIRE_SAYING(cond, msg) \
  do {                            \
    if (cond)                     \
      SUCCEED();                  \
    else                          \
      FAIL(msg);                  \
  } while (false)
#define CHECK_SAYING(cond, msg) \
  do {                          \
    if (cond)                   \
      SUCCEED();                \
    else                        \
      FAIL_CHECK(msg);          \
  } while (false)

namespace toroid_test {
// Records that the running case was skipped, and why (listed when the run ends).
void note_skipped(const std::string& why);
}  // namespace toroid_test

#define SKIP_CASE(why)                \
  do {                                \
    ::toroid_test::note_skipped(why); \
    SUCCEED("skipped: " << (why));    \
    return;                           \
  } while (false)
