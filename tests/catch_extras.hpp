// Three additions to Catch2 2.13 for every test binary, whose runner fails a case that asserts
// nothing (run_catch turns on `-w NoAssertions`: a case that can pass without checking anything
// is a case that can hide a broken one).
// - REQUIRE_SAYING / CHECK_SAYING: one assertion per comparison of a sweep, whose message (the
//   case's type, op, count, shape...) is built only when it fails: the sweeps compare thousands
//   of cases and a CHECK with INFO would format every message.
// - SKIP_CASE: a case that cannot run here (one rank, no SIMD level, no single-copy path) says
//   why, and the run ends with a list of the skipped cases and their count (Catch2 2 has no
//   skip of its own, so the case itself records one passing assertion: "skipped: why").
// - kSanitized: true in the sanitizer tree (TOROID_SANITIZE), where code runs several times
//   slower. A sweep whose lists repeat the same code paths (a long vector after every tail
//   length, a second reducer speed that only changes the model's numbers) takes a shorter list
//   there, which keeps every path the sanitizers watch; the Release tree runs the whole list.
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
#ifdef TOROID_TEST_SANITIZED
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
// Records that the running case was skipped, and why (listed when the run ends).
void note_skipped(const std::string& why);
}  // namespace toroid_test

#define SKIP_CASE(why)                \
  do {                                \
    ::toroid_test::note_skipped(why); \
    SUCCEED("skipped: " << (why));    \
    return;                           \
  } while (false)
