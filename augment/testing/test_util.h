// augment/testing/test_util.h — helpers for the engine's gtest unit tests (test-only, header-only).
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "augment/rng.h"
#include "augment/transform.h"
#include "gtest/gtest.h"

namespace augmentd::testing {

// A sample with random normal image values (never zeros) and random labels in [lo, hi].
inline SampleData RandomSample(int64_t channels, std::vector<int64_t> shape, int64_t seg_channels = 1, int lo = 0,
                               int hi = 3, uint32_t seed = 1) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> n(0.5f, 2.0f);
  std::uniform_int_distribution<int> l(lo, hi);
  SampleData s;
  s.channels = channels;
  s.shape = std::move(shape);
  s.image.resize(static_cast<size_t>(channels * s.voxels()));
  for (float& v : s.image) v = n(gen);
  s.seg_channels = seg_channels;
  s.seg.resize(static_cast<size_t>(seg_channels * s.voxels()));
  for (int16_t& v : s.seg) v = static_cast<int16_t>(l(gen));
  return s;
}

// Draws parameters of `t` for (seed, sample) with transform index 0.
inline std::unique_ptr<TransformParams> DrawFor(const Transform& t, const SampleLayout& layout, uint64_t seed,
                                                uint64_t sample = 0) {
  RandomStream rng(seed, sample, 0);
  DrawContext ctx{rng, seed, sample, 0};
  auto p = t.Draw(ctx, layout);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? std::move(*p) : nullptr;
}

}  // namespace augmentd::testing
