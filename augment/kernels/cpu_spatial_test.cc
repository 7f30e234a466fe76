#include "augment/kernels/cpu_spatial.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace augmentd::kernels {
namespace {

GridSpec Spec(std::vector<int64_t> in, std::vector<int64_t> out) {
  GridSpec g;
  g.ndim = static_cast<int>(in.size());
  for (int d = 0; d < g.ndim; ++d) {
    g.in_shape[d] = in[d];
    g.out_shape[d] = out[d];
  }
  return g;
}

TEST(CpuSpatial, IdentityGridReproducesInputWhenShapesMatch) {
  GridSpec g = Spec({5, 6, 7}, {5, 6, 7});
  std::vector<float> in(5 * 6 * 7);
  for (size_t i = 0; i < in.size(); ++i) in[i] = 0.25f * static_cast<float>(i) - 3.0f;
  std::vector<float> grid(NumOut(g) * 3), out(in.size());
  ComputeSamplingGrid(g, nullptr, false, grid.data());
  SampleImage(g, in.data(), 1, grid.data(), InterpMode::kLinear, false, 0, out.data());
  for (size_t i = 0; i < in.size(); ++i) EXPECT_NEAR(out[i], in[i], 1e-5f);
}

TEST(CpuSpatial, CropStartsAtFloorCentreMinusHalfPatch) {
  // S = 9, p = 4: start = floor(4.5) - 2 = 2 -> rows 2..5 (reference §11).
  std::vector<float> in(9);
  for (int i = 0; i < 9; ++i) in[i] = static_cast<float>(i);
  const int64_t is[2] = {1, 9}, os[2] = {1, 4}, st[2] = {0, 2};
  std::vector<float> out(4);
  CropImage(in.data(), 1, is, os, st, 2, -7.0f, out.data());
  EXPECT_EQ(out, (std::vector<float>{2, 3, 4, 5}));
  const int64_t st2[2] = {0, 7};  // runs past the end: padded
  CropImage(in.data(), 1, is, os, st2, 2, -7.0f, out.data());
  EXPECT_EQ(out, (std::vector<float>{7, 8, -7, -7}));
}

TEST(CpuSpatial, GridPathHasHalfVoxelOffsetForOddDifference) {
  // S = 9, p = 4, identity affine: samples 2.5, 3.5, 4.5, 5.5 (the crop path gives 2..5).
  GridSpec g = Spec({9, 3, 3}, {4, 1, 1});
  g.has_affine = true;
  std::vector<float> in(9 * 3 * 3);
  for (int i = 0; i < 9; ++i)
    for (int j = 0; j < 9; ++j) in[i * 9 + j] = static_cast<float>(i);
  std::vector<float> grid(NumOut(g) * 3), out(4);
  ComputeSamplingGrid(g, nullptr, false, grid.data());
  SampleImage(g, in.data(), 1, grid.data(), InterpMode::kLinear, false, 0, out.data());
  const float expect[4] = {2.5f, 3.5f, 4.5f, 5.5f};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(out[i], expect[i], 1e-5f);
}

TEST(CpuSpatial, OutOfBoundsUsesSwappedAxisThresholds) {
  // bgv2 compares the coordinate of axis 0 with the threshold of axis 2 (and vice versa).
  GridSpec g = Spec({10, 20, 40}, {1, 1, 1});
  const float lo_axis2 = -1.0f + 1.0f / 40.0f;  // threshold bgv2 applies to axis 0's coordinate... swapped:
  // axis-0 coordinate is compared with 1/S_2 = 1/40, axis-2 coordinate with 1/S_0 = 1/10.
  float inside_for_axis0[3] = {lo_axis2 + 1e-4f, 0.0f, 0.0f};
  EXPECT_FALSE(OutOfBounds(g, inside_for_axis0));
  float outside_axis0[3] = {lo_axis2 - 1e-4f, 0.0f, 0.0f};
  EXPECT_TRUE(OutOfBounds(g, outside_axis0));
  float axis2_mid[3] = {0.0f, 0.0f, -1.0f + 1.0f / 10.0f - 1e-4f};
  EXPECT_TRUE(OutOfBounds(g, axis2_mid));
  float axis2_in[3] = {0.0f, 0.0f, -1.0f + 1.0f / 10.0f + 1e-4f};
  EXPECT_FALSE(OutOfBounds(g, axis2_in));
}

TEST(CpuSpatial, LabelTieGoesToLowestLabel) {
  // 1D-like: labels 3 | 1 along the last axis, sample exactly halfway: scores 500/500 -> label 1.
  GridSpec g = Spec({1, 1, 2}, {1, 1, 1});
  const int16_t in[2] = {3, 1};
  std::vector<float> grid(3);
  ComputeSamplingGrid(g, nullptr, false, grid.data());  // centre of (1,1,2) is the midpoint of the two voxels
  int16_t out = 0;
  LabelSampleOptions opt;
  SampleLabels(g, in, grid.data(), /*lowest_label=*/1, 2, opt, &out);
  EXPECT_EQ(out, 1);
}

TEST(CpuSpatial, FullyOutsideVoxelGetsLowestLabelOrFill) {
  GridSpec g = Spec({4, 4, 4}, {1, 1, 1});
  g.shift[0] = 100.0f;  // far outside
  std::vector<int16_t> in(64, 5);
  in[3] = 2;
  std::vector<float> grid(3);
  ComputeSamplingGrid(g, nullptr, false, grid.data());
  int16_t out = 0;
  LabelSampleOptions opt;
  SampleLabels(g, in.data(), grid.data(), 2, 2, opt, &out);
  EXPECT_EQ(out, 2);
  opt.fill_out_of_bounds = true;
  opt.fill_value = -1;
  SampleLabels(g, in.data(), grid.data(), 2, 2, opt, &out);
  EXPECT_EQ(out, -1);
}

TEST(CpuSpatial, MayReachOutsideIsBgv2sGridBound) {
  // bound = min_d(1 − 1/S_d); the identity grid of S == p sits exactly on the outermost pixel centres.
  // (S = 4: max 1.5/2 = 0.75 exactly; at S = 5, 2/2.5 rounds to 0.80000001f > 0.8 and bgv2 says "may reach")
  GridSpec g = Spec({4, 4, 4}, {4, 4, 4});
  std::vector<float> grid(NumOut(g) * 3);
  ComputeSamplingGrid(g, nullptr, false, grid.data());
  EXPECT_FALSE(MayReachOutside(g, grid.data()));
  GridSpec aniso = Spec({5, 6, 7}, {5, 6, 7});  // bgv2 bounds every axis by the smallest one's: conservative
  std::vector<float> grid2(NumOut(aniso) * 3);
  ComputeSamplingGrid(aniso, nullptr, false, grid2.data());
  EXPECT_TRUE(MayReachOutside(aniso, grid2.data()));
  g.has_affine = true;
  g.affine[0][0] = 1.01f;  // axis 0 beyond 1 − 1/4
  ComputeSamplingGrid(g, nullptr, false, grid.data());
  EXPECT_TRUE(MayReachOutside(g, grid.data()));
  GridSpec small = Spec({9, 9, 9}, {5, 5, 5});
  grid.assign(NumOut(small) * 3, 0.0f);
  ComputeSamplingGrid(small, nullptr, false, grid.data());
  EXPECT_FALSE(MayReachOutside(small, grid.data()));
  grid[4] = NAN;
  EXPECT_TRUE(MayReachOutside(small, grid.data()));
}

TEST(CpuSpatial, MayReachOutsideAffineEqualsTheFullGrid) {
  // Random affines and shifts near the boundary: the corner test gives the full grid's answer every time.
  uint32_t state = 12345;
  auto u = [&state](float lo, float hi) {
    state = state * 1664525u + 1013904223u;
    return lo + (hi - lo) * static_cast<float>(state >> 8) / 16777216.0f;
  };
  int reach = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int nd = trial % 4 == 0 ? 2 : 3;
    GridSpec g = nd == 3 ? Spec({20, 24, 18}, {16, 21, 15}) : Spec({20, 24}, {16, 21});
    g.has_affine = true;
    for (int r = 0; r < nd; ++r) {
      for (int k = 0; k < nd; ++k) g.affine[r][k] = (r == k ? u(0.55f, 1.1f) : u(-0.12f, 0.12f));
      g.shift[r] = u(-1.0f, 1.0f);
    }
    std::vector<float> grid(NumOut(g) * nd);
    ComputeSamplingGrid(g, nullptr, false, grid.data());
    const bool full = MayReachOutside(g, grid.data());
    EXPECT_EQ(MayReachOutsideAffine(g), full) << trial;
    reach += full ? 1 : 0;
  }
  EXPECT_GT(reach, 40);   // both answers occur
  EXPECT_LT(reach, 360);
}

TEST(CpuSpatial, NearestLabelsPadFirstTakeThePaddingLabelOutside) {
  GridSpec g = Spec({4, 4, 4}, {6, 4, 4});  // axis 0: two output rows outside
  std::vector<int16_t> in(64, 3), out(96);
  std::vector<float> grid(NumOut(g) * 3);
  ComputeSamplingGrid(g, nullptr, false, grid.data());
  LabelSampleOptions opt;
  opt.mode = InterpMode::kNearest;
  opt.pad_first = true;
  opt.pad_label = -1;
  SampleLabels(g, in.data(), grid.data(), 3, 1, opt, out.data());
  EXPECT_EQ(out[0], -1);
  EXPECT_EQ(out[16], 3);
  EXPECT_EQ(out[95], -1);
  opt.pad_first = false;  // 0.3.5: grid_sample's zero padding
  SampleLabels(g, in.data(), grid.data(), 3, 1, opt, out.data());
  EXPECT_EQ(out[0], 0);
}

TEST(CpuSpatial, ShiftedImagePaddingNearestAndLinear) {
  GridSpec g = Spec({3, 3, 3}, {5, 3, 3});
  std::vector<float> in(27, 1.5f), out(45), grid(NumOut(g) * 3);
  ComputeSamplingGrid(g, nullptr, false, grid.data());
  SampleImageShifted(g, in.data(), 1, grid.data(), InterpMode::kNearest, -2.0f, out.data());
  EXPECT_EQ(out[0], -2.0f);
  EXPECT_EQ(out[9 + 4], 1.5f);
  SampleImageShifted(g, in.data(), 1, grid.data(), InterpMode::kLinear, -2.0f, out.data());
  EXPECT_EQ(out[0], -2.0f);
  EXPECT_EQ(out[2 * 9 + 4], 1.5f);
}

}  // namespace
}  // namespace augmentd::kernels
