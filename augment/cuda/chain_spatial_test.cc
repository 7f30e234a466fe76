// Host-side tests (no GPU needed) of the generic CUDA chain's spatial records (cuda/chain_spatial.h), its 2D-sample
// parameter lifting (cuda/chain_2d.h) and the chain's coverage and output layouts for 2D samples and dummy-2D
// (CudaChain::Create / OutputLayout answer without a device). The GPU cases are in chain_test.cc.
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "augment/cuda/chain.h"
#include "augment/cuda/chain_2d.h"
#include "augment/cuda/chain_spatial.h"
#include "augment/kernels/cpu_blur.h"
#include "augment/kernels/cpu_spatial.h"
#include "augment/pipeline.h"
#include "augment/transforms/gaussian_blur/gaussian_blur.h"
#include "augment/transforms/mirror/mirror.h"
#include "augment/transforms/rot90/rot90.h"
#include "augment/transforms/simulate_low_resolution/simulate_low_resolution.h"
#include "augment/transforms/spatial/spatial.h"
#include "augment/transforms/transpose_axes/transpose_axes.h"
#include "gtest/gtest.h"

namespace augmentd {
namespace {

namespace ch = cuda::chain;

SpatialConfig Nnunet3d() {
  SpatialConfig c;
  c.patch_size = {16, 20, 24};
  c.bg_style_seg_sampling = false;
  c.border_mode_seg = "constant";
  c.padding_value_seg = -1;
  return c;
}

std::unique_ptr<ChainSpatial> Make(const SpatialConfig& c, std::shared_ptr<const Transform>& keep) {
  keep = *SpatialTransform::Create(c);
  auto s = ChainSpatial::Create(static_cast<const SpatialTransform&>(*keep), 0);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

TEST(ChainSpatial, NeededOnlyForWhatTheFusedKernelLacks) {
  EXPECT_FALSE(ChainSpatial::Needed(Nnunet3d()));
  SpatialConfig c = Nnunet3d();
  c.padding_value_seg = 0;
  EXPECT_FALSE(ChainSpatial::Needed(c));
  const std::vector<void (*)(SpatialConfig&)> changes = {
      [](SpatialConfig& x) { x.patch_size = {20, 24}; },
      [](SpatialConfig& x) {
        x.patch_size = {20, 24};
        x.dummy_2d = true;
      },
      [](SpatialConfig& x) { x.random_crop = true; },
      [](SpatialConfig& x) { x.mode_seg = "nearest"; },
      [](SpatialConfig& x) { x.mode_image = "nearest"; },
      [](SpatialConfig& x) { x.padding_value_seg = 2; },
      [](SpatialConfig& x) {
        x.padding_mode_image = "constant";
        x.padding_value_image = 0.5;
      },
  };
  for (auto change : changes) {
    SpatialConfig x = Nnunet3d();
    change(x);
    EXPECT_TRUE(ChainSpatial::Needed(x));
  }
}

TEST(ChainSpatial, BgStyleSamplingRunsTheThresholdVote) {
  std::shared_ptr<const Transform> keep;
  SpatialConfig c = Nnunet3d();
  c.bg_style_seg_sampling = true;
  c.bgv2_version = "0.3.5";              // 0.3.5's threshold vote (0.3.6 ignores the flag: same argmax)
  EXPECT_TRUE(ChainSpatial::Needed(c));  // the fused kernel has no threshold vote
  auto s = Make(c, keep);
  ASSERT_NE(s, nullptr);
  auto g = s->Geometry({30, 31, 32}, 2, 1, 1);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->bg_style, 1);
  c.mode_seg = "nearest";  // no vote at all
  auto n = Make(c, keep);
  EXPECT_EQ(n->Geometry({30, 31, 32}, 2, 1, 1)->bg_style, 0);
  c = Nnunet3d();
  EXPECT_EQ(Make(c, keep)->Geometry({30, 31, 32}, 2, 1, 1)->bg_style, 0);
}

TEST(ChainSpatial, Bgv2ReleaseGeometry) {
  std::shared_ptr<const Transform> keep;
  SpatialConfig c = Nnunet3d();
  c.bg_style_seg_sampling = true;  // irrelevant in 0.3.6: the fused kernel takes it
  c.bgv2_version = "0.3.6";
  c.seg_tiebreak = "highest";
  c.padding_mode_image = "constant";
  c.padding_value_image = 2;
  auto g = Make(c, keep)->Geometry({30, 31, 32}, 2, 1, 1);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->pad_first, 1);
  EXPECT_EQ(g->pad_label, -1);
  EXPECT_EQ(g->tiebreak, 2);
  EXPECT_EQ(g->bg_style, 0);
  EXPECT_EQ(g->seg_fill, 0);  // no out-of-bounds fill in 0.3.6
  EXPECT_EQ(g->image_fill, 0);
  EXPECT_EQ(g->image_shifted, 1);
  EXPECT_FLOAT_EQ(g->image_shift, 2.0f);
  c.padding_mode_image = "zeros";
  EXPECT_FALSE(ChainSpatial::Needed(c));
  c.bgv2_version = "0.3.5";
  c.seg_tiebreak.clear();
  auto old = Make(c, keep)->Geometry({30, 31, 32}, 2, 1, 1);
  EXPECT_EQ(old->pad_first, 0);
  EXPECT_EQ(old->seg_fill, 1);
  EXPECT_EQ(old->bg_style, 1);
}

TEST(ChainSpatial, PadVotesFollowTheGrid) {
  std::shared_ptr<const Transform> keep;
  SpatialConfig c = Nnunet3d();
  c.bgv2_version = "0.3.6";
  auto s = Make(c, keep);
  auto g = *s->Geometry({20, 21, 22}, 1, 1, 1);
  std::vector<float> grids;
  ch::SpatialSampleRec rec;
  SpatialParams p;
  p.affine = SpatialTransform::AffineMatrix({0, 0, 0}, {0.5, 0.5, 0.5});  // well inside
  p.center_location_in_pixels = {10, 10.5, 11};
  ASSERT_TRUE(s->AddSample(&p, g, grids, rec).ok());
  EXPECT_EQ(rec.pad_votes, 0);
  p.affine = SpatialTransform::AffineMatrix({0.3, 0, 0}, {1.5, 1.5, 1.5});  // reaches outside
  ASSERT_TRUE(s->AddSample(&p, g, grids, rec).ok());
  EXPECT_EQ(rec.pad_votes, 1);
}

TEST(ChainSpatial, GeometryOfDummy2dAnd2dSamples) {
  std::shared_ptr<const Transform> keep;
  SpatialConfig c = Nnunet3d();
  c.patch_size = {20, 21};
  c.dummy_2d = true;
  c.mode_seg = "nearest";
  c.bgv2_version = "0.3.5";  // the out-of-bounds fill (0.3.6 pads instead: Bgv2ReleaseGeometry)
  c.padding_mode_image = "constant";
  c.padding_value_image = 0.25;
  auto s = Make(c, keep);
  auto g = s->Geometry({7, 30, 31}, 3, 2, 1);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->ndim, 2);
  EXPECT_EQ(g->fold, 7);
  EXPECT_EQ(g->in[0], 30);
  EXPECT_EQ(g->in[1], 31);
  EXPECT_EQ(g->out[0], 20);
  EXPECT_EQ(g->out[1], 21);
  EXPECT_EQ(g->seg_nearest, 1);
  EXPECT_EQ(g->image_nearest, 0);
  EXPECT_EQ(g->image_fill, 1);
  EXPECT_EQ(g->image_fill_value, 0.25f);
  EXPECT_EQ(g->image_crop_pad, 0.25f);
  EXPECT_EQ(g->seg_fill, 1);
  EXPECT_EQ(g->seg_fill_value, -1);
  EXPECT_EQ(s->OutputShape({7, 30, 31}), (std::vector<int64_t>{7, 20, 21}));
  EXPECT_TRUE(absl::IsInvalidArgument(s->Geometry({30, 31}, 3, 2, 1).status()));  // dummy-2D needs 3D samples
  EXPECT_TRUE(absl::IsUnimplemented(s->Geometry({7000, 30, 31}, 10, 1, 1).status()));  // > 65535 planes

  c.dummy_2d = false;
  auto s2 = Make(c, keep);
  auto g2 = s2->Geometry({30, 31}, 3, 2, 0);
  ASSERT_TRUE(g2.ok()) << g2.status();
  EXPECT_EQ(g2->fold, 1);
  EXPECT_EQ(g2->ndim, 2);
  EXPECT_TRUE(absl::IsInvalidArgument(s2->Geometry({7, 30, 31}, 3, 2, 0).status()));
}

TEST(ChainSpatial, CropRecordsFollowTheCpuCropStart) {
  std::shared_ptr<const Transform> keep;
  SpatialConfig c = Nnunet3d();
  c.patch_size = {20, 21};
  auto s = Make(c, keep);
  auto g = *s->Geometry({33, 30}, 1, 1, 1);
  SpatialParams p;
  p.ndim = 2;
  p.center_location_in_pixels = {16.7, 9.2};  // random_crop draws any centre
  std::vector<float> grids;
  ch::SpatialSampleRec rec;
  ASSERT_TRUE(s->AddSample(&p, g, grids, rec).ok());
  EXPECT_EQ(rec.grid, -1);
  EXPECT_EQ(rec.start[0], 16 - 10);
  EXPECT_EQ(rec.start[1], 9 - 10);
  EXPECT_TRUE(grids.empty());
  p.center_location_in_pixels = {1.0};
  EXPECT_TRUE(absl::IsInvalidArgument(s->AddSample(&p, g, grids, rec)));
  // Not applied: only a sample that already has the patch shape (copied by a crop at 0).
  EXPECT_TRUE(absl::IsInvalidArgument(s->AddSample(nullptr, g, grids, rec)));
  auto same = *s->Geometry({20, 21}, 1, 1, 1);
  ASSERT_TRUE(s->AddSample(nullptr, same, grids, rec).ok());
  EXPECT_EQ(rec.grid, -1);
  EXPECT_EQ(rec.start[0], 0);
  EXPECT_EQ(rec.start[1], 0);
}

TEST(ChainSpatial, GridRecordsAreTheCpuGrid) {
  std::shared_ptr<const Transform> keep;
  SpatialConfig c = Nnunet3d();
  c.patch_size = {9, 11};
  c.dummy_2d = true;
  auto s = Make(c, keep);
  auto g = *s->Geometry({4, 15, 14}, 2, 1, 1);
  SpatialParams p;
  p.ndim = 2;
  p.center_location_in_pixels = {7.5, 7.0};
  p.affine = SpatialTransform::AffineMatrix({0.0, 0.3}, {1.1, 0.9});
  std::vector<float> grids = {42.f};  // earlier samples' grids stay
  ch::SpatialSampleRec rec;
  ASSERT_TRUE(s->AddSample(&p, g, grids, rec).ok());
  EXPECT_EQ(rec.grid, 1);
  ASSERT_EQ(grids.size(), 1u + 9 * 11 * 2);
  kernels::GridSpec gs;
  gs.ndim = 2;
  gs.in_shape[0] = 15;
  gs.in_shape[1] = 14;
  gs.out_shape[0] = 9;
  gs.out_shape[1] = 11;
  gs.has_affine = true;
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 2; ++k) gs.affine[r][k] = static_cast<float>((*p.affine)[r * 2 + k]);
  gs.shift[0] = 0.0f;
  gs.shift[1] = 0.0f;
  std::vector<float> want(9 * 11 * 2);
  kernels::ComputeSamplingGrid(gs, nullptr, false, want.data());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(grids[1 + i], want[i]) << i;
  // Parameters the CPU transform refuses are refused here too (injected JSON reaches both engines).
  p.affine = std::vector<double>{1e300, 0, 0, 1};
  EXPECT_TRUE(absl::IsInvalidArgument(s->AddSample(&p, g, grids, rec)));
  p.affine.reset();
  p.elastic_offsets = std::vector<float>(9 * 11 * 2, 1e30f);
  const absl::Status offsets = s->AddSample(&p, g, grids, rec);
  EXPECT_TRUE(absl::IsInvalidArgument(offsets)) << offsets;
  EXPECT_NE(offsets.message().find("elastic_offsets"), std::string::npos) << offsets;
}

TEST(Chain2d, StagesWithout2dFormRefuse) {
  EXPECT_TRUE(CheckStage2D(TransformKind::kMirror, 4).ok());
  EXPECT_TRUE(CheckStage2D(TransformKind::kGaussianBlur, 2).ok());
  EXPECT_TRUE(CheckStage2D(TransformKind::kMedianFilter, 5).ok());  // DA5's local stages: cuda/chain_2d_test.cc
}

TEST(Chain2d, LiftsSpatialAxes) {
  EXPECT_EQ(kernels::GaussianKernel1D(kUnitAxisSigma), std::vector<float>{1.0f});
  GaussianBlurParams blur;
  blur.apply_to_channel = {0};
  blur.sigmas = {{0.7, 1.2}};
  auto b = LiftParams2D(TransformKind::kGaussianBlur, blur);
  ASSERT_TRUE(b.ok() && *b != nullptr);
  EXPECT_EQ(static_cast<const GaussianBlurParams&>(**b).sigmas[0], (std::vector<double>{kUnitAxisSigma, 0.7, 1.2}));
  SimulateLowResolutionParams lr;
  lr.apply_to_channel = {0};
  lr.scales = {{0.5f, 0.75f}};
  auto l = LiftParams2D(TransformKind::kSimulateLowResolution, lr);
  ASSERT_TRUE(l.ok() && *l != nullptr);
  EXPECT_EQ(static_cast<const SimulateLowResolutionParams&>(**l).scales[0], (std::vector<float>{1.f, 0.5f, 0.75f}));
  MirrorParams m;
  m.axes = {0, 1};
  auto mm = LiftParams2D(TransformKind::kMirror, m);
  ASSERT_TRUE(mm.ok() && *mm != nullptr);
  EXPECT_EQ(static_cast<const MirrorParams&>(**mm).axes, (std::vector<int64_t>{1, 2}));
  TransposeAxesParams tr;
  tr.axis_order = {0, 2, 1};
  auto tt = LiftParams2D(TransformKind::kTransposeAxes, tr);
  ASSERT_TRUE(tt.ok() && *tt != nullptr);
  EXPECT_EQ(static_cast<const TransposeAxesParams&>(**tt).axis_order, (std::vector<int64_t>{0, 1, 3, 2}));
  Rot90Params r;
  r.num_rot_per_combination = {1};
  r.axis_combinations = {{1, 2}};
  auto rr = LiftParams2D(TransformKind::kRot90, r);
  ASSERT_TRUE(rr.ok() && *rr != nullptr);
  EXPECT_EQ((static_cast<const Rot90Params&>(**rr).axis_combinations[0]), (std::array<int64_t, 2>{2, 3}));
  // Pointwise stages use their parameters as drawn; 3D parameters are not 2D.
  auto none = LiftParams2D(TransformKind::kGamma, m);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  blur.sigmas = {{0.7, 1.2, 1.0}};
  EXPECT_TRUE(absl::IsInvalidArgument(LiftParams2D(TransformKind::kGaussianBlur, blur).status()));
  m.axes = {2};
  EXPECT_TRUE(absl::IsInvalidArgument(LiftParams2D(TransformKind::kMirror, m).status()));
}

TrainerConfig Config(std::vector<int64_t> patch, std::vector<std::vector<double>> ds) {
  TrainerConfig tc;
  tc.patch_size = std::move(patch);
  tc.deep_supervision_scales = std::move(ds);
  return tc;
}

TEST(Chain2d, LayoutsOf2dAndDummy2dPresets) {
  auto two = CudaChain::Create(*NnunetDefaultPipeline(Config({37, 45}, {{1, 1}, {0.5, 0.5}})));
  ASSERT_TRUE(two.ok()) << two.status();
  auto lay = (*two)->OutputLayout({2, 1, 60, 70}, DType::kFloat32, 1);
  ASSERT_TRUE(lay.ok()) << lay.status();
  EXPECT_EQ(lay->image_shape, (std::vector<int64_t>{2, 1, 37, 45}));
  ASSERT_EQ(lay->seg_shapes.size(), 2u);
  EXPECT_EQ(lay->seg_shapes[1], (std::vector<int64_t>{2, 1, 18, 22}));  // round half to even of 18.5 and 22.5
  EXPECT_TRUE(absl::IsInvalidArgument((*two)->OutputLayout({2, 1, 5, 60, 70}, DType::kFloat32, 1).status()));

  auto dummy = CudaChain::Create(*NnunetDefaultPipeline(Config({5, 23, 27}, {{1, 1, 1}, {1, 0.5, 0.5}})));
  ASSERT_TRUE(dummy.ok()) << dummy.status();
  auto dl = (*dummy)->OutputLayout({8, 2, 5, 40, 41}, DType::kFloat16, 1);
  ASSERT_TRUE(dl.ok()) << dl.status();
  EXPECT_EQ(dl->image_shape, (std::vector<int64_t>{8, 2, 5, 23, 27}));
  EXPECT_EQ(dl->seg_shapes[1], (std::vector<int64_t>{8, 1, 5, 12, 14}));

  // nnUNetTrainerDA5 in 2D: every stage, its local filters included, has a 2D form (cuda/chain_2d.h).
  auto da5 = CudaChain::Create(*NnunetDa5Pipeline(Config({32, 32}, {{1, 1}})));
  ASSERT_TRUE(da5.ok()) << da5.status();
  auto da5_lay = (*da5)->OutputLayout({2, 1, 60, 60}, DType::kFloat32, 1);
  ASSERT_TRUE(da5_lay.ok()) << da5_lay.status();
  EXPECT_EQ(da5_lay->image_shape, (std::vector<int64_t>{2, 1, 32, 32}));
}

}  // namespace
}  // namespace augmentd
