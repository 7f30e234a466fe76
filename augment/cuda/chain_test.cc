// The generic CUDA chain (cuda/chain.h) vs the CPU engine: the same AugmentBatch call on "cpu" and "cuda:0", same seed
// and sample indices, fresh random inputs every run (the seed is printed). Pipelines the fused kernels refuse:
// nnUNetTrainerDA5 (preset nnunet_da5, default and forced-on probabilities), regions (bool targets), two seg channels,
// image-only batches, apply_probability 0.5 on every entry but spatial and DS, a user order, per-channel noise σ
// (fused plan, refused at run time), a pipeline without a spatial entry; B = 1, 2, 8; odd and anisotropic patches.
// Parameters must be identical (ParamsJson); labels identical except fp16 vote ties of the spatial kernel (a fraction
// <= 2e-3; exact without a spatial entry); images within 1e-4 of each channel's range plus the output dtype's
// rounding (H200, 2026-11-29: max 7.5e-7 of the range in float32, no label mismatch). Label gpu (skips without one).
// The generic spatial kernel (cuda/chain_spatial.h: nnU-Net's 2d configuration on 2D samples, dummy-2D 3d_fullres,
// nearest modes, random_crop, other paddings) computes the CPU's own sampling grid: its labels must match exactly
// (H200, 2026-11-30: 26 such runs, 0 label mismatches, images within 3.6e-7 of the range in float32). Also on it:
// bg_style_seg_sampling (bgv2's threshold vote) and staged chains (several spatial entries; spatial after regions).
// downsample_seg_for_ds followed by image-only entries (the pyramid of the labels where DS stands). A failure names
// the case, the seed and the first mismatching label / voxel.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "augment/cuda/chain.h"
#include "augment/cuda/engine.h"
#include "augment/engine.h"
#include "augment/pipeline.h"
#include "augment/testing/cascade_pipeline.h"
#include "augment/testing/have_gpu.h"
#include "augment/testing/image_compare.h"
#include "augment/testing/random_volume.h"
#include "augment/transforms/gamma/gamma.h"
#include "augment/transforms/gaussian_blur/gaussian_blur.h"
#include "augment/transforms/gaussian_noise/gaussian_noise.h"
#include "augment/transforms/mask_image/mask_image.h"
#include "augment/transforms/mirror/mirror.h"
#include "augment/transforms/remove_label/remove_label.h"
#include "augment/transforms/rot90/rot90.h"
#include "augment/transforms/spatial/spatial.h"
#include "augment/transforms/transpose_axes/transpose_axes.h"
#include "gtest/gtest.h"

namespace augmentd {
namespace {

using testing::HaveGpu;

struct Case {
  std::string name;
  std::function<PipelineSpec()> spec;
  std::vector<int64_t> input;  // empty: spec.input_patch_size
  int B = 2, C = 1, seg_channels = 1, labels = 4;
  DType out_dtype = DType::kFloat32;
  bool exact_labels = false;  // the generic spatial kernel: no fp16-tie excuse
  // The cascade: the last `onehot` output image channels are one-hot labels (move_seg_as_one_hot_to_data and its
  // perturbations), compared as labels: exact without a spatial entry or with the generic spatial kernel; behind the
  // fused kernel an fp16 vote tie in the previous stage's seg can move a dilation / the removed component, so a
  // fraction <= 2e-2 of their voxels may differ.
  int onehot = 0;
  bool minus_one = false;  // the input's highest label becomes −1 (nnU-Net's outside-the-mask voxels)
  bool no_minus_one_out = false;  // no output label may be −1 (every −1 mapped by remove_label): checked exactly
};

TrainerConfig Config(std::vector<int64_t> patch, int C) {
  TrainerConfig tc;
  tc.patch_size = std::move(patch);
  tc.num_input_channels = C;
  tc.deep_supervision_scales = {{1, 1, 1}, {0.5, 0.5, 0.5}, {0.25, 0.25, 0.25}};
  return tc;
}

PipelineSpec ForceOn(PipelineSpec spec) {
  for (TransformSpec& ts : spec.transforms) ts.apply_probability = 1.0;
  return spec;
}

int64_t LabelAt(const HostTensor& t, int64_t i) {
  return t.dtype() == DType::kBool ? t.data<uint8_t>()[i] : t.data<int16_t>()[i];
}

void RunCase(const Case& cs) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  std::random_device rd;
  const uint64_t seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  std::mt19937_64 g(seed);
  const PipelineSpec spec = cs.spec();
  const std::vector<int64_t> S = cs.input.empty() ? spec.input_patch_size : cs.input;
  const int64_t in_n = NumElements(S);
  std::vector<int64_t> S3 = S;  // FillBlobbyLabels takes 3 dims
  if (S3.size() == 2) S3.insert(S3.begin(), 1);
  std::vector<float> image(cs.B * cs.C * in_n);
  testing::FillNormal(g, image);
  std::vector<int16_t> seg(cs.B * cs.seg_channels * in_n);
  for (int64_t p = 0; p < cs.B * cs.seg_channels; ++p) testing::FillBlobbyLabels(g, S3, cs.labels, seg.data() + p * in_n);
  if (cs.minus_one) std::replace(seg.begin(), seg.end(), static_cast<int16_t>(cs.labels - 1), int16_t{-1});
  BatchInput in;
  std::vector<int64_t> ishape = {cs.B, cs.C}, sshape = {cs.B, cs.seg_channels};
  ishape.insert(ishape.end(), S.begin(), S.end());
  sshape.insert(sshape.end(), S.begin(), S.end());
  in.image = {image.data(), ishape, DType::kFloat32};
  if (cs.seg_channels > 0) in.seg = {seg.data(), sshape, DType::kInt16};
  RunOptions opt;
  opt.seed = seed;
  opt.first_sample_index = 500 + seed % 97;
  opt.num_threads = 0;
  opt.image_dtype = cs.out_dtype;
  auto cpu = AugmentBatch(spec, in, opt);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  opt.device = "cuda:0";
  auto gpu = AugmentBatch(spec, in, opt);
  ASSERT_TRUE(gpu.ok()) << cs.name << ": " << gpu.status();
  EXPECT_EQ(gpu->ParamsJson(spec), cpu->ParamsJson(spec));
  ASSERT_EQ(gpu->image.shape(), cpu->image.shape());
  ASSERT_EQ(gpu->image.dtype(), cpu->image.dtype());
  ASSERT_EQ(gpu->seg.size(), cpu->seg.size());
  const bool has_spatial = std::any_of(spec.transforms.begin(), spec.transforms.end(),
                                      [](const TransformSpec& ts) { return ts.kind == TransformKind::kSpatial; });

  int64_t seg_total = 0, seg_mismatch = 0;
  std::string first_mismatch;
  for (size_t l = 0; l < cpu->seg.size(); ++l) {
    ASSERT_EQ(gpu->seg[l].shape(), cpu->seg[l].shape()) << cs.name;
    ASSERT_EQ(gpu->seg[l].dtype(), cpu->seg[l].dtype()) << cs.name;
    for (int64_t i = 0; i < cpu->seg[l].numel(); ++i) {
      const int64_t a = LabelAt(cpu->seg[l], i), b = LabelAt(gpu->seg[l], i);
      if (a != b && first_mismatch.empty())
        first_mismatch = "level " + std::to_string(l) + " element " + std::to_string(i) + ": cuda " +
                         std::to_string(b) + " cpu " + std::to_string(a);
      seg_mismatch += a != b;
    }
    seg_total += cpu->seg[l].numel();
  }
  const std::vector<int64_t>& ish = cpu->image.shape();
  const std::vector<int64_t> P(ish.begin() + 2, ish.end());
  const int64_t out_n = NumElements(P);
  int64_t float_bad = 0, onehot_total = 0, onehot_mismatch = 0;
  double max_rel = 0;
  for (int64_t slice = 0; slice < ish[0] * ish[1]; ++slice) {
    const int64_t base = slice * out_n;
    if (slice % ish[1] >= ish[1] - cs.onehot) {
      for (int64_t o = 0; o < out_n; ++o) {
        const double r = testing::ValueAt(cpu->image, base + o), k = testing::ValueAt(gpu->image, base + o);
        if (r != 0.0 && r != 1.0) ++float_bad;  // the CPU's one-hot channels hold 0/1 only
        onehot_mismatch += r != k;
      }
      onehot_total += out_n;
      continue;
    }
    const double range = testing::RangeOf(cpu->image, base, out_n);
    for (int64_t o = 0; o < out_n; ++o) {
      const double r = testing::ValueAt(cpu->image, base + o), k = testing::ValueAt(gpu->image, base + o);
      const double err = std::fabs(k - r);
      if (!(err <= testing::ImageTolerance(range, cs.out_dtype, r))) {
        if (float_bad < 5)
          std::printf("  %s slice %lld voxel %lld: cuda %g cpu %g\n", cs.name.c_str(), (long long)slice, (long long)o,
                      k, r);
        ++float_bad;
      }
      max_rel = std::isfinite(err) ? std::max(max_rel, err / range) : INFINITY;
    }
  }
  if (cs.no_minus_one_out) {
    int64_t minus_ones = 0;
    for (const HostTensor& level : gpu->seg)
      for (int64_t i = 0; i < level.numel(); ++i) minus_ones += LabelAt(level, i) == -1;
    EXPECT_EQ(minus_ones, 0) << cs.name << ": −1 labels left in the outputs";
  }
  const double frac = seg_total > 0 ? static_cast<double>(seg_mismatch) / seg_total : 0.0;
  std::printf("[chain %s] seed %llu B=%d C=%d seg=%d S=%s P=%s: image max|err|/range %.3g (bad %lld), label "
              "mismatches %lld of %lld (%.2e)\n",
              cs.name.c_str(), static_cast<unsigned long long>(seed), cs.B, cs.C, cs.seg_channels,
              ShapeString(S).c_str(), ShapeString(P).c_str(), max_rel, (long long)float_bad,
              (long long)seg_mismatch, (long long)seg_total, frac);
  EXPECT_EQ(float_bad, 0) << cs.name;
  if (cs.onehot > 0) {
    std::printf("[chain %s] one-hot channels: %lld of %lld voxels differ\n", cs.name.c_str(),
                (long long)onehot_mismatch, (long long)onehot_total);
    if (has_spatial && !cs.exact_labels) {
      EXPECT_LE(static_cast<double>(onehot_mismatch), 2e-2 * static_cast<double>(onehot_total)) << cs.name;
    } else {
      EXPECT_EQ(onehot_mismatch, 0) << cs.name;
    }
  }
  if (has_spatial && !cs.exact_labels) {
    EXPECT_LE(frac, 2e-3) << cs.name << ", first label mismatch " << first_mismatch;
  } else {
    EXPECT_EQ(seg_mismatch, 0) << cs.name << ", first label mismatch " << first_mismatch;
  }
}

TEST(CudaChain, Da5Preset) {
  for (int B : {1, 2, 8}) {
    RunCase({"da5", [] { return *NnunetDa5Pipeline(Config({20, 20, 20}, 1)); }, {}, B, 1, 1, 4});
    RunCase({"da5-all-on", [] { return ForceOn(*NnunetDa5Pipeline(Config({20, 20, 20}, 2))); }, {}, B, 2, 1, 4});
  }
  RunCase({"da5-aniso-odd", [] { return ForceOn(*NnunetDa5Pipeline(Config({13, 22, 22}, 1))); }, {}, 2, 1, 1, 3});
  RunCase({"da5-bf16", [] { return ForceOn(*NnunetDa5Pipeline(Config({16, 16, 16}, 1))); }, {}, 2, 1, 1, 3,
           DType::kBFloat16});
}

TEST(CudaChain, Regions) {
  for (int B : {1, 2, 8}) {
    RunCase({"regions", [] {
               TrainerConfig tc = Config({17, 23, 19}, 1);
               tc.regions = std::vector<std::vector<int64_t>>{{1, 2, 3}, {2, 3}, {3}};
               return ForceOn(*NnunetDefaultPipeline(tc));
             },
             {}, B, 1, 1, 4});
  }
}

TEST(CudaChain, TwoSegChannelsAndImageOnly) {
  for (int B : {1, 2, 8})
    RunCase({"seg2", [] { return ForceOn(*NnunetDefaultPipeline(Config({17, 23, 19}, 2))); }, {}, B, 2, 2, 4});
  // Three seg channels behind the fused spatial kernel (one launch per sample and channel, straight from the planes).
  RunCase({"seg3", [] { return ForceOn(*NnunetDefaultPipeline(Config({17, 23, 19}, 1))); }, {}, 3, 1, 3, 4});
  RunCase({"image-only", [] { return ForceOn(*NnunetDefaultPipeline(Config({17, 23, 19}, 1))); }, {}, 2, 1, 0, 4});
}

TEST(CudaChain, ApplyProbabilityBelowOne) {
  for (int B : {1, 2, 8}) {
    RunCase({"p-half", [] {
               PipelineSpec s = *NnunetDefaultPipeline(Config({17, 23, 19}, 2));
               for (TransformSpec& ts : s.transforms)
                 if (ts.kind != TransformKind::kSpatial && ts.kind != TransformKind::kDownsampleSegForDs)
                   ts.apply_probability = 0.5;
               return s;
             },
             {}, B, 2, 1, 4});
  }
}

TEST(CudaChain, UserOrder) {
  RunCase({"user-order", [] {
             PipelineSpec s = ForceOn(*NnunetDefaultPipeline(Config({21, 18, 18}, 2)));
             // spatial, mirror, gamma, noise, blur, brightness, contrast, low-res, gamma, mask..., DS
             std::vector<TransformSpec> t = s.transforms;
             auto find = [&](TransformKind k) {
               return std::find_if(t.begin(), t.end(), [&](const TransformSpec& e) { return e.kind == k; });
             };
             TransformSpec mirror = *find(TransformKind::kMirror);
             t.erase(find(TransformKind::kMirror));
             t.insert(t.begin() + 1, mirror);
             TransformSpec gamma = *find(TransformKind::kGamma);
             t.erase(find(TransformKind::kGamma));
             t.insert(t.begin() + 2, gamma);
             s.transforms = t;
             return s;
           },
           {}, 2, 2, 1, 4});
  // The fused kernels accept the spec but refuse the drawn per-channel σ at run time: the chain runs those batches.
  RunCase({"fused-fallback", [] {
             PipelineSpec s = ForceOn(*NnunetDefaultPipeline(Config({17, 23, 19}, 3)));
             for (TransformSpec& ts : s.transforms)
               if (ts.kind == TransformKind::kGaussianNoise)
                 ts.transform = *GaussianNoiseTransform::Create({RandomScalar::Uniform(0, 0.1), 1, false});
             return s;
           },
           {}, 2, 3, 1, 4});
  // No spatial entry: the input passes through the chain as is (exact labels).
  RunCase({"no-spatial", [] {
             PipelineSpec s;
             const auto blur = GaussianBlurTransform::Create({RandomScalar::Uniform(0.5, 1.5), false, false, 1, false});
             const auto noise = GaussianNoiseTransform::Create({RandomScalar::Uniform(0, 0.1), 0.5, false});
             const auto gamma = GammaTransform::Create({RandomScalar::BGContrast(0.7, 1.5), 0.5, false, 1, 0.5});
             for (const auto& t : {blur, noise, gamma}) s.transforms.push_back(*TransformSpec::Make(*t, 1.0));
             return s;
           },
           {15, 19, 17}, 8, 3, 1, 4, DType::kFloat16});
}

// A channel selection (TransformSpec::channels) runs on gathered planes: C = 3, entries on [2, 0], [1] and all,
// before and after the spatial entry; the fused kernels refuse such specs, so the chain runs them.
TEST(CudaChain, EntryChannelsMatchCpu) {
  for (int B : {1, 3}) {
    RunCase({"channels", [] {
               PipelineSpec s = ForceOn(*NnunetDefaultPipeline(Config({17, 23, 19}, 3)));
               for (TransformSpec& ts : s.transforms) {
                 if (ts.kind == TransformKind::kGaussianNoise) ts.channels = {2, 0};
                 if (ts.kind == TransformKind::kGamma) ts.channels = {1};
               }
               const auto noise = GaussianNoiseTransform::Create({RandomScalar::Uniform(0, 0.1), 1, false});
               TransformSpec front = *TransformSpec::Make(*noise, 1.0);
               front.channels = {1};
               s.transforms.insert(s.transforms.begin(), front);  // before the spatial entry
               return s;
             },
             {19, 25, 21}, B, 3, 1, 4});
  }
}

// Signed permutations on the chain (slice_stage.h PermuteStage): a mirror before the spatial entry (input-shaped
// scratch), then rot90, transpose_axes and mirror in a row (linked: one gather through their composition, buffers
// exchanged with the chain's slots) and a mirror of channel 1 only (gathered planes: not linked, copied back), with
// the pyramid after them. Every entry at p = 1 with random draws; B = 1 and 3 (samples whose composition is the
// identity are copied through). A patch of equal axes (every permutation) and one with a short axis 0 (permutations
// of axes 1 and 2 only; tiles cut by the 13 planes and the 18-voxel rows); and the first without the pre-spatial
// mirror. The channel-selected mirror takes the last channel.
TEST(CudaChain, PermutationRunsMatchCpu) {
  const auto spec = [](std::vector<int64_t> patch, std::vector<int64_t> axes, int C = 2) {
    const PipelineSpec d = *NnunetDefaultPipeline(Config(std::move(patch), C));
    const auto on = [](const absl::StatusOr<std::shared_ptr<const Transform>>& t) {
      return *TransformSpec::Make(*t, 1.0);
    };
    Rot90Config r;
    r.num_rot_per_combination = {0, 1, 2, 3};
    r.num_axis_combinations = RandomScalar::Uniform(1, 3);
    r.allowed_axes = axes;
    PipelineSpec s = d;
    s.transforms = {on(MirrorTransform::Create({{0, 1, 2}})), d.transforms.front(), on(Rot90Transform::Create(r)),
                    on(TransposeAxesTransform::Create({axes})), on(MirrorTransform::Create({{0, 1, 2}})),
                    on(MirrorTransform::Create({{0, 2}})), d.transforms.back()};
    s.transforms[5].channels = {C - 1};
    return s;
  };
  for (int B : {1, 3}) {
    RunCase({"permutations", [&] { return spec({16, 16, 16}, {0, 1, 2}); }, {}, B, 2, 1, 4});
    RunCase({"permutations-aniso", [&] { return spec({13, 18, 18}, {1, 2}); }, {}, B, 2, 1, 4});
    // Without the pre-spatial mirror the label slots are of one capacity from the first batch on, so every
    // permutation exchanges buffers, the channel view's too (its labels must come back to the chain: 9655a9c).
    RunCase({"permutations-no-pre", [&] {
               PipelineSpec s = spec({16, 16, 16}, {0, 1, 2});
               s.transforms.erase(s.transforms.begin());
               return s;
             },
             {}, B, 2, 1, 4});
  }
  // The run after the spatial entry is stored by the fused kernel through its composition (SampleParams::out_axis,
  // ≤ 4 channels: each channel build of the permuted store, and per-seg-channel launches), or gathered by the
  // stages (5 channels); brick-partial shapes (20 = 16 + 4 rows, 13 = 8 + 5 planes) with every axis exchangeable.
  RunCase({"permutations-c1", [&] { return spec({20, 20, 20}, {0, 1, 2}, 1); }, {}, 3, 1, 1, 4});
  RunCase({"permutations-c4-seg2", [&] { return spec({13, 13, 13}, {0, 1, 2}, 4); }, {}, 2, 4, 2, 4});
  RunCase({"permutations-c5", [&] { return spec({16, 16, 16}, {0, 1, 2}, 5); }, {}, 2, 5, 1, 4});
  // Permutations that do not follow the spatial entry gather into the caller's outputs (ChainTensors::final_image /
  // final_seg); a second one gathers from there into a slot and copies back (the output is no slot to exchange).
  RunCase({"permutations-into-output", [] {
             const PipelineSpec d = *NnunetDefaultPipeline(Config({16, 16, 16}, 2));
             const auto on = [](const absl::StatusOr<std::shared_ptr<const Transform>>& t) {
               return *TransformSpec::Make(*t, 1.0);
             };
             const auto noise = [&] {
               return on(GaussianNoiseTransform::Create({RandomScalar::Uniform(0, 0.1), 1, true}));
             };
             PipelineSpec s = d;
             s.transforms = {d.transforms.front(), noise(), on(MirrorTransform::Create({{0, 1, 2}})), noise(),
                             on(TransposeAxesTransform::Create({{0, 1, 2}})), d.transforms.back()};
             return s;
           },
           {}, 2, 2, 1, 4});
}

// remove_label (−1 → 0) folded into the fused spatial kernel's label store (CudaChain::folded_remove_index): DA5's,
// behind mirror and image-only entries, and not where an entry between reads the labels (mask_image) or the entry is
// another map. Inputs with −1 labels inside (and −1 padding outside), every case against the CPU engine, and where
// remove_label always runs no −1 may be left (exactly: the fp16-tie allowance of RunCase does not cover it). A batch
// of the chain itself shows the fold taken at run time. remove_label at p = 0.5 on 4 samples: mostly batches where
// some samples skip it (then the stage runs), 1 in 16 folded. Two seg channels never fold (the fused launch per
// plane would map −1 on both), also with remove_label listed for channel 0 only.
TEST(CudaChain, RemoveLabelFoldedIntoSpatial) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  const auto index_of = [](const PipelineSpec& s, TransformKind k) {
    for (size_t i = 0; i < s.transforms.size(); ++i)
      if (s.transforms[i].kind == k) return i;
    return SIZE_MAX;
  };
  const auto da5 = [] { return ForceOn(*NnunetDa5Pipeline(Config({20, 20, 20}, 1))); };
  const auto with_remove = [&](RemoveLabelConfig c, double p) {
    PipelineSpec s = da5();
    s.transforms[index_of(s, TransformKind::kRemoveLabel)] = *TransformSpec::Make(*RemoveLabelTransform::Create(c), p);
    return s;
  };
  const auto with_mask = [&] {
    PipelineSpec s = da5();
    const size_t at = index_of(s, TransformKind::kMirror) + 1;
    s.transforms.insert(s.transforms.begin() + at, *TransformSpec::Make(*MaskImageTransform::Create({{0}, 0, 0}), 1.0));
    return s;
  };
  const auto other_map = [&] { return with_remove({-1, 2, std::nullopt}, 1.0); };
  const auto half = [&] { return with_remove({-1, 0, std::nullopt}, 0.5); };
  const auto channel0 = [&] { return with_remove({-1, 0, std::vector<int64_t>{0}}, 1.0); };
  const PipelineSpec d = da5();
  const size_t remove_at = index_of(d, TransformKind::kRemoveLabel);
  ASSERT_NE(remove_at, SIZE_MAX);
  EXPECT_EQ((*CudaChain::Create(d))->folded_remove_index(), remove_at);
  EXPECT_EQ((*CudaChain::Create(half()))->folded_remove_index(), remove_at);
  EXPECT_EQ((*CudaChain::Create(channel0()))->folded_remove_index(), remove_at);
  EXPECT_EQ((*CudaChain::Create(with_mask()))->folded_remove_index(), SIZE_MAX);
  EXPECT_EQ((*CudaChain::Create(other_map()))->folded_remove_index(), SIZE_MAX);
  for (int B : {1, 2}) {
    RunCase({"remove-folded", da5, {}, B, 1, 1, 4, DType::kFloat32, false, 0, true, true});
    RunCase({"remove-after-mask", with_mask, {}, B, 1, 1, 4, DType::kFloat32, false, 0, true, true});
    RunCase({"remove-other-map", other_map, {}, B, 1, 1, 4, DType::kFloat32, false, 0, true, true});
  }
  RunCase({"remove-half", half, {}, 4, 1, 1, 4, DType::kFloat32, false, 0, true});
  RunCase({"remove-folded-seg2", da5, {}, 2, 1, 2, 4, DType::kFloat32, false, 0, true, true});
  RunCase({"remove-channel0-seg2", channel0, {}, 2, 1, 2, 4, DType::kFloat32, false, 0, true});

  // The fold at run time: one DA5 batch through the chain itself.
  auto chain = CudaChain::Create(d);
  ASSERT_TRUE(chain.ok()) << chain.status();
  const std::vector<int64_t> S = d.input_patch_size;
  const int64_t n = NumElements(S), B = 2;
  std::mt19937_64 g(5);
  std::vector<float> image(B * n);
  testing::FillNormal(g, image);
  std::vector<int16_t> seg(B * n);
  for (int64_t b = 0; b < B; ++b) testing::FillBlobbyLabels(g, S, 4, seg.data() + b * n);
  std::replace(seg.begin(), seg.end(), int16_t{3}, int16_t{-1});
  CudaBatchInput in;
  in.image_shape = {B, 1, S[0], S[1], S[2]};
  auto lay = (*chain)->OutputLayout(in.image_shape, DType::kFloat32, 1);
  ASSERT_TRUE(lay.ok()) << lay.status();
  float* d_image = nullptr;
  int16_t* d_seg = nullptr;
  ASSERT_EQ(cudaMalloc(&d_image, image.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_seg, seg.size() * sizeof(int16_t)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_image, image.data(), image.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_seg, seg.data(), seg.size() * sizeof(int16_t), cudaMemcpyHostToDevice), cudaSuccess);
  in.image = d_image;
  in.seg = d_seg;
  CudaBatchOutput out;
  ASSERT_EQ(cudaMalloc(&out.image, lay->image_bytes), cudaSuccess);
  for (size_t bytes : lay->seg_bytes) {
    void* p = nullptr;
    ASSERT_EQ(cudaMalloc(&p, bytes), cudaSuccess);
    out.seg.push_back(static_cast<int16_t*>(p));
  }
  RunOptions opt;
  opt.seed = 11;
  std::vector<SampleRecord> records;
  ASSERT_TRUE((*chain)->Run(in, out, opt, nullptr, records).ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ((*chain)->folded_remove_batches(), 1);
  std::vector<int16_t> level0(lay->seg_bytes[0] / sizeof(int16_t));
  ASSERT_EQ(cudaMemcpy(level0.data(), out.seg[0], lay->seg_bytes[0], cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(std::count(level0.begin(), level0.end(), int16_t{-1}), 0);
  EXPECT_GT(std::count(level0.begin(), level0.end(), int16_t{0}), 0);
  cudaFree(d_image);
  cudaFree(d_seg);
  cudaFree(out.image);
  for (int16_t* p : out.seg) cudaFree(p);
}

// ---- The generic spatial kernel: 2D samples, dummy-2D, nearest modes, random_crop, paddings -------------------

TrainerConfig Config2D(std::vector<int64_t> patch, int C) {
  TrainerConfig tc;
  tc.patch_size = std::move(patch);
  tc.num_input_channels = C;
  tc.deep_supervision_scales = {{1, 1}, {0.5, 0.5}, {0.25, 0.25}};
  return tc;
}

// `spec` with its spatial entry (index 0) rebuilt from a changed config.
PipelineSpec WithSpatial(PipelineSpec spec, const std::function<void(SpatialConfig&)>& change) {
  const auto* sp = dynamic_cast<const SpatialTransform*>(spec.transforms[0].transform.get());
  SpatialConfig c = sp->config();
  change(c);
  spec.transforms[0] = *TransformSpec::Make(*SpatialTransform::Create(c), spec.transforms[0].apply_probability);
  return spec;
}

void Elastic(SpatialConfig& c) {
  c.p_elastic_deform = 1;
  c.elastic_deform_scale = RandomScalar::Uniform(0.05, 0.2);
  c.elastic_deform_magnitude = RandomScalar::Uniform(0.05, 0.2);
}

// nnU-Net's "2d" configuration: image (B, C, X, Y), 2D patch, 2-entry DS scales.
TEST(CudaChainSpatial, Nnunet2d) {
  for (int B : {1, 2, 8}) {
    RunCase({"2d", [] { return *NnunetDefaultPipeline(Config2D({37, 45}, 1)); }, {}, B, 1, 1, 4, DType::kFloat32,
             true});
    RunCase({"2d-all-on", [] { return ForceOn(*NnunetDefaultPipeline(Config2D({37, 45}, 2))); }, {}, B, 2, 1, 4,
             DType::kFloat32, true});
  }
  RunCase({"2d-elastic", [] { return WithSpatial(ForceOn(*NnunetDefaultPipeline(Config2D({33, 28}, 1))), Elastic); },
           {}, 2, 1, 1, 4, DType::kFloat32, true});
  RunCase({"2d-regions-fp16", [] {
             TrainerConfig tc = Config2D({31, 40}, 1);
             tc.regions = std::vector<std::vector<int64_t>>{{1, 2, 3}, {2, 3}, {3}};
             return ForceOn(*NnunetDefaultPipeline(tc));
           },
           {}, 2, 1, 1, 4, DType::kFloat16, true});
}

// Whole pipelines on 2D samples through the stages with a 2D form of their own (cuda/chain_2d.h): nnUNetTrainerDA5's
// preset, and the MRI artefacts + AugLab extras ahead of nnU-Net's default pipeline (ahead of the spatial entry, at
// the input shape, so that histogram equalization bins the exact input).
TEST(CudaChainSpatial, Da5MriAuglab2d) {
  for (int B : {1, 2}) {
    RunCase({"2d-da5", [] { return *NnunetDa5Pipeline(Config2D({37, 45}, 1)); }, {}, B, 1, 1, 4, DType::kFloat32,
             true});
    RunCase({"2d-da5-all-on", [] { return ForceOn(*NnunetDa5Pipeline(Config2D({31, 40}, 2))); }, {}, B, 2, 1, 4,
             DType::kFloat32, true});
  }
  RunCase({"2d-mri-auglab", [] {
             PipelineSpec s = ForceOn(*NnunetDefaultPipeline(Config2D({33, 28}, 2)));
             std::vector<TransformSpec> front;
             for (const char* kind : {"histogram_equalization", "intensity_function", "random_convolution",
                                      "bias_field", "ghosting", "spike", "motion"}) {
               absl::StatusOr<TransformSpec> t = TransformSpec::FromJson(
                   {{"kind", kind}, {"apply_probability", 1.0}, {"config", nlohmann::json::object()}});
               EXPECT_TRUE(t.ok()) << kind << ": " << t.status();
               if (t.ok()) front.push_back(*std::move(t));
             }
             s.transforms.insert(s.transforms.begin(), front.begin(), front.end());
             return s;
           },
           {}, 2, 2, 1, 4, DType::kFloat32, true});
}

// The DAExt AugLab kinds (shape_crop, clamp, zscore_normalization, auglab_bias_field, edge_convolution,
// unsharp_mask; their stages: augment/transforms/<name>/<name>_cuda.cc) inside nnU-Net's default pipeline, all on:
// ahead of the spatial entry (input shape; shape_crop zeroes labels there too) and right after it (patch shape), 3D
// and 2D samples.
std::vector<TransformSpec> DaextEntries() {
  std::vector<TransformSpec> out;
  for (const char* kind : {"shape_crop", "clamp", "zscore_normalization", "auglab_bias_field", "edge_convolution",
                           "unsharp_mask"}) {
    absl::StatusOr<TransformSpec> t =
        TransformSpec::FromJson({{"kind", kind}, {"apply_probability", 1.0}, {"config", nlohmann::json::object()}});
    EXPECT_TRUE(t.ok()) << kind << ": " << t.status();
    if (t.ok()) out.push_back(*std::move(t));
  }
  return out;
}

TEST(CudaChainSpatial, DaextKinds) {
  for (bool front : {true, false}) {
    const auto with_daext = [front](PipelineSpec s) {
      const std::vector<TransformSpec> e = DaextEntries();
      s.transforms.insert(s.transforms.begin() + (front ? 0 : 1), e.begin(), e.end());  // entry 0: spatial
      return s;
    };
    RunCase({front ? "daext-front" : "daext-after-spatial",
             [&] { return with_daext(ForceOn(*NnunetDefaultPipeline(Config({20, 24, 22}, 2)))); }, {}, 2, 2});
    RunCase({front ? "2d-daext-front" : "2d-daext-after-spatial",
             [&] { return with_daext(ForceOn(*NnunetDefaultPipeline(Config2D({33, 28}, 1)))); }, {}, 2, 1, 1, 4,
             DType::kFloat32, true});
  }
}

// AugLab's region modes (augment/region_mode.h: the chain's RegionModeStage around the entry's stage) on intensity
// kinds of the default chain, the DAExt stages and the AugLab extras, in / out / all and mix_in_out, per sample and
// same_on_batch, in front of and after the spatial entry; one and two seg channels (m sums them); 2D samples.
std::vector<TransformSpec> RegionModeEntries(bool mix) {
  const nlohmann::json region = {{"in_seg", 0.5}, {"out_seg", 0.5}, {"mix_in_out", mix}};
  std::vector<TransformSpec> out;
  const std::vector<nlohmann::json> entries = {
      {{"kind", "gamma"}, {"config", {{"gamma", {0.7, 1.5}}, {"p_invert_image", 0.0}, {"synchronize_channels", false},
                                      {"p_per_channel", 1.0}, {"p_retain_stats", 0.0}}}},
      {{"kind", "multiplicative_brightness"},
       {"config", {{"multiplier_range", {0.75, 1.25}}, {"synchronize_channels", true}, {"p_per_channel", 1.0}}},
       {"same_on_batch", true}},
      {{"kind", "clamp"}, {"config", nlohmann::json::object()}},
      {{"kind", "auglab_bias_field"}, {"config", nlohmann::json::object()}, {"same_on_batch", true}},
      {{"kind", "edge_convolution"}, {"config", nlohmann::json::object()}},
      {{"kind", "unsharp_mask"}, {"config", nlohmann::json::object()}},
      {{"kind", "histogram_equalization"}, {"config", nlohmann::json::object()}},
      // the preset's split RandomFunctionGPU / RandomInverseGPU entries (auglab_daext.py)
      {{"kind", "intensity_function"}, {"config", {{"functions", {"sqrt"}}, {"p_function", 1.0}, {"p_inverse", 0.0}}}},
      {{"kind", "intensity_function"},
       {"config", {{"functions", nlohmann::json::array()}, {"p_function", 0.0}, {"p_inverse", 1.0}}}}};
  for (nlohmann::json j : entries) {
    j["apply_probability"] = 0.8;
    j["region_mode"] = region;
    absl::StatusOr<TransformSpec> t = TransformSpec::FromJson(j);
    EXPECT_TRUE(t.ok()) << j.dump() << ": " << t.status();
    if (t.ok()) out.push_back(*std::move(t));
  }
  return out;
}

// One region entry per case. The blend weighs with the label *values* (m up to 3 with labels 0..3, down to -2 in
// "out", twice that with two seg channels), so m·t' + (1 − m)·x extrapolates and multiplies the engines' ulp-level
// differences (pow / exp / percentiles of the wrapped stage) by up to 2|m| + 1 per entry: nine entries stacked in one
// chain compound that past the 1e-4 image tolerance (host emulation, 2026-12-01: a relative 1e-7 perturbation of each
// wrapped step's output gave up to 2.4e-2 of the range, 21 of 120 cases over the tolerance; one entry per case:
// below 1e-5). Labels must be exact (an fp16 vote tie of the fused spatial kernel changes m, hence the image, at
// that voxel): the 3D cases after spatial take the generic spatial kernel (nearest labels: the CPU's own grid); in
// front of spatial the image no longer reads labels, the fused kernel's tie excuse stays.
TEST(CudaChain, RegionModes) {
  for (bool front : {true, false}) {
    for (bool mix : {false, true}) {
      const std::vector<TransformSpec> entries = RegionModeEntries(mix);
      for (const TransformSpec& e : entries) {
        // generic: nearest labels, the generic spatial kernel (3D; 2D samples take it anyway)
        const auto with_region = [front, &e](PipelineSpec s, bool generic) {
          if (generic) s = WithSpatial(s, [](SpatialConfig& c) { c.mode_seg = "nearest"; });
          s.transforms.insert(s.transforms.begin() + (front ? 0 : 1), e);  // entry 0: spatial
          return s;
        };
        const std::string name = std::string(front ? "regions-front" : "regions-after-spatial") + (mix ? "-mix" : "") +
                                 "-" + std::string(TransformKindName(e.kind));
        RunCase({name, [&] { return with_region(ForceOn(*NnunetDefaultPipeline(Config({20, 24, 22}, 2))), !front); },
                 {}, 3, 2, 1, 4, DType::kFloat32, !front});
        RunCase({name + "-2seg",
                 [&] { return with_region(ForceOn(*NnunetDefaultPipeline(Config({16, 18, 20}, 1))), !front); }, {}, 2,
                 1, 2, 3, DType::kFloat32, !front});
        RunCase({"2d-" + name,
                 [&] { return with_region(ForceOn(*NnunetDefaultPipeline(Config2D({33, 28}, 1))), false); }, {}, 2, 1,
                 1, 4, DType::kFloat32, true});
      }
    }
  }
}

// The batch modes (TransformSpec::same_on_batch, pipeline.h) on the CUDA engine, B = 4, in front of nnU-Net's
// default pipeline: "decision" (random_convolution with a region mode, redistribute_seg: the decision shared, the
// parameters per sample, the region coins per batch) and same_on_batch with per_sample_coins (the DAExt preset's
// inverse). The host draws are the CPU engine's (records equal), the outputs agree. One region entry per case (see
// RegionModes).
TEST(CudaChain, BatchModes) {
  const nlohmann::json region = {{"in_seg", 0.5}, {"out_seg", 0.5}, {"mix_in_out", true}};
  nlohmann::json per_coin = region;
  per_coin["per_sample_coins"] = true;
  const std::vector<nlohmann::json> entries = {
      {{"kind", "random_convolution"}, {"config", {{"kernel_sizes", {1, 3, 5}}, {"mix_prob", 0.5}}},
       {"same_on_batch", "decision"}, {"region_mode", region}},
      {{"kind", "redistribute_seg"}, {"config", nlohmann::json::object()}, {"same_on_batch", "decision"}},
      {{"kind", "intensity_function"},
       {"config", {{"functions", nlohmann::json::array()}, {"p_function", 0.0}, {"p_inverse", 1.0}}},
       {"same_on_batch", true}, {"region_mode", per_coin}}};
  for (nlohmann::json j : entries) {
    j["apply_probability"] = 0.8;
    absl::StatusOr<TransformSpec> e = TransformSpec::FromJson(j);
    ASSERT_TRUE(e.ok()) << j.dump() << ": " << e.status();
    const std::string name = "batch-modes-" + j["kind"].get<std::string>();
    RunCase({name, [&] {
               PipelineSpec s = ForceOn(*NnunetDefaultPipeline(Config({20, 24, 22}, 2)));
               s.transforms.insert(s.transforms.begin(), *e);
               return s;
             },
             {}, 4, 2});
  }
}

// nnUNetTrainerDAExt's TorchIO spatial transforms and AugLab's low-res (their stages: augment/transforms/{anisotropy,
// torchio_affine,elastic_deformation,auglab_low_resolution}/*_cuda.cc) ahead of nnU-Net's default pipeline, at the
// input shape, image and labels: the whole engine on both devices. 2D samples: all but auglab_low_resolution
// (AugLab's 5D input: 3D only on both engines).
PipelineSpec WithTorchioFront(PipelineSpec s, bool with_lowres) {
  std::vector<nlohmann::json> front = {
      {{"kind", "anisotropy"}, {"config", {{"downsampling", {1.5, 4.0}}, {"scalars_only", false}}}},
      {{"kind", "torchio_affine"}, {"config", {{"degrees", 15}, {"translation", {1, 1, 1}}}}},
      {{"kind", "elastic_deformation"}, {"config", {{"num_control_points", 6}, {"max_displacement", 3}}}}};
  if (with_lowres)
    front.push_back({{"kind", "auglab_low_resolution"}, {"config", {{"scale", {0.5, 1.0}}, {"crop", {0.8, 1.0}}}}});
  std::vector<TransformSpec> specs;
  for (nlohmann::json j : front) {
    j["apply_probability"] = 0.8;
    absl::StatusOr<TransformSpec> t = TransformSpec::FromJson(j);
    EXPECT_TRUE(t.ok()) << j.dump() << ": " << t.status();
    if (t.ok()) specs.push_back(*std::move(t));
  }
  s.transforms.insert(s.transforms.begin(), specs.begin(), specs.end());
  return s;
}

TEST(CudaChainSpatial, TorchioStagesAheadOfDefault) {
  for (int B : {1, 3})
    RunCase({"torchio-3d", [] { return WithTorchioFront(*NnunetDefaultPipeline(Config({21, 18, 16}, 2)), true); },
             {}, B, 2, 1, 4});
  RunCase({"torchio-2d", [] { return WithTorchioFront(*NnunetDefaultPipeline(Config2D({33, 28}, 1)), false); }, {},
           2, 1, 1, 4, DType::kFloat32, true});
}

// nnU-Net's 3d_fullres on an anisotropic patch (max/p0 > 3): dummy-2D, the spatial transform per slice of axis 0.
TEST(CudaChainSpatial, Dummy2d3dFullres) {
  for (int B : {1, 2, 8}) {
    RunCase({"dummy2d", [] { return *NnunetDefaultPipeline(Config({5, 23, 27}, 1)); }, {}, B, 1, 1, 4,
             DType::kFloat32, true});
    RunCase({"dummy2d-all-on", [] { return ForceOn(*NnunetDefaultPipeline(Config({5, 23, 27}, 2))); }, {}, B, 2, 1,
             4, DType::kFloat32, true});
  }
  RunCase({"dummy2d-elastic-seg2", [] {
             return WithSpatial(ForceOn(*NnunetDefaultPipeline(Config({7, 25, 30}, 1))), Elastic);
           },
           {}, 2, 1, 2, 4, DType::kFloat32, true});
}

// Spatial options the fused kernel lacks, 3D.
TEST(CudaChainSpatial, ModesCropAndPaddings) {
  for (int B : {1, 2, 8}) {
    RunCase({"nearest", [] {
               return WithSpatial(ForceOn(*NnunetDefaultPipeline(Config({17, 23, 19}, 2))), [](SpatialConfig& c) {
                 c.mode_seg = "nearest";
                 c.mode_image = "nearest";
               });
             },
             {}, B, 2, 1, 4, DType::kFloat32, true});
  }
  RunCase({"nearest-seg-linear-image-c4", [] {
             return WithSpatial(ForceOn(*NnunetDefaultPipeline(Config({17, 23, 19}, 4))),
                                [](SpatialConfig& c) { c.mode_seg = "nearest"; });
           },
           {}, 2, 4, 1, 4, DType::kFloat32, true});
  RunCase({"random-crop", [] {
             return WithSpatial(ForceOn(*NnunetDefaultPipeline(Config({17, 23, 19}, 1))), [](SpatialConfig& c) {
               c.random_crop = true;
               c.patch_center_dist_from_border = {4, 6, 5};
             });
           },
           {40, 37, 35}, 2, 1, 1, 4, DType::kFloat32, true});
  RunCase({"random-crop-nothing-drawn", [] {
             PipelineSpec s = *NnunetDefaultPipeline(Config({17, 23, 19}, 1));
             return WithSpatial(s, [](SpatialConfig& c) {
               c.random_crop = true;
               c.p_rotation = 0;
               c.p_scaling = 0;
             });
           },
           {30, 31, 29}, 8, 1, 1, 4, DType::kFloat32, true});
  RunCase({"paddings-bilinear-image-nearest-seg", [] {
             return WithSpatial(ForceOn(*NnunetDefaultPipeline(Config({17, 23, 19}, 1))), [](SpatialConfig& c) {
               c.padding_mode_image = "constant";
               c.padding_value_image = 0.75;
               c.padding_value_seg = 3;
               c.mode_seg = "nearest";
             });
           },
           {}, 2, 1, 1, 4, DType::kFloat32, true});
  RunCase({"paddings-linear-seg", [] {
             return WithSpatial(ForceOn(*NnunetDefaultPipeline(Config({15, 21, 18}, 1))), [](SpatialConfig& c) {
               c.padding_mode_image = "constant";
               c.padding_value_image = -2;
               c.border_mode_seg = "zeros";
               c.padding_value_seg = 0;
               c.mode_image = "nearest";
               c.p_scaling = 1;
               c.scaling = RandomScalar::Uniform(1.2, 1.6);  // samples outside the input: the zero border's lowest label
             });
           },
           {}, 2, 1, 1, 4, DType::kFloat32, true});
}

// bgv2's bg_style_seg_sampling threshold vote: many labels, exactly two (its own branch), dummy-2D, 2D elastic.
void BgStyle(SpatialConfig& c) {
  c.bg_style_seg_sampling = true;
  c.bgv2_version = "0.3.5";  // the threshold vote is 0.3.5's (0.3.6 votes the same argmax either way)
  c.seg_tiebreak.clear();
}

TEST(CudaChainSpatial, BgStyleSegSampling) {
  for (int B : {1, 2, 8})
    RunCase({"bg-style", [] { return WithSpatial(ForceOn(*NnunetDefaultPipeline(Config({17, 23, 19}, 2))), BgStyle); },
             {}, B, 2, 1, 4, DType::kFloat32, true});
  RunCase({"bg-style-two-labels-seg2", [] {
             return WithSpatial(ForceOn(*NnunetDefaultPipeline(Config({15, 21, 18}, 1))), BgStyle);
           },
           {}, 2, 1, 2, 2, DType::kFloat32, true});
  RunCase({"bg-style-dummy2d", [] {
             return WithSpatial(ForceOn(*NnunetDefaultPipeline(Config({5, 23, 27}, 1))), BgStyle);
           },
           {}, 2, 1, 1, 5, DType::kFloat32, true});
  RunCase({"bg-style-2d-elastic", [] {
             return WithSpatial(ForceOn(*NnunetDefaultPipeline(Config2D({33, 28}, 1))), [](SpatialConfig& c) {
               Elastic(c);
               BgStyle(c);
             });
           },
           {}, 2, 1, 1, 3, DType::kFloat32, true});
}

// bgv2 0.3.6 on the generic kernel (the CPU's own grid: exact labels): every tie-break, sampling far outside, the
// zeros border, constant image padding (shifted), nearest modes (padding label outside), dummy-2D and 2D; and the
// same cases as 0.3.5 (the −1 / constant fill of out-of-bounds voxels).
void Outside(SpatialConfig& c) {
  c.p_rotation = 1;
  c.p_scaling = 1;
  c.scaling = RandomScalar::Uniform(1.2, 1.9);
}

TEST(CudaChainSpatial, Bgv2Releases) {
  for (const char* release : {"0.3.6", "0.3.5"}) {
    const std::string r = release;
    const auto with = [r](std::function<void(SpatialConfig&)> extra) {
      return [r, extra](SpatialConfig& c) {
        Outside(c);
        c.bgv2_version = r;
        c.seg_tiebreak.clear();
        extra(c);
      };
    };
    const std::vector<std::pair<std::string, std::function<void(SpatialConfig&)>>> variants = {
        {"dummy2d", [](SpatialConfig&) {}},
        {"image-constant", [](SpatialConfig& c) {
           c.padding_mode_image = "constant";
           c.padding_value_image = -2.5;
         }},
        {"zeros-border", [](SpatialConfig& c) {
           c.border_mode_seg = "zeros";
           c.padding_value_seg = 0;
         }},
        {"nearest", [](SpatialConfig& c) { c.mode_seg = "nearest"; }},
        {"nearest-image", [](SpatialConfig& c) {
           c.mode_seg = "nearest";
           c.mode_image = "nearest";
           c.padding_mode_image = "constant";
           c.padding_value_image = 1.5;
         }},
    };
    for (const auto& [name, change] : variants) {
      RunCase({"bgv2-" + r + "-" + name, [with, change = change] {
                 return WithSpatial(ForceOn(*NnunetDefaultPipeline(Config({5, 23, 27}, 2))), with(change));
               },
               {}, 2, 2, 1, 5, DType::kFloat32, true});
    }
    // 3D on the generic kernel with 4 image channels (constant image padding is what sends it there): the shared
    // corners feed every channel's interpolation and the seg vote.
    RunCase({"bgv2-" + r + "-3d-c4-image-constant", [with] {
               return WithSpatial(ForceOn(*NnunetDefaultPipeline(Config({17, 23, 19}, 4))),
                                  with([](SpatialConfig& c) {
                                    c.padding_mode_image = "constant";
                                    c.padding_value_image = -2.5;
                                  }));
             },
             {}, 2, 4, 1, 5, DType::kFloat32, true});
    RunCase({"bgv2-" + r + "-2d", [with] {
               return WithSpatial(ForceOn(*NnunetDefaultPipeline(Config2D({33, 28}, 1))), with([](SpatialConfig&) {}));
             },
             {}, 2, 1, 1, 3, DType::kFloat32, true});
    RunCase({"bgv2-" + r + "-2d-two-labels", [with] {
               return WithSpatial(ForceOn(*NnunetDefaultPipeline(Config2D({33, 28}, 1))), with([](SpatialConfig&) {}));
             },
             {}, 2, 1, 1, 2, DType::kFloat32, true});
  }
  for (const char* tiebreak : {"lowest", "highest", "nearest"}) {
    const std::string t = tiebreak;
    RunCase({"bgv2-0.3.6-tiebreak-" + t, [t] {
               return WithSpatial(ForceOn(*NnunetDefaultPipeline(Config({5, 23, 27}, 1))), [t](SpatialConfig& c) {
                 Outside(c);
                 c.seg_tiebreak = t;
               });
             },
             {}, 2, 1, 1, 4, DType::kFloat32, true});
  }
}

// `spec` with its spatial entry (index 0) moved to `to`.
PipelineSpec SpatialAt(PipelineSpec spec, size_t to) {
  TransformSpec sp = spec.transforms[0];
  spec.transforms.erase(spec.transforms.begin());
  spec.transforms.insert(spec.transforms.begin() + static_cast<std::ptrdiff_t>(to), sp);
  return spec;
}

// Entries before the spatial one run at the input shape; more image channels than the fused kernel takes.
TEST(CudaChainSpatial, SpatialNotFirstAndManyChannels) {
  for (int B : {1, 2, 8}) {
    RunCase({"spatial-third", [] { return SpatialAt(ForceOn(*NnunetDefaultPipeline(Config({17, 23, 19}, 2))), 2); },
             {}, B, 2, 1, 4});
  }
  RunCase({"dummy2d-spatial-after-gamma-mirror", [] {
             PipelineSpec s = ForceOn(*NnunetDefaultPipeline(Config({5, 23, 27}, 1)));
             return SpatialAt(s, s.transforms.size() - 4);  // ..., gamma, gamma, spatial, mirror, remove_label, DS
           },
           {}, 2, 1, 1, 4, DType::kFloat32, true});
  RunCase({"nine-channels", [] { return ForceOn(*NnunetDefaultPipeline(Config({15, 17, 16}, 9))); }, {}, 2, 9, 1, 4,
           DType::kFloat32, true});
}

// ---- Staged chains (several spatial entries, or one after regions: all on the generic kernel) and DS not last ----

void ZeroSegFill(SpatialConfig& c) { c.padding_value_seg = 0; }

// `spec` with a second spatial entry (the first one's config onto `patch`) inserted at `at`.
PipelineSpec WithSecondSpatial(PipelineSpec spec, std::vector<int64_t> patch, size_t at) {
  SpatialConfig c = static_cast<const SpatialTransform&>(*spec.transforms[0].transform).config();
  c.patch_size = std::move(patch);
  spec.transforms.insert(spec.transforms.begin() + static_cast<std::ptrdiff_t>(at),
                         *TransformSpec::Make(*SpatialTransform::Create(c), 1.0));
  return spec;
}

TEST(CudaChainSpatial, StagedSpatialEntries) {
  for (int B : {1, 2, 8}) {
    RunCase({"two-spatial", [] {
               return WithSecondSpatial(ForceOn(*NnunetDefaultPipeline(Config({17, 23, 19}, 2))), {13, 16, 15}, 3);
             },
             {}, B, 2, 1, 4, DType::kFloat32, true});
    RunCase({"spatial-after-regions", [] {
               TrainerConfig tc = Config({17, 23, 19}, 1);
               tc.regions = std::vector<std::vector<int64_t>>{{1, 2, 3}, {2, 3}, {3}};
               // 0/1 region channels: the label fill must be 0 or 1 (PipelineSpec::CheckLayoutStable)
               PipelineSpec s = WithSpatial(ForceOn(*NnunetDefaultPipeline(tc)), ZeroSegFill);
               return SpatialAt(s, s.transforms.size() - 2);  // ..., remove_label, regions, spatial, DS
             },
             {}, B, 1, 1, 4, DType::kFloat32, true});
  }
  RunCase({"two-spatial-2d", [] {
             return WithSecondSpatial(ForceOn(*NnunetDefaultPipeline(Config2D({37, 45}, 1))), {30, 41}, 5);
           },
           {}, 2, 1, 1, 4, DType::kFloat32, true});
  RunCase({"two-spatial-dummy2d-seg2", [] {
             return WithSecondSpatial(ForceOn(*NnunetDefaultPipeline(Config({5, 23, 27}, 1))), {20, 25}, 2);
           },
           {}, 2, 1, 2, 4, DType::kFloat32, true});
  RunCase({"three-spatial-image-only", [] {
             PipelineSpec s =
                 WithSecondSpatial(ForceOn(*NnunetDefaultPipeline(Config({17, 23, 19}, 1))), {15, 15, 15}, 1);
             return WithSecondSpatial(s, {11, 13, 12}, s.transforms.size() - 1);
           },
           {}, 2, 1, 0, 4, DType::kFloat32, true});
  RunCase({"spatial-after-regions-bg-style-fp16", [] {
             TrainerConfig tc = Config({15, 21, 18}, 1);
             tc.regions = std::vector<std::vector<int64_t>>{{1, 2}, {2}};
             PipelineSpec s = WithSpatial(ForceOn(*NnunetDefaultPipeline(tc)), [](SpatialConfig& c) {
               BgStyle(c);
               ZeroSegFill(c);
             });
             return SpatialAt(s, s.transforms.size() - 2);
           },
           {}, 2, 1, 1, 3, DType::kFloat16, true});
}

// downsample_seg_for_ds followed by image-only entries: the pyramid is the labels where DS stands.
TEST(CudaChain, DsNotLast) {
  const auto ds_then = [](PipelineSpec s) {
    for (TransformKind k : {TransformKind::kGamma, TransformKind::kGaussianNoise, TransformKind::kContrast})
      for (const TransformSpec& ts : std::vector<TransformSpec>(s.transforms))
        if (ts.kind == k) {
          s.transforms.push_back(ts);
          break;
        }
    return s;
  };
  for (int B : {1, 2, 8})
    RunCase({"ds-then-gamma-noise-contrast",
             [&] { return ds_then(ForceOn(*NnunetDefaultPipeline(Config({17, 23, 19}, 2)))); }, {}, B, 2, 1, 4});
  RunCase({"ds-then-image-only-entries-regions", [&] {
             TrainerConfig tc = Config({17, 23, 19}, 1);
             tc.regions = std::vector<std::vector<int64_t>>{{1, 2, 3}, {3}};
             return ds_then(ForceOn(*NnunetDefaultPipeline(tc)));
           },
           {}, 2, 1, 1, 4});
  RunCase({"ds-then-image-only-entries-no-seg", [&] {
             return ds_then(ForceOn(*NnunetDefaultPipeline(Config({17, 23, 19}, 1))));
           },
           {}, 2, 1, 0, 4});
}

// nnU-Net's cascade (3d_cascade_fullres): move_seg_as_one_hot_to_data grows the image by one channel per foreground
// label (from seg channel 1, the previous stage's prediction, which leaves the seg), then
// apply_random_binary_operator and remove_random_connected_component perturb those channels. The stages alone (no
// spatial entry: exact), every perturbation forced on, fill_with_other_class_p 0.5 and large radii included.
PipelineSpec CascadeStagesOnly(std::vector<int64_t> labels, double fill, std::vector<double> strel, bool ds) {
  std::vector<int64_t> ch;
  for (int64_t i = -static_cast<int64_t>(labels.size()); i < 0; ++i) ch.push_back(i);
  nlohmann::json t = nlohmann::json::array({
      {{"kind", "remove_label"}, {"config", {{"label_value", -1}, {"set_to", 0}}}},
      {{"kind", "move_seg_as_one_hot_to_data"},
       {"config", {{"source_channel_idx", 1}, {"all_labels", labels}, {"remove_channel_from_source", true}}}},
      {{"kind", "apply_random_binary_operator"},
       {"config", {{"channel_idx", ch}, {"strel_size", strel}, {"p_per_label", 0.8}}}},
      {{"kind", "remove_random_connected_component"},
       {"config",
        {{"channel_idx", ch},
         {"fill_with_other_class_p", fill},
         {"dont_do_if_covers_more_than_x_percent", 0.15},
         {"p_per_label", 0.8}}}},
  });
  if (ds) t.push_back({{"kind", "downsample_seg_for_ds"}, {"config", {{"ds_scales", {1, 0.5}}}}});
  auto s = PipelineSpec::FromJson({{"name", "cascade-stages"}, {"transforms", t}});
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

TEST(CudaChain, CascadeStagesExact) {
  for (int B : {1, 2, 8}) {
    RunCase({"cascade-stages", [] { return CascadeStagesOnly({1, 2, 3}, 0.5, {1, 8}, true); }, {19, 23, 17}, B, 1, 2,
             4, DType::kFloat32, false, 3});
    RunCase({"cascade-stages-c2", [] { return CascadeStagesOnly({1, 3}, 0.0, {0, 3}, false); }, {12, 15, 21}, B, 2,
             2, 4, DType::kFloat32, false, 2});
  }
  // Large radii (a fractional ball of up to 12.5) on one label.
  RunCase({"cascade-stages-r12", [] { return CascadeStagesOnly({2}, 1.0, {4, 12.5}, true); }, {24, 20, 22}, 2, 1, 2,
           3, DType::kFloat32, false, 1});
  // Several labels, one of them absent from the data (an empty one-hot channel: nothing to dilate, no component), on
  // objects that touch the border; B = 3 moves two samples' image planes in place (C = 2).
  for (int B : {1, 3})
    RunCase({"cascade-stages-absent-label", [] { return CascadeStagesOnly({1, 2, 3, 9}, 0.0, {2, 8}, true); },
             {18, 21, 16}, B, 2, 2, 4, DType::kFloat32, false, 4});
  // nnU-Net's largest radius exactly (ball(8), 17³) and a volume of 21 tiles of the component count (CcCount / CcPick
  // across tiles), many components per channel.
  RunCase({"cascade-stages-r8", [] { return CascadeStagesOnly({1, 2, 3}, 0.5, {8, 8}, false); }, {40, 48, 44}, 2, 1,
           2, 4, DType::kFloat32, false, 3});
}

// The end-to-end: nnU-Net's 3d_cascade_fullres training pipeline (its own probabilities, and every entry forced on),
// CUDA engine vs CPU engine on the same seed.
TEST(CudaChain, NnunetCascadeFullres) {
  for (int B : {1, 2, 8}) {
    RunCase({"cascade", [] { return *testing::NnunetCascadePipeline(Config({20, 20, 20}, 1), {1, 2, 3}); }, {}, B, 1,
             2, 4, DType::kFloat32, false, 3});
    RunCase({"cascade-all-on", [] {
               return ForceOn(*testing::NnunetCascadePipeline(Config({17, 23, 19}, 2), {1, 2, 3}));
             },
             {}, B, 2, 2, 4, DType::kFloat32, false, 3});
  }
  RunCase({"cascade-bf16", [] { return ForceOn(*testing::NnunetCascadePipeline(Config({16, 16, 16}, 1), {1, 2})); },
           {}, 2, 1, 2, 3, DType::kBFloat16, false, 2});
}

// The cascade behind the generic spatial kernel (exact labels): 3d_cascade_fullres on an anisotropic patch (dummy-2D)
// and on 2D samples (the binary operator's disk footprint, 8-connected components).
TEST(CudaChainSpatial, CascadeDummy2dAnd2d) {
  for (int B : {1, 2}) {
    RunCase({"cascade-dummy2d", [] {
               return ForceOn(*testing::NnunetCascadePipeline(Config({5, 23, 27}, 1), {1, 2, 3}));
             },
             {}, B, 1, 2, 4, DType::kFloat32, true, 3});
    RunCase({"cascade-2d", [] {
               return ForceOn(*testing::NnunetCascadePipeline(Config2D({37, 45}, 1), {1, 2, 3}));
             },
             {}, B, 1, 2, 4, DType::kFloat32, true, 3});
  }
}

}  // namespace
}  // namespace augmentd
