#include "augment/transforms/spatial.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "augment/kernels/cpu_half.h"
#include "augment/kernels/cpu_spatial.h"
#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

SpatialConfig NnunetLike(std::vector<int64_t> patch) {
  SpatialConfig c;
  c.patch_size = std::move(patch);
  c.p_rotation = 0.2;
  c.rotation = RandomScalar::Uniform(-0.5236, 0.5236);
  c.p_scaling = 0.2;
  c.scaling = RandomScalar::Uniform(0.7, 1.4);
  c.p_synchronize_scaling_across_axes = 1;
  c.bg_style_seg_sampling = false;
  c.border_mode_seg = "constant";
  c.padding_value_seg = -1;
  return c;
}

SampleData Ramp(std::vector<int64_t> shape) {
  SampleData s = testing::RandomSample(1, shape);
  const int64_t inner = s.voxels() / shape[0];
  for (int64_t i = 0; i < s.voxels(); ++i) {
    s.image[i] = static_cast<float>(i / inner);  // value = axis-0 index
    s.seg[i] = static_cast<int16_t>(i / inner);
  }
  return s;
}

TEST(Spatial, CropShortcutAndHalfVoxelQuirk) {
  auto t = SpatialTransform::Create(NnunetLike({4, 4, 4}));
  ASSERT_TRUE(t.ok());
  for (int64_t S : {9, 10}) {
    SampleData crop = Ramp({S, S, S}), grid = crop;
    SpatialParams p;
    p.center_location_in_pixels = {S / 2.0, S / 2.0, S / 2.0};
    ASSERT_TRUE((*t)->Apply(p, crop).ok());
    p.affine = std::vector<double>{1, 0, 0, 0, 1, 0, 0, 0, 1};
    ASSERT_TRUE((*t)->Apply(p, grid).ok());
    for (int i = 0; i < 4; ++i) {
      const float c = crop.image[i * 16 + 5], g = grid.image[i * 16 + 5];
      if (S == 9) {
        EXPECT_EQ(c, 2 + i);            // crop path rows 2..5
        EXPECT_NEAR(g, 2.5 + i, 1e-5);  // grid path rows 2.5..5.5
      } else {
        EXPECT_EQ(c, 3 + i);
        EXPECT_NEAR(g, 3 + i, 1e-5);
      }
    }
    EXPECT_EQ(crop.shape, (std::vector<int64_t>{4, 4, 4}));
  }
}

TEST(Spatial, AffineIsRzRyRxS) {
  const double a0 = 0.3, a1 = -0.2, a2 = 0.5, s = 1.1;
  const auto A = SpatialTransform::AffineMatrix({a0, a1, a2}, {s, s, s});
  const double rx[9] = {1, 0, 0, 0, std::cos(a0), -std::sin(a0), 0, std::sin(a0), std::cos(a0)};
  const double ry[9] = {std::cos(a1), 0, std::sin(a1), 0, 1, 0, -std::sin(a1), 0, std::cos(a1)};
  const double rz[9] = {std::cos(a2), -std::sin(a2), 0, std::sin(a2), std::cos(a2), 0, 0, 0, 1};
  double t1[9] = {}, t2[9] = {};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) t1[i * 3 + j] += rz[i * 3 + k] * ry[k * 3 + j];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) t2[i * 3 + j] += t1[i * 3 + k] * rx[k * 3 + j];
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(A[i], t2[i] * s, 1e-12);
}

TEST(Spatial, FusedLabelsEqualPerLabelArgmax) {
  // bgv2's unfused algorithm: per label, trilinear of 1000·onehot, fp16, running strict max from the lowest label.
  SampleData s = testing::RandomSample(1, {13, 15, 14}, 1, -1, 4, 7);
  auto t = SpatialTransform::Create(NnunetLike({9, 10, 11}));
  SpatialParams p;
  p.affine = SpatialTransform::AffineMatrix({0.4, -0.3, 0.2}, {1.2, 1.2, 1.2});
  p.center_location_in_pixels = {6.5, 7.5, 7.0};
  SampleData fused = s;
  ASSERT_TRUE((*t)->Apply(p, fused).ok());

  kernels::GridSpec g;
  for (int d = 0; d < 3; ++d) {
    g.in_shape[d] = s.shape[d];
    g.out_shape[d] = (*t) ? static_cast<const SpatialTransform&>(**t).config().patch_size[d] : 0;
    g.shift[d] = static_cast<float>(p.center_location_in_pixels[d] - s.shape[d] / 2.0);
  }
  g.has_affine = true;
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 3; ++k) g.affine[r][k] = static_cast<float>((*p.affine)[r * 3 + k]);
  const int64_t n_out = kernels::NumOut(g);
  std::vector<float> grid(n_out * 3);
  kernels::ComputeSamplingGrid(g, nullptr, false, grid.data());
  std::set<int16_t> labels(s.seg.begin(), s.seg.end());
  std::vector<float> best(n_out), cur(n_out), onehot(s.seg.size());
  std::vector<int16_t> ref(n_out, *labels.begin());
  bool first = true;
  for (int16_t u : labels) {
    for (size_t i = 0; i < s.seg.size(); ++i) onehot[i] = s.seg[i] == u ? 1000.0f : 0.0f;
    kernels::SampleImage(g, onehot.data(), 1, grid.data(), kernels::InterpMode::kLinear, false, 0, cur.data());
    for (int64_t v = 0; v < n_out; ++v) {
      const float h = kernels::RoundToHalf(cur[v]);
      if (first) {
        best[v] = h;
      } else if (h > best[v]) {
        best[v] = h;
        ref[v] = u;
      }
    }
    first = false;
  }
  for (int64_t v = 0; v < n_out; ++v)
    if (kernels::OutOfBounds(g, grid.data() + v * 3)) ref[v] = -1;
  EXPECT_EQ(fused.seg, ref);
}

TEST(Spatial, ScalingDownSamplesOutsideAndGetsMinusOneBorder) {
  SampleData s = testing::RandomSample(2, {10, 20, 40}, 1, 1, 1);  // seg all ones
  auto t = SpatialTransform::Create(NnunetLike({10, 20, 40}));
  SpatialParams p;
  p.affine = SpatialTransform::AffineMatrix({0, 0, 0}, {1.05, 1.05, 1.05});
  p.center_location_in_pixels = {5, 10, 20};
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  // Reference §11: axis 2 planes 0,1,2 and 37,38,39 fully −1 (swapped-threshold quirk), interior ones 1.
  for (int k : {0, 1, 2, 37, 38, 39}) EXPECT_EQ(s.seg[(5 * 20 + 10) * 40 + k], -1) << k;
  EXPECT_EQ(s.seg[(5 * 20 + 10) * 40 + 20], 1);
}

TEST(Spatial, DrawProbabilitiesAndIsotropicScale) {
  auto t = SpatialTransform::Create(NnunetLike({8, 8, 8}));
  ASSERT_TRUE(t.ok());
  int with_affine = 0;
  const int n = 5000;
  for (int k = 0; k < n; ++k) {
    auto p = testing::DrawFor(**t, {1, {12, 12, 12}, 1}, 99, k);
    const auto& sp = static_cast<const SpatialParams&>(*p);
    EXPECT_EQ(sp.center_location_in_pixels, (std::vector<double>{6, 6, 6}));
    if (sp.affine) ++with_affine;
  }
  EXPECT_NEAR(with_affine / static_cast<double>(n), 0.36, 0.02);  // 1 − 0.8²
}

TEST(Spatial, DummyTwoDAppliesTheSamePlaneTransformToEverySlice) {
  SpatialConfig c = NnunetLike({12, 10});
  c.dummy_2d = true;
  auto t3 = SpatialTransform::Create(c);
  ASSERT_TRUE(t3.ok());
  SampleData s = testing::RandomSample(2, {3, 16, 14});
  SpatialParams p;
  p.ndim = 2;
  p.affine = SpatialTransform::AffineMatrix({0, 0.6}, {0.9, 0.9});
  p.center_location_in_pixels = {8, 7};
  SampleData out = s;
  ASSERT_TRUE((*t3)->Apply(p, out).ok());
  EXPECT_EQ(out.shape, (std::vector<int64_t>{3, 12, 10}));
  // Slice (channel 1, x = 2) equals the 2D transform of that slice alone.
  SpatialConfig c2 = NnunetLike({12, 10});
  auto t2 = SpatialTransform::Create(c2);
  SampleData slice;
  slice.channels = 1;
  slice.shape = {16, 14};
  slice.image.assign(s.image.begin() + (1 * 3 + 2) * 224, s.image.begin() + (1 * 3 + 2) * 224 + 224);
  slice.seg_channels = 1;
  slice.seg.assign(s.seg.begin() + 2 * 224, s.seg.begin() + 3 * 224);
  ASSERT_TRUE((*t2)->Apply(p, slice).ok());
  for (int i = 0; i < 120; ++i) EXPECT_EQ(out.image[(1 * 3 + 2) * 120 + i], slice.image[i]);
  for (int i = 0; i < 120; ++i) EXPECT_EQ(out.seg[2 * 120 + i], slice.seg[i]);
}

TEST(Spatial, BadConfigAndParamsAreInvalidArgument) {
  SpatialConfig c = NnunetLike({8, 8, 8, 8});
  EXPECT_EQ(SpatialTransform::Create(c).status().code(), absl::StatusCode::kInvalidArgument);
  c = NnunetLike({8, 8, 8});
  c.border_mode_seg = "reflection";
  EXPECT_EQ(SpatialTransform::Create(c).status().code(), absl::StatusCode::kInvalidArgument);
  c = NnunetLike({8, 8, 8});
  c.p_rotation = std::nan("");
  EXPECT_EQ(SpatialTransform::Create(c).status().code(), absl::StatusCode::kInvalidArgument);
  c = NnunetLike({100000, 8, 8});
  EXPECT_EQ(SpatialTransform::Create(c).status().code(), absl::StatusCode::kInvalidArgument);
  auto t = SpatialTransform::Create(NnunetLike({8, 8, 8}));
  auto p = (*t)->ParamsFromJson({{"affine", {{1, 0}, {0, 1}}}}, {1, {10, 10, 10}, 1});
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("params.affine"), std::string::npos);
}

}  // namespace
}  // namespace augmentd
