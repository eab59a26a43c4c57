// The TOROID_* value parsers, without MPI or the environment. Inputs the fuzzers found
// interesting are kept here as regression cases.
#include <catch2/catch.hpp>

#include "core/config_values.hpp"
#include "toroid/error.hpp"

using namespace toroid;
using Catch::Contains;

TEST_CASE("switches: 0, 1, on, off and nothing else", "[config]") {
  CHECK(parse_switch("1", "TOROID_CHECK"));
  CHECK(parse_switch("on", "TOROID_CHECK"));
  CHECK_FALSE(parse_switch("0", "TOROID_CHECK"));
  CHECK_FALSE(parse_switch("off", "TOROID_CHECK"));
  CHECK_THROWS_WITH(parse_switch("yes", "TOROID_CHECK"),
                    "TOROID_CHECK: 'yes' is not 0, 1, on or off");
  CHECK_THROWS_AS(parse_switch("", "TOROID_CHECK"), InvalidArgument);
}

TEST_CASE("log levels: info and off, the one parser of TOROID_LOG", "[config]") {
  CHECK(parse_log("info", "TOROID_LOG"));
  CHECK_FALSE(parse_log("off", "TOROID_LOG"));
  CHECK_THROWS_WITH(parse_log("loud", "TOROID_LOG"), "TOROID_LOG: 'loud' is not off or info");
  CHECK_THROWS_AS(parse_log("", "TOROID_LOG"), InvalidArgument);
}

TEST_CASE("timeouts: seconds in [0, 1e6], the whole text a number", "[config]") {
  CHECK(parse_seconds("120", "TOROID_TIMEOUT") == 120);
  CHECK(parse_seconds("0.5", "TOROID_TIMEOUT") == 0.5);
  CHECK(parse_seconds("1e3", "TOROID_TIMEOUT") == 1000);
  CHECK(parse_seconds("0", "TOROID_TIMEOUT") == 0);
  for (const char* bad : {"", "-1", "1e7", "nan", "inf", "5s", " 5", "+5", "0x10"})
    CHECK_THROWS_WITH(
        parse_seconds(bad, "TOROID_TIMEOUT"),
        "TOROID_TIMEOUT: '" + std::string(bad) + "' is not a number of seconds in [0, 1e6]");
  // An embedded NUL ends a C string early; the parser must not call the rest parsed.
  CHECK_THROWS_AS(parse_seconds(std::string_view("5\0x", 3), "TOROID_TIMEOUT"), InvalidArgument);
}

TEST_CASE("segment sizes: a size within [64, 1G]", "[config]") {
  CHECK(parse_segment_bytes("256K", "TOROID_SEGMENT_BYTES") == 256 * 1024);
  CHECK(parse_segment_bytes("64", "TOROID_SEGMENT_BYTES") == 64);
  CHECK(parse_segment_bytes("1G", "TOROID_SEGMENT_BYTES") == 1u << 30);
  CHECK_THROWS_WITH(parse_segment_bytes("63", "TOROID_SEGMENT_BYTES"),
                    "TOROID_SEGMENT_BYTES: segment size 63 bytes is outside [64, 1G]");
  CHECK_THROWS_WITH(parse_segment_bytes("2G", "TOROID_SEGMENT_BYTES"),
                    Contains("outside [64, 1G]"));
  CHECK_THROWS_WITH(parse_segment_bytes("12Q", "TOROID_SEGMENT_BYTES"),
                    Contains("TOROID_SEGMENT_BYTES: '12Q' is not a size"));
}

TEST_CASE("node lists: positive counts separated by single commas", "[config]") {
  CHECK(parse_node_counts("3,2,3", "TOROID_NODES") == std::vector<int>{3, 2, 3});
  CHECK(parse_node_counts("8", "TOROID_NODES") == std::vector<int>{8});
  CHECK_THROWS_WITH(parse_node_counts("3,x", "TOROID_NODES"),
                    "TOROID_NODES: '3,x' has 'x', which is not a positive rank count");
  for (const char* bad : {"", "3,", ",3", "3,,2", "0", "-1,2", "2 ,2", "99999999999"})
    CHECK_THROWS_AS(parse_node_counts(bad, "TOROID_NODES"), InvalidArgument);
  // Items that each fit an int but whose sum does not: the total is bounded, not wrapped.
  CHECK_THROWS_WITH(parse_node_counts("2000000000,2000000000", "TOROID_NODES"),
                    Contains("adds up to more than 16M ranks"));
  // libFuzzer's first find against the parser as it was (the int sum overflowed, under UBSan).
  CHECK_THROWS_WITH(
      parse_node_counts("01801665155,21011152,1051051,3,01500511511,035", "TOROID_NODES"),
      Contains("adds up to more than 16M ranks"));
  CHECK(parse_node_counts("16777215,1", "TOROID_NODES").size() == 2);
  CHECK_THROWS_AS(parse_node_counts("16777216,1", "TOROID_NODES"), InvalidArgument);
}
