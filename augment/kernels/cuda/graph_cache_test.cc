// Host-only tests of the CUDA-graph cache policy (graph_cache.h): no GPU needed; "graphs" are ints and destroying
// one records it.
#include "augment/kernels/cuda/graph_cache.h"

#include <vector>

#include "gtest/gtest.h"

namespace augmentd::cuda {
namespace {

struct Key {
  uint32_t stages;
  int batch;
  bool operator==(const Key& o) const { return stages == o.stages && batch == o.batch; }
};

TEST(GraphCache, EagerThenCaptureThenReplay) {
  std::vector<int> destroyed;
  GraphCache<Key, int> cache(4, [&](int e) { destroyed.push_back(e); });
  int exec = -1;
  EXPECT_EQ(cache.Lookup({3, 2}, &exec), GraphAction::kEager);    // first sighting
  EXPECT_EQ(cache.Lookup({3, 2}, &exec), GraphAction::kCapture);  // second: capture
  cache.Store({3, 2}, 7);
  EXPECT_EQ(cache.Lookup({3, 2}, &exec), GraphAction::kReplay);
  EXPECT_EQ(exec, 7);
  EXPECT_EQ(cache.Lookup({3, 8}, &exec), GraphAction::kEager);  // another shape is another key
  EXPECT_EQ(cache.graphs(), 1u);
  EXPECT_TRUE(destroyed.empty());
}

TEST(GraphCache, CaptureAfterZeroCapturesAtOnce) {
  GraphCache<Key, int> cache(2, [](int) {}, 0);
  int exec = 0;
  EXPECT_EQ(cache.Lookup({1, 1}, &exec), GraphAction::kCapture);
}

TEST(GraphCache, FailedCaptureStaysEager) {
  GraphCache<Key, int> cache(4, [](int) {});
  int exec = 0;
  cache.Lookup({5, 2}, &exec);
  ASSERT_EQ(cache.Lookup({5, 2}, &exec), GraphAction::kCapture);
  cache.MarkFailed({5, 2});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(cache.Lookup({5, 2}, &exec), GraphAction::kEager);
  EXPECT_EQ(cache.graphs(), 0u);
}

TEST(GraphCache, EvictsLeastRecentlyUsedGraph) {
  std::vector<int> destroyed;
  GraphCache<Key, int> cache(2, [&](int e) { destroyed.push_back(e); }, 0);
  int exec = 0;
  for (uint32_t s = 1; s <= 2; ++s) {
    ASSERT_EQ(cache.Lookup({s, 2}, &exec), GraphAction::kCapture);
    cache.Store({s, 2}, static_cast<int>(10 * s));
  }
  ASSERT_EQ(cache.Lookup({1, 2}, &exec), GraphAction::kReplay);  // key 1 used more recently than key 2
  ASSERT_EQ(cache.Lookup({3, 2}, &exec), GraphAction::kCapture);
  cache.Store({3, 2}, 30);
  EXPECT_EQ(destroyed, std::vector<int>({20}));
  EXPECT_EQ(cache.Lookup({1, 2}, &exec), GraphAction::kReplay);
  EXPECT_EQ(exec, 10);
  EXPECT_EQ(cache.Lookup({2, 2}, &exec), GraphAction::kCapture);  // evicted: captured again
  EXPECT_EQ(cache.graphs(), 2u);
}

TEST(GraphCache, ClearDestroysEverything) {
  std::vector<int> destroyed;
  {
    GraphCache<Key, int> cache(4, [&](int e) { destroyed.push_back(e); }, 0);
    int exec = 0;
    cache.Lookup({1, 1}, &exec);
    cache.Store({1, 1}, 1);
    cache.Lookup({2, 1}, &exec);
    cache.Store({2, 1}, 2);
    cache.Clear();
    EXPECT_EQ(destroyed.size(), 2u);
    EXPECT_EQ(cache.Lookup({1, 1}, &exec), GraphAction::kCapture);  // forgotten
    cache.Store({1, 1}, 3);
  }
  EXPECT_EQ(destroyed, std::vector<int>({1, 2, 3}));  // the destructor destroys what is left
}

TEST(GraphCache, ForgetsOldestSightings) {
  GraphCache<Key, int> cache(1, [](int) {});  // remembers 4 sightings
  int exec = 0;
  for (uint32_t s = 0; s < 5; ++s) EXPECT_EQ(cache.Lookup({s, 1}, &exec), GraphAction::kEager);
  EXPECT_EQ(cache.Lookup({0, 1}, &exec), GraphAction::kEager);    // forgotten: a first sighting again
  EXPECT_EQ(cache.Lookup({4, 1}, &exec), GraphAction::kCapture);  // still remembered
}

}  // namespace
}  // namespace augmentd::cuda
