// Host tests of the tiled blur's index arithmetic (blur_math.h): reflect padding at hand-computed points, and the
// 16-byte halo copies' plan (PlanHaloChunk) replayed for all 256 threads of a block over every row width P2 ≡ 0 (mod 4)
// up to 296, every tile, radii 1-4 and thin and thick volumes: every stage slot written once with its reflected source
// voxel, nothing outside a stage, 16-byte alignment, and at most two warps mixing interior, edge and padding copies.
#include "augment/kernels/cuda/blur_math.h"

#include <algorithm>
#include <vector>

#include "gtest/gtest.h"

namespace augmentd::cuda {
namespace {

TEST(BlurMath, ReflectMirrorsWithoutRepeatingTheEdge) {
  EXPECT_EQ(BlurReflect(-1, 10), 1);
  EXPECT_EQ(BlurReflect(-3, 10), 3);
  EXPECT_EQ(BlurReflect(0, 10), 0);
  EXPECT_EQ(BlurReflect(9, 10), 9);
  EXPECT_EQ(BlurReflect(10, 10), 8);
  EXPECT_EQ(BlurReflect(12, 10), 6);
  // Past a reflection (n <= the radius): clamped into the axis.
  EXPECT_EQ(BlurReflect(-5, 3), 0);
  EXPECT_EQ(BlurReflect(7, 3), 0);
  EXPECT_EQ(BlurReflect(3, 1), 0);
}

constexpr int kThreadsPerBlock = kBlurThreads, kStageFloats = 4 * kThreadsPerBlock, kTileX = kBlurTX,
              kTileY = kBlurTY;

// One block's copies of one halo plane, replayed: the source offset each stage float receives (−1: none), and how
// many copies wrote it; a misplaced copy is a fatal test failure.
struct Replay {
  std::vector<int> value = std::vector<int>(kStageFloats, -1);
  std::vector<int> writes = std::vector<int>(kStageFloats, 0);
};

void ReplayPlane(int rows, int y_first, int x0, int P1, int P2, Replay& r, int& mixed_warps) {
  const int chunks = rows * kHaloChunkRow;
  int kinds[kThreadsPerBlock / 32] = {};  // bit 0 interior, 1 edge, 2 padding
  for (int t = 0; t < kThreadsPerBlock; ++t) {
    const HaloChunk c = PlanHaloChunk(t, rows, y_first, x0, P1, P2);
    ASSERT_EQ(c.dst % 4, 0) << "t " << t;  // 16-byte aligned in the stage
    ASSERT_GE(c.dst, 0) << "t " << t;
    ASSERT_LE(c.dst + 4, kStageFloats) << "t " << t;
    if (t >= chunks) {
      ASSERT_FALSE(c.edge);
      ASSERT_EQ(c.off, 0);
      ASSERT_GE(c.dst, 4 * chunks) << "padding lands past the plane's chunks";
      kinds[t / 32] |= 4;
      continue;
    }
    kinds[t / 32] |= c.edge ? 2 : 1;
    if (!c.edge) {
      ASSERT_GE(c.vc, 0) << "t " << t;
      ASSERT_LE(c.vc + 4, P2) << "t " << t;
      ASSERT_EQ(c.off % 4, 0) << "a 16-byte copy from an aligned offset";
    } else {
      ASSERT_TRUE(c.vc < 0 || c.vc + 4 > P2) << "an edge chunk lies past an edge, t " << t;
    }
    for (int e = 0; e < 4; ++e) {
      const int src = c.edge ? c.off - c.vc + BlurReflect(c.vc + e, P2) : c.off + e;
      r.value[c.dst + e] = src;
      ++r.writes[c.dst + e];
    }
  }
  mixed_warps = 0;
  for (int k : kinds) mixed_warps += (k != 1 && k != 2 && k != 4 && k != 0) ? 1 : 0;
}

TEST(BlurMath, HaloChunksFillEveryStageSlotOnceWithItsReflectedVoxel) {
  int planes = 0, worst_mixed = 0;
  for (int radius = 1; radius <= 4; ++radius) {
    const int rows = kTileY + 2 * radius;
    for (int P2 = 4; P2 <= 296; P2 += 4) {
      for (int P1 : {1, 2, 3, 19, 40}) {
        for (int y0 = 0; y0 < P1; y0 += kTileY) {
          for (int x0 = 0; x0 < P2; x0 += kTileX) {
            Replay r;
            int mixed = 0;
            ReplayPlane(rows, y0 - radius, x0, P1, P2, r, mixed);
            if (HasFatalFailure()) {
              ADD_FAILURE() << "radius " << radius << " P1 " << P1 << " P2 " << P2 << " y0 " << y0 << " x0 " << x0;
              return;
            }
            worst_mixed = std::max(worst_mixed, mixed);
            ASSERT_LE(mixed, 2) << "radius " << radius << " P2 " << P2 << " x0 " << x0;
            for (int i = 0; i < rows; ++i) {
              for (int col = 0; col < 4 * kHaloChunkRow; ++col) {
                const int slot = i * 4 * kHaloChunkRow + col;
                const int want = BlurReflect(y0 - radius + i, P1) * P2 + BlurReflect(x0 - 4 + col, P2);
                ASSERT_EQ(r.writes[slot], 1) << "row " << i << " col " << col << " P2 " << P2 << " x0 " << x0;
                ASSERT_EQ(r.value[slot], want) << "row " << i << " col " << col << " P2 " << P2 << " x0 " << x0;
              }
            }
            ++planes;
          }
        }
      }
    }
  }
  EXPECT_GT(planes, 10000);
  EXPECT_EQ(worst_mixed, 2);  // the bound is reached (e.g. radius 2, P2 = 128, the first tile)
}

}  // namespace
}  // namespace augmentd::cuda
