// The table of settings (toroid/settings.hpp) against its users: Options, the configuration
// code, the library's sources and docs/configuration.md. A variable or field added to one and
// not the others fails here.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "api/config.hpp"
#include "toroid/algorithm.hpp"
#include "toroid/communicator.hpp"
#include "toroid/settings.hpp"

using namespace toroid;

namespace {

// The number of fields of an aggregate: the most initializers it takes.
struct AnyField {
  template <class T>
  operator T() const;
};
template <class T, class... Fields>
constexpr std::size_t field_count() {
  if constexpr (requires { T{Fields{}..., AnyField{}}; })
    return field_count<T, Fields..., AnyField>();
  else
    return sizeof...(Fields);
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::filesystem::path kSource = TOROID_SOURCE_DIR;

std::set<std::string> table_variables() {
  std::set<std::string> out;
  for (const Setting& s : settings())
    if (!s.variable.empty()) out.emplace(s.variable);
  return out;
}

}  // namespace

TEST_CASE("settings: every Options field is in the table, and the configuration knows each",
          "[settings]") {
  std::set<std::string> options;
  for (const Setting& s : settings()) {
    if (s.option.empty()) continue;
    CHECK(options.insert(std::string(s.option)).second);  // each field once
    CHECK_NOTHROW(api::option_given(Options{}, s.option));
    CHECK_FALSE(api::option_given(Options{}, s.option));
  }
  CHECK(options.size() == field_count<Options>());
  CHECK_THROWS_AS(api::option_given(Options{}, "no_such_field"), std::logic_error);
  // A field set hides its variable from the comparison across ranks.
  Options o;
  o.topology = "2x2";
  o.trace = "t.json";
  const std::vector<const char*> read = api::variables_read(o);
  for (const char* v : read) {
    CHECK(std::string(v) != "TOROID_TOPOLOGY");
    CHECK(std::string(v) != "TOROID_TRACE");
  }
  CHECK(api::variables_read(Options{}).size() == read.size() + 2);
}

TEST_CASE("settings: a variable outside the table cannot be read", "[settings]") {
  CHECK_THROWS_AS(setting_from_environment("TOROID_NO_SUCH_THING"), std::logic_error);
  CHECK_NOTHROW(setting_from_environment("TOROID_TOPOLOGY"));
}

TEST_CASE("settings: docs/configuration.md lists every variable with its Options fields",
          "[settings]") {
  const std::string doc = read_file(kSource / "docs" / "configuration.md");
  const std::regex row(R"(\n\| `(TOROID_[A-Z_]+)` \| ([^|]*) \|)");
  std::map<std::string, std::string> documented;  // variable -> its Options field cell
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator();
       ++it)
    documented[(*it)[1]] = (*it)[2];
  std::set<std::string> names;
  for (const auto& [name, cell] : documented) names.insert(name);
  CHECK(names == table_variables());
  for (const Setting& s : settings()) {
    if (s.variable.empty() || !documented.count(std::string(s.variable))) continue;
    const std::string& cell = documented[std::string(s.variable)];
    INFO(s.variable << ": " << cell);
    if (s.option.empty())
      CHECK(cell == "—");
    else
      CHECK(cell.find("`" + std::string(s.option) + "`") != std::string::npos);
  }
}

TEST_CASE("settings: every TOROID_* name the library's sources use is in the table", "[settings]") {
  const std::regex quoted("\"(TOROID_[A-Z_0-9]+)\"");
  const std::set<std::string> known = table_variables();
  std::size_t files = 0;
  for (const char* dir : {"lib", "benchmarks", "tools", "measure", "python/src"})
    for (const auto& e : std::filesystem::recursive_directory_iterator(kSource / dir)) {
      const std::string ext = e.path().extension().string();
      if (ext != ".cpp" && ext != ".hpp") continue;
      ++files;
      const std::string text = read_file(e.path());
      for (auto it = std::sregex_iterator(text.begin(), text.end(), quoted);
           it != std::sregex_iterator(); ++it) {
        const std::string name = (*it)[1];
        if (name.rfind("TOROID_TEST_", 0) == 0) continue;  // the tests' own hooks
        INFO(e.path().string());
        CHECK(known.count(name) == 1);
      }
    }
  CHECK(files > 100);
}

TEST_CASE("algorithms: docs/algorithms.md names every algorithm the library has", "[settings]") {
  const std::string doc = read_file(kSource / "docs" / "algorithms.md");
  for (Algorithm a : all_algorithms) {
    INFO(to_string(a));
    std::string quoted = "`";
    quoted += to_string(a);
    quoted += '`';
    CHECK(doc.find(quoted) != std::string::npos);
  }
}
