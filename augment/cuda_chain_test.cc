// The generic CUDA chain (cuda_chain.h) vs the CPU engine: the same AugmentBatch call on "cpu" and "cuda:0", same seed
// and sample indices, fresh random inputs every run (the seed is printed). Pipelines the fused kernels refuse:
// nnUNetTrainerDA5 (preset nnunet_da5, default and forced-on probabilities), regions (bool targets), two seg channels,
// image-only batches, apply_probability 0.5 on every entry but spatial and DS, a user order, per-channel noise σ
// (fused plan, refused at run time), a pipeline without a spatial entry; B = 1, 2, 8; odd and anisotropic patches.
// Parameters must be identical (ParamsJson); labels identical except fp16 vote ties of the spatial kernel (a fraction
// <= 2e-3; exact without a spatial entry); images within 1e-4 of each channel's range plus the output dtype's
// rounding (H200, 2026-11-29: max 7.5e-7 of the range in float32, no label mismatch). Label gpu (skips without one).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "augment/cuda_engine.h"
#include "augment/engine.h"
#include "augment/pipeline.h"
#include "augment/testing/have_gpu.h"
#include "augment/testing/image_compare.h"
#include "augment/testing/random_volume.h"
#include "augment/transforms/gamma.h"
#include "augment/transforms/gaussian_blur.h"
#include "augment/transforms/gaussian_noise.h"
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
  const int64_t in_n = S[0] * S[1] * S[2];
  std::vector<float> image(cs.B * cs.C * in_n);
  testing::FillNormal(g, image);
  std::vector<int16_t> seg(cs.B * cs.seg_channels * in_n);
  for (int64_t p = 0; p < cs.B * cs.seg_channels; ++p) testing::FillBlobbyLabels(g, S, cs.labels, seg.data() + p * in_n);
  BatchInput in;
  in.image = {image.data(), {cs.B, cs.C, S[0], S[1], S[2]}, DType::kFloat32};
  if (cs.seg_channels > 0) in.seg = {seg.data(), {cs.B, cs.seg_channels, S[0], S[1], S[2]}, DType::kInt16};
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
  const bool has_spatial = !spec.transforms.empty() && spec.transforms[0].kind == TransformKind::kSpatial;

  int64_t seg_total = 0, seg_mismatch = 0;
  for (size_t l = 0; l < cpu->seg.size(); ++l) {
    ASSERT_EQ(gpu->seg[l].shape(), cpu->seg[l].shape());
    ASSERT_EQ(gpu->seg[l].dtype(), cpu->seg[l].dtype());
    for (int64_t i = 0; i < cpu->seg[l].numel(); ++i)
      seg_mismatch += LabelAt(cpu->seg[l], i) != LabelAt(gpu->seg[l], i);
    seg_total += cpu->seg[l].numel();
  }
  const std::vector<int64_t>& ish = cpu->image.shape();
  const int64_t out_n = ish[2] * ish[3] * ish[4];
  int64_t float_bad = 0;
  double max_rel = 0;
  for (int64_t slice = 0; slice < ish[0] * ish[1]; ++slice) {
    const int64_t base = slice * out_n;
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
  const double frac = seg_total > 0 ? static_cast<double>(seg_mismatch) / seg_total : 0.0;
  std::printf("[chain %s] seed %llu B=%d C=%d seg=%d S=%s P=%s: image max|err|/range %.3g (bad %lld), label "
              "mismatches %lld of %lld (%.2e)\n",
              cs.name.c_str(), static_cast<unsigned long long>(seed), cs.B, cs.C, cs.seg_channels,
              ShapeString(S).c_str(), ShapeString({ish[2], ish[3], ish[4]}).c_str(), max_rel, (long long)float_bad,
              (long long)seg_mismatch, (long long)seg_total, frac);
  EXPECT_EQ(float_bad, 0) << cs.name;
  if (has_spatial) {
    EXPECT_LE(frac, 2e-3) << cs.name;
  } else {
    EXPECT_EQ(seg_mismatch, 0) << cs.name;
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

}  // namespace
}  // namespace augmentd
