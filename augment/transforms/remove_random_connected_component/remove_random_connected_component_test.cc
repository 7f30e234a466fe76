#include "augment/transforms/remove_random_connected_component/remove_random_connected_component.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <random>

#include "augment/testing/test_util.h"
#include "augment/transforms/remove_random_connected_component/cc_pairs.h"

namespace augmentd {
namespace {
namespace cc = connected_components_internal;

TEST(RemoveRandomConnectedComponent, LabelsWithFullConnectivityInRasterOrder) {
  // 2D: diagonal neighbours join (8-connectivity); a U shape is one component whose arms meet late.
  const std::vector<uint8_t> m = {1, 0, 0, 1,
                                  0, 1, 0, 1,
                                  0, 0, 0, 1,
                                  1, 1, 0, 0};
  std::vector<int32_t> labels;
  auto sizes = cc::Label(m, {4, 4}, labels);
  EXPECT_EQ(sizes, (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(labels, (std::vector<int32_t>{1, 0, 0, 2, 0, 1, 0, 2, 0, 0, 0, 2, 3, 3, 0, 0}));
  const std::vector<uint8_t> u = {1, 0, 1,
                                  1, 0, 1,
                                  1, 1, 1};
  EXPECT_EQ(cc::Label(u, {3, 3}, labels), (std::vector<int64_t>{7}));
  // 3D: a corner-only (26-) neighbour joins.
  std::vector<uint8_t> v(27, 0);
  v[0] = 1;
  v[13] = 1;
  v[26] = 1;
  EXPECT_EQ(cc::Label(v, {3, 3, 3}, labels), (std::vector<int64_t>{3}));
}

// Host emulation of the CUDA labelling's pair split (cc_pairs.h, remove_random_connected_component.cu): CcLocal's
// unions inside each tile (local indices, root → its voxel's global index), then CcBorder's unions across tile borders
// from the voxels on a tile face, with a min-index union-find (the kernels' roots: a component's smallest voxel index).
// Returns each voxel's root (−1: background).
std::vector<int64_t> EmulatedRoots(const std::vector<uint8_t>& m, const int32_t shape[3]) {
  namespace ch = cuda::chain;
  const ch::CcTileGeom g = ch::MakeCcTileGeom(shape);
  const int64_t n = int64_t{shape[0]} * shape[1] * shape[2];
  std::vector<int64_t> parent(static_cast<size_t>(n), -1);
  const auto find = [](std::vector<int64_t>& p, int64_t x) {
    while (p[x] != x) x = p[x];
    return x;
  };
  const auto unite = [&](std::vector<int64_t>& p, int64_t a, int64_t b) {
    a = find(p, a);
    b = find(p, b);
    if (a != b) p[std::max(a, b)] = std::min(a, b);
  };
  const auto index = [&](int64_t a, int64_t y, int64_t z) { return (a * shape[1] + y) * shape[2] + z; };
  const auto fg = [&](int64_t a, int64_t y, int64_t z) {
    return a >= 0 && y >= 0 && z >= 0 && a < shape[0] && y < shape[1] && z < shape[2] && m[index(a, y, z)] != 0;
  };
  // CcLocal, tile by tile.
  for (int32_t t0 = 0; t0 < g.tiles[0]; ++t0)
    for (int32_t t1 = 0; t1 < g.tiles[1]; ++t1)
      for (int32_t t2 = 0; t2 < g.tiles[2]; ++t2) {
        std::vector<int64_t> local(ch::kCcLocalVoxels);
        std::iota(local.begin(), local.end(), 0);
        const auto at = [&](int32_t t, int d) {
          const int32_t l[3] = {t / (g.t[1] * g.t[2]), (t / g.t[2]) % g.t[1], t % g.t[2]};
          return int64_t{(d == 0 ? t0 : d == 1 ? t1 : t2) * g.t[d] + l[d]};
        };
        for (int32_t t = 0; t < ch::kCcLocalVoxels; ++t) {
          const int64_t a = at(t, 0), y = at(t, 1), z = at(t, 2);
          if (!fg(a, y, z)) continue;
          const int32_t la = t / (g.t[1] * g.t[2]), lb = (t / g.t[2]) % g.t[1], lc = t % g.t[2];
          ch::CcForPairs(fg(a, y, z - 1), [&](int32_t da, int32_t db, int32_t dc) {
            if (!ch::CcPairInTile(g, la, lb, lc, da, db, dc)) return;
            if (fg(a + da, y + db, z + dc)) unite(local, t, ((la + da) * g.t[1] + lb + db) * g.t[2] + lc + dc);
          });
        }
        for (int32_t t = 0; t < ch::kCcLocalVoxels; ++t) {
          const int64_t a = at(t, 0), y = at(t, 1), z = at(t, 2);
          if (!fg(a, y, z)) continue;
          const int32_t r = static_cast<int32_t>(find(local, t));
          parent[index(a, y, z)] = index(at(r, 0), at(r, 1), at(r, 2));
        }
      }
  // CcBorder, every voxel on a tile face.
  for (int64_t a = 0; a < shape[0]; ++a)
    for (int64_t y = 0; y < shape[1]; ++y)
      for (int64_t z = 0; z < shape[2]; ++z) {
        if (!fg(a, y, z)) continue;
        const int32_t la = static_cast<int32_t>(a % g.t[0]), lb = static_cast<int32_t>(y % g.t[1]),
                      lc = static_cast<int32_t>(z % g.t[2]);
        if (!ch::CcOnTileFace(g, la, lb, lc)) continue;
        ch::CcForPairs(fg(a, y, z - 1), [&](int32_t da, int32_t db, int32_t dc) {
          if (ch::CcPairInTile(g, la, lb, lc, da, db, dc)) return;
          if (fg(a + da, y + db, z + dc)) unite(parent, index(a, y, z), index(a + da, y + db, z + dc));
        });
      }
  std::vector<int64_t> roots(static_cast<size_t>(n), -1);
  for (int64_t i = 0; i < n; ++i)
    if (m[i]) roots[i] = find(parent, i);
  return roots;
}

// The CUDA labelling's split of the voxel pairs between CcLocal and CcBorder loses none: emulated on the host, its
// components equal the CPU's Label, numbered alike (roots in increasing order = labels 1..K in raster order of their
// first voxel). Shapes that are and are not multiples of the tiles, a unit leading axis (2D), densities around the
// percolation threshold (one component snaking through many tiles), full and empty masks.
TEST(RemoveRandomConnectedComponent, CudaTileSplitEqualsTheCpuLabels) {
  std::mt19937 gen(5);
  const std::vector<std::vector<int32_t>> shapes = {{16, 16, 16}, {19, 13, 22}, {9, 8, 33}, {1, 37, 70}, {1, 16, 32},
                                                    {3, 5, 7}};
  for (const auto& sh : shapes) {
    const int64_t n = int64_t{sh[0]} * sh[1] * sh[2];
    for (int density : {0, 5, 12, 25, 50, 100}) {
      std::vector<uint8_t> m(static_cast<size_t>(n));
      for (auto& v : m) v = static_cast<int>(gen() % 100) < density;
      std::vector<int64_t> shape(sh.begin(), sh.end());
      if (sh[0] == 1) shape.erase(shape.begin());
      std::vector<int32_t> labels;
      const auto sizes = cc::Label(m, shape, labels);
      const std::vector<int64_t> roots = EmulatedRoots(m, sh.data());
      std::map<int64_t, int32_t> rank;
      for (int64_t r : roots)
        if (r >= 0) rank.emplace(r, 0);
      int32_t k = 0;
      for (auto& [r, v] : rank) v = ++k;
      EXPECT_EQ(rank.size(), sizes.size()) << sh[0] << "x" << sh[1] << "x" << sh[2] << " density " << density;
      int64_t diff = 0;
      for (int64_t i = 0; i < n; ++i) {
        const int32_t got = roots[i] < 0 ? 0 : rank[roots[i]];
        diff += got != labels[i];
        if (roots[i] >= 0) diff += roots[roots[i]] != roots[i];  // the root is a voxel of its own component
      }
      EXPECT_EQ(diff, 0) << sh[0] << "x" << sh[1] << "x" << sh[2] << " density " << density;
    }
  }
}

TEST(RemoveRandomConnectedComponent, RemovesTheChosenSmallComponentAndFills) {
  SampleData s;
  s.channels = 2;
  s.shape = {10, 10};
  s.image.assign(200, 0.0f);
  auto set = [&](int c, int x, int y) { s.image[c * 100 + x * 10 + y] = 1; };
  set(0, 0, 0);                                          // component 1 (size 1)
  for (int y = 5; y < 8; ++y) set(0, 2, y);              // component 2 (size 3)
  for (int x = 5; x < 10; ++x)
    for (int y = 0; y < 10; ++y) set(0, x, y);           // component 3 (size 50): covers ≥ 15 %, never removed
  const std::vector<float> x0 = s.image;
  auto t = RemoveRandomConnectedComponentTransform::FromJson(
      {{"channel_idx", {0, 1}}, {"fill_with_other_class_p", 0.5}, {"dont_do_if_covers_more_than_x_percent", 0.15}});
  ASSERT_TRUE(t.ok()) << t.status();
  // component_draw 0.7 of 2 valid components → the second (label 2); fill_draw 0.2 < 0.5 → fill channel 1.
  auto p = (*t)->ParseParams({{"apply_to_channels", {0}}, {"component_draw", {0.7}}, {"fill_draw", {0.2}},
                              {"other_class_draw", {0.9}}}, {2, {10, 10}, 0});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  for (int y = 5; y < 8; ++y) {
    EXPECT_EQ(s.image[2 * 10 + y], 0.0f);
    EXPECT_EQ(s.image[100 + 2 * 10 + y], 1.0f);
  }
  float moved = 0;
  for (int v = 0; v < 100; ++v) moved += x0[v] - s.image[v];
  EXPECT_EQ(moved, 3);
  EXPECT_EQ(s.image[0], 1.0f);
}

TEST(RemoveRandomConnectedComponent, DrawsOneCoinPerChannel) {
  auto t = RemoveRandomConnectedComponentTransform::FromJson({{"channel_idx", {-2, -1}}, {"p_per_label", 0.25}});
  ASSERT_TRUE(t.ok());
  int applied = 0;
  for (int i = 0; i < 2000; ++i) {
    auto p = testing::DrawFor(**t, {3, {4, 4, 4}, 1}, 2, i);
    const auto& q = static_cast<const RemoveRandomConnectedComponentParams&>(*p);
    applied += static_cast<int>(q.apply_to_channels.size());
    ASSERT_EQ(q.component_draw.size(), q.apply_to_channels.size());
  }
  EXPECT_NEAR(applied / 4000.0, 0.25, 0.03);
  EXPECT_EQ(RemoveRandomConnectedComponentTransform::FromJson({{"channel_idx", {0}}, {"p_per_label", 2}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// The schema (augment/schema.h) keeps the accepted keys, the defaults and the error field names.
TEST(RemoveRandomConnectedComponent, ConfigSchemaKeepsKeysDefaultsAndErrorFields) {
  auto t = RemoveRandomConnectedComponentTransform::FromJson({{"channel_idx", {0, 1}}});
  ASSERT_TRUE(t.ok()) << t.status();
  const nlohmann::json full = {{"channel_idx", {0, 1}},
                                {"fill_with_other_class_p", 0.25},
                                {"dont_do_if_covers_more_than_x_percent", 0.25},
                                {"p_per_label", 1.0}};
  EXPECT_EQ((*t)->ConfigToJson(), full);
  auto again = RemoveRandomConnectedComponentTransform::FromJson((*t)->ConfigToJson());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->ConfigToJson(), full);
  const std::vector<std::pair<nlohmann::json, std::string>> bad = {
      {nlohmann::json::object(), "channel_idx"},
      {{{"channel_idx", nlohmann::json::array()}}, "channel_idx"},
      {{{"channel_idx", {-5000}}}, "channel_idx"},
      {{{"channel_idx", 0}, {"fill_with_other_class_p", 2}}, "fill_with_other_class_p"},
      {{{"channel_idx", 0}, {"dont_do_if_covers_more_than_x_percent", -0.1}}, "dont_do_if_covers_more_than_x_percent"},
      {{{"channel_idx", 0}, {"p_per_label", -1}}, "p_per_label"},
      {{{"channel_idx", 0}, {"p", 1}}, "p"},
  };
  for (const auto& [config, field] : bad) {
    auto r = RemoveRandomConnectedComponentTransform::FromJson(config);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << config;
    EXPECT_NE(r.status().message().find("remove_random_connected_component." + field), std::string::npos)
        << config << ": " << r.status();
  }
}

}  // namespace
}  // namespace augmentd
