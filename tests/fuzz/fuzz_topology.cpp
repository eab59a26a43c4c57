// Torus2D::parse: every text is a valid torus that prints and re-parses to itself, or a
// TopologyError.
#include "fuzz_check.hpp"
#include "toroid/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace toroid;
  using fuzz::require;
  fuzz::expect_value_or_error([&] {
    const Torus2D t = Torus2D::parse(fuzz::text_of(data, size));
    require(t.x_dim() >= 1 && t.y_dim() >= 1, "dimensions at least 1");
    require(static_cast<long long>(t.x_dim()) * t.y_dim() == t.size(), "dims multiply to the size");
    require(t.size() <= (1 << 24), "at most 16M chips");
    require(Torus2D::parse(t.to_string()) == t, "to_string re-parses to the same torus");
    const int last = t.size() - 1;
    require(t.rank_of(t.coord_of(last)) == last, "rank <-> coordinate round trip");
  });
  return 0;
}
