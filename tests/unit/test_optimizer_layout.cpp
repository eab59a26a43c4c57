// Buckets, padding and shards of the flattened parameters, and the name patterns.
#include <catch2/catch.hpp>
#include <numeric>
#include <vector>

#include "optimizer/config.hpp"
#include "optimizer/layout.hpp"

using namespace toroid::optimizer;

namespace {

// Every flat element appears exactly once among a layout's bucket pieces, in order.
void check_pieces_cover(const Layout& l, const std::vector<std::size_t>& sizes) {
  std::vector<std::size_t> starts(sizes.size());
  std::exclusive_scan(sizes.begin(), sizes.end(), starts.begin(), std::size_t{0});
  std::size_t next = 0;
  for (const auto& b : l.buckets) {
    CHECK(b.flat_begin == next);
    std::size_t in_bucket = 0;
    for (const auto& p : b.pieces) {
      CHECK(p.offset == in_bucket);
      CHECK(starts[p.tensor] + p.tensor_offset == b.flat_begin + p.offset);
      CHECK(p.tensor_offset + p.count <= sizes[p.tensor]);
      in_bucket += p.count;
    }
    CHECK(in_bucket == b.length);
    next += b.length;
  }
  CHECK(next == l.total);
}

}  // namespace

TEST_CASE("optimizer layout: buckets, padding and shards", "[optimizer]") {
  const std::vector<std::size_t> sizes = {7, 0, 13, 1, 30};  // 51 elements, one empty tensor
  for (int parts : {1, 2, 3, 4, 7}) {
    for (std::size_t bucket : {4, 10, 51, 1000}) {
      INFO("parts " << parts << " bucket " << bucket);
      std::vector<int> owner(51, -1);
      std::size_t state = 0;
      for (int part = 0; part < parts; ++part) {
        const Layout l = make_layout(sizes, {}, bucket, bucket, parts, part);
        CHECK(l.total == 51);
        check_pieces_cover(l, sizes);
        std::size_t offset = 0;
        for (const auto& b : l.buckets) {
          CHECK(b.padded % parts == 0);
          CHECK(b.padded - b.length < static_cast<std::size_t>(parts));
          CHECK(b.shard * parts == b.padded);
          CHECK(b.own_begin == static_cast<std::size_t>(part) * b.shard);
          CHECK(b.state_offset == offset);
          offset += b.shard;
          for (const auto& p : b.own) {
            CHECK(p.offset + p.count <= b.shard);
            for (std::size_t i = 0; i < p.count; ++i) {
              const std::size_t flat = b.flat_begin + b.own_begin + p.offset + i;
              CHECK(owner[flat] == -1);
              owner[flat] = part;
            }
          }
        }
        CHECK(l.state_elements == offset);
        if (part == 0) state = offset;
        CHECK(l.state_elements == state);  // every part holds the same amount
      }
      for (int o : owner) CHECK(o >= 0);  // every real element is updated by exactly one part
    }
  }
}

TEST_CASE("optimizer layout: name patterns", "[optimizer]") {
  CHECK(matches("encoder.layer.0.attention.bias", "bias"));
  CHECK(matches("bert.LayerNorm.weight", "LayerNorm"));
  CHECK_FALSE(matches("fc1.weight", "bias"));
  CHECK(matches("fc1.bias", "*.bias"));
  CHECK_FALSE(matches("fc1.bias.extra", "*.bias"));
  CHECK(matches("layer3.norm", "layer?.*"));
  CHECK_FALSE(matches("layer10.norm", "layer?.norm"));
  CHECK(matches("anything", "*"));
  CHECK(matches("a*b", "a*b"));
  CHECK(matches_any("x.bias", {"LayerNorm", "bias"}));
  CHECK_FALSE(matches_any("x.weight", {}));
}
