#include "augment/dataset/class_locations.h"

#include <set>
#include <tuple>

#include "augment/dataset/test_util.h"
#include "gtest/gtest.h"

namespace augmentd::dataset {
namespace {

TEST(ClassLocationsTest, CountRule) {
  EXPECT_EQ(NumLocationsToKeep(0), 0);
  EXPECT_EQ(NumLocationsToKeep(5), 5);
  EXPECT_EQ(NumLocationsToKeep(10000), 10000);
  EXPECT_EQ(NumLocationsToKeep(500000), 10000);
  EXPECT_EQ(NumLocationsToKeep(1000000), 10000);
  EXPECT_EQ(NumLocationsToKeep(1000001), 10001);  // ceil(0.01 · count)
  EXPECT_EQ(NumLocationsToKeep(5000000), 50000);
}

TEST(ClassLocationsTest, SubsamplesDistinctVoxelsOfTheRightLabels) {
  // (1, 40, 50, 60): label 1 in the lower half of x (60000 voxels → keep 10000), label 2 in one row
  // (60 voxels → all), -1 elsewhere in the first slice, label 3 absent.
  const Shape shape{1, 40, 50, 60};
  std::vector<int16_t> seg(static_cast<size_t>(NumElements(shape)), 0);
  for (int64_t x = 0; x < 20; ++x)
    for (int64_t y = 0; y < 50; ++y)
      for (int64_t z = 0; z < 60; ++z) seg[static_cast<size_t>((x * 50 + y) * 60 + z)] = 1;
  for (int64_t z = 0; z < 60; ++z) seg[static_cast<size_t>((30 * 50 + 7) * 60 + z)] = 2;
  const std::vector<ClassKey> keys = {{{1}, false, false},
                                      {{2}, false, false},
                                      {{3}, false, false},
                                      {{1, 2}, true, false},
                                      {{-1, 0, 1, 2}, true, true}};
  const ClassLocations loc = ComputeClassLocations(seg.data(), shape, keys);
  ASSERT_EQ(loc.NumKeys(), 5u);
  EXPECT_EQ(loc.spatial_rank, 3);
  EXPECT_EQ(loc.total_counts, (std::vector<int64_t>{60000, 60, 0, 60060, 120000}));
  EXPECT_EQ(loc.Count(0), 10000);
  EXPECT_EQ(loc.Count(1), 60);
  EXPECT_EQ(loc.Count(2), 0);
  EXPECT_EQ(loc.Count(3), 10000);
  EXPECT_EQ(loc.Count(4), 10000);
  std::set<std::tuple<int, int, int>> seen;
  int upper_x_half = 0;
  for (int64_t i = 0; i < loc.Count(0); ++i) {
    const int32_t* v = loc.Voxel(0, i);
    EXPECT_EQ(seg[static_cast<size_t>((v[0] * 50 + v[1]) * 60 + v[2])], 1);
    seen.insert({v[0], v[1], v[2]});
    upper_x_half += v[0] >= 10;
  }
  EXPECT_EQ(seen.size(), 10000u);        // without replacement
  EXPECT_NEAR(upper_x_half, 5000, 250);  // uniform over the label's voxels
  for (int64_t i = 0; i < loc.Count(1); ++i) EXPECT_EQ(loc.Voxel(1, i)[0], 30);
  // Deterministic.
  const ClassLocations again = ComputeClassLocations(seg.data(), shape, keys);
  EXPECT_EQ(again.coords, loc.coords);
}

TEST(ClassLocationsTest, SidecarCacheRoundTripAndStaleness) {
  testing::ScratchDir dir;
  const Shape shape{1, 4, 5, 6};
  const std::vector<int16_t> seg = testing::TinySeg({4, 5, 6});
  const std::string seg_path = dir.Join("c_seg.npy");
  testing::WriteFile(seg_path, testing::NpyBytes(DType::kInt16, shape, testing::Bytes(seg)));
  const std::vector<ClassKey> keys = {{{1}, false, false}, {{2}, false, false}};
  const ClassLocations loc = ComputeClassLocations(seg.data(), shape, keys);
  ClassLocationsCache cache(dir.Join("cache"));
  EXPECT_EQ(cache.Load(seg_path, keys, {}).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(cache.Store(seg_path, {}, loc).ok());
  absl::StatusOr<ClassLocations> back = cache.Load(seg_path, keys, {});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->coords, loc.coords);
  EXPECT_EQ(back->total_counts, loc.total_counts);
  EXPECT_EQ(back->keys[1].labels, std::vector<int>{2});
  // Different keys → a different entry.
  EXPECT_EQ(cache.Load(seg_path, {keys[0]}, {}).status().code(), absl::StatusCode::kNotFound);
  // A damaged entry is reported, not trusted.
  const std::string entry = cache.EntryPath(seg_path, keys, {});
  std::string bytes = testing::ReadFile(entry);
  testing::WriteFile(entry, bytes.substr(0, bytes.size() - 3));
  EXPECT_EQ(cache.Load(seg_path, keys, {}).status().code(), absl::StatusCode::kDataLoss);
  // Rewriting the segmentation (different size) invalidates the entry.
  ASSERT_TRUE(cache.Store(seg_path, {}, loc).ok());
  testing::WriteFile(seg_path, testing::NpyBytes(DType::kInt16, {1, 4, 5, 7}, std::string(280, '\0')));
  EXPECT_EQ(cache.Load(seg_path, keys, {}).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace augmentd::dataset
