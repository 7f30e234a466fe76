#include "augment/transforms/spatial/spatial.h"

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
  c.bgv2_version = "0.3.5";  // the tests below that do not name a release pin 0.3.5's out-of-bounds fill
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

// bgv2 0.3.6's algorithm, label by label as its Python does it: pad first (the padding label's indicator is
// 1 outside: sample (ind − 1)·1000, add 1000), fp16 scores, the two-label shortcut, a running max with the
// tie-break, and 'nearest' settling ties with the nearest neighbour of the padded segmentation.
std::vector<int16_t> PadFirstReference(const SampleData& s, const kernels::GridSpec& g, const std::vector<float>& grid,
                                       int16_t pad, const std::string& tiebreak) {
  const int64_t n_out = kernels::NumOut(g);
  std::set<int16_t> labels(s.seg.begin(), s.seg.end());
  if (kernels::MayReachOutside(g, grid.data())) labels.insert(pad);
  std::vector<int16_t> ref(n_out, *labels.begin());
  if (labels.size() == 1) return ref;
  std::vector<float> field(s.seg.size());
  auto score = [&](int16_t u) {
    const bool shifted = u == pad && kernels::MayReachOutside(g, grid.data());
    for (size_t i = 0; i < s.seg.size(); ++i) field[i] = (s.seg[i] == u ? 1000.0f : 0.0f) - (shifted ? 1000.0f : 0.0f);
    std::vector<float> out(n_out);
    kernels::SampleImage(g, field.data(), 1, grid.data(), kernels::InterpMode::kLinear, false, 0, out.data());
    for (float& v : out) v = kernels::RoundToHalf(shifted ? v + 1000.0f : v);
    return out;
  };
  std::vector<int16_t> nn(n_out);
  kernels::LabelSampleOptions nearest;
  nearest.mode = kernels::InterpMode::kNearest;
  nearest.pad_first = true;
  nearest.pad_label = pad;
  kernels::SampleLabels(g, s.seg.data(), grid.data(), 0, 0, nearest, nn.data());
  std::vector<float> best, nn_score(n_out, -INFINITY);
  std::vector<bool> tie(n_out, false);
  if (labels.size() == 2) {
    const std::vector<float> hi = score(*labels.rbegin());
    for (int64_t v = 0; v < n_out; ++v) {
      if (tiebreak == "highest" ? hi[v] >= 500 : hi[v] > 500) ref[v] = *labels.rbegin();
      if (tiebreak == "nearest" && hi[v] == 500) ref[v] = nn[v];
    }
    return ref;
  }
  for (int16_t u : labels) {
    const std::vector<float> cur = score(u);
    for (int64_t v = 0; v < n_out; ++v) {
      if (nn[v] == u) nn_score[v] = cur[v];
      if (best.empty()) continue;
      if (tiebreak == "highest" ? cur[v] >= best[v] : cur[v] > best[v]) ref[v] = u;
      best[v] = std::max(best[v], cur[v]);
    }
    if (best.empty()) best = cur;
  }
  for (int64_t v = 0; v < n_out; ++v)
    if (tiebreak == "nearest" && nn_score[v] == best[v]) ref[v] = nn[v];
  return ref;
}

TEST(Spatial, PadFirstVoteEqualsBgv2Algorithm036) {
  for (int n_labels : {2, 5}) {
    for (const std::string tiebreak : {"nearest", "lowest", "highest"}) {
      // labels 1..n_labels (two-label case: {1, 2} plus the padding label makes three; labels {1} + pad makes two)
      for (int lo : {1, 2}) {
        SampleData s = testing::RandomSample(1, {13, 15, 14}, 1, lo, lo + n_labels - 1, 11 + n_labels);
        SpatialConfig c = NnunetLike({12, 13, 12});
        c.bgv2_version = "0.3.6";
        c.seg_tiebreak = tiebreak;
        auto t = SpatialTransform::Create(c);
        ASSERT_TRUE(t.ok()) << t.status();
        SpatialParams p;
        // 1.35: the grid leaves the input; the half-integer shift makes exact 500 / 500 ties
        p.affine = SpatialTransform::AffineMatrix({0.0, 0.0, 0.0}, {1.35, 1.0, 1.35});
        p.center_location_in_pixels = {6.5, 7.0, 7.0};
        SampleData out = s;
        ASSERT_TRUE((*t)->Apply(p, out).ok());
        kernels::GridSpec g;
        for (int d = 0; d < 3; ++d) {
          g.in_shape[d] = s.shape[d];
          g.out_shape[d] = c.patch_size[d];
          g.shift[d] = static_cast<float>(p.center_location_in_pixels[d] - s.shape[d] / 2.0);
        }
        g.has_affine = true;
        for (int r = 0; r < 3; ++r)
          for (int k = 0; k < 3; ++k) g.affine[r][k] = static_cast<float>((*p.affine)[r * 3 + k]);
        std::vector<float> grid(kernels::NumOut(g) * 3);
        kernels::ComputeSamplingGrid(g, nullptr, false, grid.data());
        ASSERT_TRUE(kernels::MayReachOutside(g, grid.data()));
        const std::vector<int16_t> ref = PadFirstReference(s, g, grid, -1, tiebreak);
        EXPECT_EQ(out.seg, ref) << n_labels << " labels from " << lo << ", " << tiebreak;
        EXPECT_NE(std::count(ref.begin(), ref.end(), -1), 0);
      }
    }
  }
}

TEST(Spatial, PadFirstBorderEndsAtTheOuterPixelEdge036) {
  // 0.3.5 (ScalingDownSamplesOutsideAndGetsMinusOneBorder): planes 0-2 and 37-39 of axis 2 become −1 (the
  // swapped-threshold mask). 0.3.6 pads first: only where the padding outweighs the image (x < −0.5 or
  // x > S − 0.5): planes 0 and 39 (x = −0.975, 39.975); x = 0.075 is inside.
  SampleData s = testing::RandomSample(2, {10, 20, 40}, 1, 1, 1);
  SpatialConfig c = NnunetLike({10, 20, 40});
  c.bgv2_version = "0.3.6";
  auto t = SpatialTransform::Create(c);
  SpatialParams p;
  p.affine = SpatialTransform::AffineMatrix({0, 0, 0}, {1.05, 1.05, 1.05});
  p.center_location_in_pixels = {5, 10, 20};
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  for (int k : {0, 39}) EXPECT_EQ(s.seg[(5 * 20 + 10) * 40 + k], -1) << k;
  for (int k : {1, 2, 37, 38}) EXPECT_EQ(s.seg[(5 * 20 + 10) * 40 + k], 1) << k;
}

TEST(Spatial, ConstantImagePaddingShiftsValues036) {
  // 0.3.6: grid_sample(image − v) + v: a voxel half outside blends towards v instead of being set to v.
  SampleData s = testing::RandomSample(1, {8, 8, 8});
  std::fill(s.image.begin(), s.image.end(), 2.0f);
  SpatialConfig c = NnunetLike({8, 8, 8});
  c.padding_mode_image = "constant";
  c.padding_value_image = -4;
  c.bgv2_version = "0.3.6";
  SpatialParams p;
  p.affine = SpatialTransform::AffineMatrix({0, 0, 0}, {1.0, 1.0, 1.0});
  p.center_location_in_pixels = {4.5, 4, 4};  // axis 0 shifted by half a voxel
  SampleData a = s;
  ASSERT_TRUE((*SpatialTransform::Create(c))->Apply(p, a).ok());
  EXPECT_FLOAT_EQ(a.image[(7 * 8 + 4) * 8 + 4], 0.5f * 2.0f + 0.5f * -4.0f);  // x = 7.5: half image, half pad
  EXPECT_FLOAT_EQ(a.image[(3 * 8 + 4) * 8 + 4], 2.0f);
  c.bgv2_version = "0.3.5";
  SampleData b = s;
  ASSERT_TRUE((*SpatialTransform::Create(c))->Apply(p, b).ok());
  EXPECT_FLOAT_EQ(b.image[(7 * 8 + 4) * 8 + 4], -4.0f);  // 0.3.5: flagged out of bounds, filled
}

TEST(Spatial, ReleaseAndTiebreakConfig) {
  auto j = [](nlohmann::json extra) {
    nlohmann::json c = {{"patch_size", {8, 8, 8}}};
    if (extra.is_object()) c.update(extra);
    return SpatialTransform::FromJson(c);
  };
  auto d = j({});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)->ConfigToJson()["bgv2_version"], "0.3.6");
  EXPECT_EQ((*d)->ConfigToJson()["seg_tiebreak"], "nearest");
  EXPECT_EQ((*d)->ConfigToJson()["bg_style_seg_sampling"], false);  // 0.3.6's constructor default
  auto old = j({{"bgv2_version", "0.3.5"}});
  ASSERT_TRUE(old.ok());
  EXPECT_EQ((*old)->ConfigToJson()["seg_tiebreak"], "lowest");
  EXPECT_EQ((*old)->ConfigToJson()["bg_style_seg_sampling"], true);  // 0.3.5's
  EXPECT_TRUE(j({{"bgv2_version", "0.3.5"}, {"seg_tiebreak", "lowest"}}).ok());
  EXPECT_TRUE(j({{"seg_tiebreak", "highest"}}).ok());
  for (const nlohmann::json& bad : {nlohmann::json{{"bgv2_version", "0.3.4"}}, nlohmann::json{{"seg_tiebreak", "x"}},
                                    nlohmann::json{{"bgv2_version", "0.3.5"}, {"seg_tiebreak", "nearest"}}}) {
    auto r = j(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find(bad.contains("seg_tiebreak") ? "seg_tiebreak" : "bgv2_version"),
              std::string::npos)
        << r.status();
  }
  EXPECT_EQ(SupportedBgv2Versions(), (std::vector<std::string>{"0.3.5", "0.3.6"}));
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
