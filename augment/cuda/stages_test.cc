// Host-only tests of the generic CUDA chain (no GPU needed, run in CI): the signed permutations packed for mirror /
// rot90 / transpose_axes equal the CPU transforms voxel for voxel; the chain's coverage (which specs it accepts, the
// UNIMPLEMENTED messages) and its output layout equal the CPU engine's output shapes and dtypes.
#include <algorithm>
#include <iterator>
#include <random>
#include <vector>

#include "augment/cuda/backend.h"
#include "augment/cuda/chain.h"
#include "augment/cuda/chain_2d.h"
#include "augment/cuda/fused_params.h"
#include "augment/cuda/slice_stage.h"
#include "augment/cuda/status.h"
#include "augment/cuda/stages.h"
#include "augment/engine.h"
#include "augment/pipeline.h"
#include "augment/registry.h"
#include "augment/testing/example_configs.h"
#include "augment/testing/kind_list.h"
#include "augment/transforms/mirror/mirror.h"
#include "augment/transforms/rot90/rot90.h"
#include "augment/transforms/spatial/spatial.h"
#include "augment/transforms/transpose_axes/transpose_axes.h"
#include "gtest/gtest.h"

namespace augmentd {
namespace {

// Reference gather of chain_kernels.h's PermuteSample on the host.
template <typename T>
std::vector<T> Gather(const std::vector<T>& x, int channels, const int32_t S[3], const cuda::chain::PermuteSample& p) {
  const int64_t n = int64_t{S[0]} * S[1] * S[2];
  std::vector<T> out(x.size());
  for (int c = 0; c < channels; ++c)
    for (int64_t i = 0; i < n; ++i) {
      const int o[3] = {static_cast<int>(i / (S[1] * S[2])), static_cast<int>((i / S[2]) % S[1]),
                        static_cast<int>(i % S[2])};
      int in[3];
      for (int d = 0; d < 3; ++d) {
        const int v = o[p.perm[d]];
        in[d] = p.flip[d] ? S[d] - 1 - v : v;
      }
      out[c * n + i] = x[c * n + (int64_t{in[0]} * S[1] + in[1]) * S[2] + in[2]];
    }
  return out;
}

void ExpectPermutationMatchesCpu(const Transform& t, const int32_t S[3], int samples) {
  std::mt19937 g(7);
  std::uniform_real_distribution<float> u(-1, 1);
  int identities = 0;
  for (int s = 0; s < samples; ++s) {
    SampleData d;
    d.channels = 2;
    d.shape = {S[0], S[1], S[2]};
    d.image.resize(2 * d.voxels());
    for (float& v : d.image) v = u(g);
    d.seg_channels = 1;
    d.seg.resize(d.voxels());
    for (size_t i = 0; i < d.seg.size(); ++i) d.seg[i] = static_cast<int16_t>(i);
    RandomStream rng(11, s, 3);
    DrawContext ctx{rng, 11, static_cast<uint64_t>(s), 3};
    auto params = t.Draw(ctx, d.layout());
    ASSERT_TRUE(params.ok()) << params.status();
    auto packed = PermuteOf(t, **params, S);
    ASSERT_TRUE(packed.ok()) << packed.status();
    identities += packed->on == 0;
    const std::vector<float> img = Gather(d.image, 2, S, *packed);
    const std::vector<int16_t> seg = Gather(d.seg, 1, S, *packed);
    ASSERT_TRUE(t.Apply(**params, d).ok());
    ASSERT_EQ(img, d.image) << t.ConfigToJson() << " sample " << s << " " << t.ParamsToJson(**params);
    ASSERT_EQ(seg, d.seg) << t.ConfigToJson() << " sample " << s;
  }
  EXPECT_LT(identities, samples);  // the draws exercised real permutations
}

// The registry's CUDA side (augment/cuda/backends.cc) against the one list (augment/transforms/kinds.inc): CPU_ONLY
// kinds have no backend at all (MakeCudaStage and CheckStage2D answer UNIMPLEMENTED, GetServerInfo reports
// cuda=false); EXECUTOR kinds (spatial, downsample_seg_for_ds) have no stage factory; every CUDA / CUFFT kind builds
// its stage from a valid configuration (no GPU needed: factories only inspect the configuration), takes 2D samples
// unless marked NO_2D, and is reported by HasCudaImplementation (GetServerInfo) unless it needs cuFFT and the build
// lacks it.
TEST(CudaStages, EveryKindHasItsListedBackend) {
  const auto configs = testing::ExampleTransformConfigs();
  ASSERT_EQ(configs.size(), static_cast<size_t>(kNumTransformKinds));
  ASSERT_EQ(std::size(testing::kKindRows), static_cast<size_t>(kNumTransformKinds));
  EXPECT_EQ(testing::kKindRows[static_cast<int>(TransformKind::kSpatial)].cuda, "EXECUTOR");
  EXPECT_EQ(testing::kKindRows[static_cast<int>(TransformKind::kDownsampleSegForDs)].cuda, "EXECUTOR");
  int available = 0, with_backend = 0, cufft = 0;
  for (int k = 0; k < kNumTransformKinds; ++k) {
    const auto kind = static_cast<TransformKind>(k);
    const testing::KindRow& row = testing::kKindRows[k];
    ASSERT_EQ(row.kind, kind);
    ASSERT_EQ(row.name, TransformKindName(kind));
    const CudaBackend* b = CudaBackendOf(kind);
    ASSERT_EQ(configs[k].first, TransformKindName(kind));
    auto t = TransformFromJson(configs[k].first, configs[k].second);
    ASSERT_TRUE(t.ok()) << configs[k].first << ": " << t.status();
    if (row.cpu_only()) {
      EXPECT_EQ(b, nullptr) << row.name << ": listed as CPU_ONLY but has a CUDA backend";
      EXPECT_FALSE(HasCudaImplementation(kind)) << row.name;
      EXPECT_EQ(MakeCudaStage(**t, 1).status().code(), absl::StatusCode::kUnimplemented) << row.name;
      EXPECT_EQ(CheckStage2D(kind, 1).code(), absl::StatusCode::kUnimplemented) << row.name;
      continue;
    }
    ASSERT_NE(b, nullptr) << row.name;
    ++with_backend;
    cufft += row.cuda == "CUFFT";
    EXPECT_EQ(b->kind, kind);
    EXPECT_EQ(b->runs_2d, row.cuda_2d()) << row.name;
    EXPECT_EQ(b->lift_2d != nullptr, row.lift == "LIFT") << row.name;
    EXPECT_EQ(HasCudaImplementation(kind), b->available);
    if (row.cuda != "CUFFT") {
      EXPECT_TRUE(b->available) << row.name;
    }
    available += b->available;
    const bool executor = row.cuda == "EXECUTOR";
    EXPECT_EQ(b->make_stage == nullptr, executor) << row.name;
    auto stage = MakeCudaStage(**t, 1);
    if (executor) {
      EXPECT_EQ(stage.status().code(), absl::StatusCode::kUnimplemented);
    } else if (b->available) {
      ASSERT_TRUE(stage.ok()) << row.name << ": " << stage.status();
      EXPECT_NE(*stage, nullptr);
    } else {
      EXPECT_EQ(stage.status().code(), absl::StatusCode::kUnimplemented);
      EXPECT_NE(stage.status().message().find("cuFFT"), std::string::npos) << stage.status();
    }
  }
  EXPECT_GT(with_backend, 0);
  EXPECT_GE(available, with_backend - cufft);
}

// The one CUDA status helper (cuda/status.h): out of memory is its own code, every other error names the call and
// the CUDA error (no GPU needed: the error names are the runtime's tables).
TEST(CudaStages, OneStatusHelper) {
  EXPECT_TRUE(CudaStatus(cudaSuccess, "noop").ok());
  const absl::Status oom = CudaStatus(cudaErrorMemoryAllocation, "cudaMalloc(x)");
  EXPECT_EQ(oom.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(oom.message().find("cudaMalloc(x)"), std::string::npos) << oom;
  const absl::Status bad = CudaStatus(cudaErrorInvalidValue, "cudaMemcpyAsync(y)");
  EXPECT_EQ(bad.code(), absl::StatusCode::kInternal);
  EXPECT_NE(bad.message().find("cudaErrorInvalidValue"), std::string::npos) << bad;
  EXPECT_NE(bad.message().find("cudaMemcpyAsync(y)"), std::string::npos) << bad;
}

TEST(CudaStages, PermutationsEqualCpuTransforms) {
  const int32_t cube[3] = {5, 5, 5};
  const int32_t slab[3] = {3, 6, 6};
  Rot90Config r;
  r.num_rot_per_combination = {0, 1, 2, 3};  // DA5's (the identity included)
  r.num_axis_combinations = RandomScalar::Uniform(1, 3);  // compositions of up to three rotations
  ExpectPermutationMatchesCpu(**Rot90Transform::Create(r), cube, 40);
  r.allowed_axes = {1, 2};
  ExpectPermutationMatchesCpu(**Rot90Transform::Create(r), slab, 20);
  ExpectPermutationMatchesCpu(**TransposeAxesTransform::Create({{0, 1, 2}}), cube, 20);
  ExpectPermutationMatchesCpu(**TransposeAxesTransform::Create({{1, 2}}), slab, 10);
  ExpectPermutationMatchesCpu(**MirrorTransform::Create({{0, 1, 2}}), slab, 10);
}

// Linked permutation stages gather once through ComposePermutations(first, second): equal to gathering through
// `first`, then `second`, for every pair of drawn rot90 / transpose_axes / mirror records (off ones included: the
// identity), and to the CPU transforms applied in that order.
TEST(CudaStages, ComposedPermutationsEqualTheirSequence) {
  const int32_t S[3] = {4, 4, 4};
  Rot90Config r;
  r.num_rot_per_combination = {0, 1, 2, 3};
  r.num_axis_combinations = RandomScalar::Uniform(1, 3);
  const std::vector<std::shared_ptr<const Transform>> kinds = {*Rot90Transform::Create(r),
                                                               *TransposeAxesTransform::Create({{0, 1, 2}}),
                                                               *MirrorTransform::Create({{0, 1, 2}})};
  std::mt19937 g(3);
  std::vector<float> x(2 * 64);
  for (float& v : x) v = std::uniform_real_distribution<float>(-1, 1)(g);
  int non_trivial = 0;
  for (int s = 0; s < 300; ++s) {
    const Transform& a = *kinds[s % 3];
    const Transform& b = *kinds[(s / 3) % 3];
    SampleData d;
    d.channels = 2;
    d.shape = {S[0], S[1], S[2]};
    d.image = x;
    RandomStream ra(5, s, 1), rb(5, s, 2);
    DrawContext ca{ra, 5, static_cast<uint64_t>(s), 1}, cb{rb, 5, static_cast<uint64_t>(s), 2};
    auto pa = a.Draw(ca, d.layout());
    auto pb = b.Draw(cb, d.layout());
    ASSERT_TRUE(pa.ok() && pb.ok());
    cuda::chain::PermuteSample fa = *PermuteOf(a, **pa, S), fb = *PermuteOf(b, **pb, S);
    if (s % 7 == 0) fa.on = 0;  // an off record (entry not applied) is the identity, whatever its fields
    if (s % 11 == 0) fb.on = 0;
    const cuda::chain::PermuteSample ab = stage_internal::ComposePermutations(fa, fb);
    const auto apply = [&](const std::vector<float>& v, const cuda::chain::PermuteSample& p) {
      return p.on ? Gather(v, 2, S, p) : v;
    };
    ASSERT_EQ(apply(x, ab), apply(apply(x, fa), fb)) << "draw " << s;
    non_trivial += ab.on;
    if (fa.on && fb.on) {  // the CPU transforms in the chain's order
      ASSERT_TRUE(a.Apply(**pa, d).ok());
      ASSERT_TRUE(b.Apply(**pb, d).ok());
      ASSERT_EQ(apply(x, ab), d.image) << "draw " << s;
    }
  }
  EXPECT_GT(non_trivial, 200);
}

TEST(CudaStages, PermutationOfUnequalAxesIsInvalid) {
  auto t = *Rot90Transform::Create({});
  Rot90Params p;
  p.num_rot_per_combination = {1};
  p.axis_combinations = {{1, 3}};
  const int32_t S[3] = {4, 5, 6};
  EXPECT_EQ(PermuteOf(*t, p, S).status().code(), absl::StatusCode::kInvalidArgument);
  p.num_rot_per_combination = {2};  // a half turn keeps the shape
  EXPECT_TRUE(PermuteOf(*t, p, S).ok());
}

TrainerConfig SmallConfig() {
  TrainerConfig tc;
  tc.patch_size = {12, 12, 12};
  tc.deep_supervision_scales = {{1, 1, 1}, {0.5, 0.5, 0.5}, {0.25, 0.25, 0.25}};
  return tc;
}

TEST(CudaChain, Coverage) {
  TrainerConfig tc = SmallConfig();
  EXPECT_TRUE(CudaChain::Create(*NnunetDefaultPipeline(tc)).ok());
  auto da5 = CudaChain::Create(*NnunetDa5Pipeline(tc));
  EXPECT_TRUE(da5.ok()) << da5.status();
  tc.regions = std::vector<std::vector<int64_t>>{{1, 2}, {2}};
  EXPECT_TRUE(CudaChain::Create(*NnunetDefaultPipeline(tc)).ok());

  PipelineSpec spec = *NnunetDefaultPipeline(SmallConfig());
  std::swap(spec.transforms[0], spec.transforms[1]);  // spatial second: the entries before it run at input shape
  auto s = CudaChain::Create(spec);
  EXPECT_TRUE(s.ok()) << s.status();
  spec.transforms.insert(spec.transforms.begin() + 2, spec.transforms[1]);  // a second spatial entry: staged
  s = CudaChain::Create(spec);
  EXPECT_TRUE(s.ok()) << s.status();

  // DS before remove_label: label entries after DS are INVALID_ARGUMENT on both engines (CheckLayoutStable).
  spec = *NnunetDefaultPipeline(SmallConfig());
  std::swap(spec.transforms[spec.transforms.size() - 1], spec.transforms[spec.transforms.size() - 2]);
  s = CudaChain::Create(spec);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << s.status();
  EXPECT_NE(s.status().message().find("(remove_label) uses the labels after downsample_seg_for_ds"),
            std::string::npos)
      << s.status();
  std::vector<float> img(2 * 12 * 12 * 12, 0.5f);
  std::vector<int16_t> seg(2 * 12 * 12 * 12, 1);
  BatchInput in;
  in.image = {img.data(), {2, 1, 12, 12, 12}, DType::kFloat32};
  in.seg = {seg.data(), {2, 1, 12, 12, 12}, DType::kInt16};
  const absl::Status cpu = AugmentBatch(spec, in, RunOptions{}).status();
  EXPECT_EQ(cpu.code(), absl::StatusCode::kInvalidArgument) << cpu;
  EXPECT_EQ(cpu.message(), s.status().message());
}

// Region modes (augment/region_mode.h): the fused kernels refuse them (naming region_mode), the chain wraps the
// entry's stage (GPU parity: CudaChain.RegionModes in cuda/chain_test.cc).
TEST(CudaChain, RegionModesRunOnTheChain) {
  PipelineSpec spec = *NnunetDefaultPipeline(SmallConfig());
  for (TransformSpec& ts : spec.transforms) ts.apply_probability = 1.0;  // the fused kernels' all-on pipeline
  ASSERT_TRUE(MakeCudaPlan(spec).ok()) << MakeCudaPlan(spec).status();
  for (TransformSpec& ts : spec.transforms)
    if (ts.kind == TransformKind::kGamma) ts.region_mode = RegionModeConfig{0.5, 0.5, true};
  const absl::StatusOr<CudaPlan> plan = MakeCudaPlan(spec);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("region_mode"), std::string::npos) << plan.status();
  auto chain = CudaChain::Create(spec);
  EXPECT_TRUE(chain.ok()) << chain.status();
}

// Pipelines the staged chain / DS-not-last path takes (GPU parity cases in cuda/chain_test.cc).
PipelineSpec TwoSpatial() {  // the preset's spatial, then a second one onto a smaller, odd patch
  PipelineSpec spec = *NnunetDefaultPipeline(SmallConfig());
  SpatialConfig c = static_cast<const SpatialTransform&>(*spec.transforms[0].transform).config();
  c.patch_size = {9, 11, 10};
  spec.transforms.insert(spec.transforms.begin() + 3, *TransformSpec::Make(*SpatialTransform::Create(c), 1.0));
  return spec;
}
PipelineSpec SpatialAfterRegions() {  // ..., remove_label, regions, spatial, DS
  TrainerConfig tc = SmallConfig();
  tc.regions = std::vector<std::vector<int64_t>>{{1, 2}, {2}, {3}};
  PipelineSpec spec = *NnunetDefaultPipeline(tc);
  SpatialConfig c = static_cast<const SpatialTransform&>(*spec.transforms[0].transform).config();
  c.padding_value_seg = 0;  // 0/1 region channels: the label fill must be 0 or 1 (PipelineSpec::CheckLayoutStable)
  spec.transforms.erase(spec.transforms.begin());
  spec.transforms.insert(spec.transforms.end() - 1, *TransformSpec::Make(*SpatialTransform::Create(c), 1.0));
  return spec;
}
PipelineSpec DsThenImageOnly() {  // ..., DS, gamma, gaussian_noise (image-only entries after DS)
  PipelineSpec spec = *NnunetDefaultPipeline(SmallConfig());
  for (TransformKind k : {TransformKind::kGamma, TransformKind::kGaussianNoise})
    for (const TransformSpec& ts : std::vector<TransformSpec>(spec.transforms))
      if (ts.kind == k) {
        spec.transforms.push_back(ts);
        break;
      }
  return spec;
}

TEST(CudaChain, StagedAndDsNotLastCoverage) {
  for (const PipelineSpec& spec : {TwoSpatial(), SpatialAfterRegions(), DsThenImageOnly()}) {
    auto s = CudaChain::Create(spec);
    EXPECT_TRUE(s.ok()) << s.status();
  }
}

// OutputLayout == the CPU engine's output shapes and dtypes (default, DA5, regions; 0, 1 and 2 seg channels).
TEST(CudaChain, LayoutEqualsCpuEngine) {
  TrainerConfig regions = SmallConfig();
  regions.regions = std::vector<std::vector<int64_t>>{{1, 2}, {2}, {3}};
  const std::vector<PipelineSpec> specs = {
      *NnunetDefaultPipeline(SmallConfig()), *NnunetDa5Pipeline(SmallConfig()), *NnunetDefaultPipeline(regions),
      TwoSpatial(),  // staged chain (cuda/chain.h)
      SpatialAfterRegions(), DsThenImageOnly()};
  for (const PipelineSpec& spec : specs) {
    auto chain = CudaChain::Create(spec);
    ASSERT_TRUE(chain.ok()) << spec.name << ": " << chain.status();
    const std::vector<int64_t> S = spec.input_patch_size;
    for (int64_t sc : {0, 1, 2}) {
      std::vector<float> img(2 * S[0] * S[1] * S[2], 0.5f);
      std::vector<int16_t> seg(2 * sc * S[0] * S[1] * S[2], 1);
      BatchInput in;
      in.image = {img.data(), {2, 1, S[0], S[1], S[2]}, DType::kFloat32};
      if (sc > 0) in.seg = {seg.data(), {2, sc, S[0], S[1], S[2]}, DType::kInt16};
      auto cpu = AugmentBatch(spec, in, RunOptions{});
      ASSERT_TRUE(cpu.ok()) << cpu.status();
      auto lay = (*chain)->OutputLayout(in.image.shape, DType::kBFloat16, sc);
      ASSERT_TRUE(lay.ok()) << lay.status();
      EXPECT_EQ(lay->image_shape, cpu->image.shape());
      EXPECT_EQ(lay->image_bytes, static_cast<size_t>(cpu->image.numel()) * 2);
      ASSERT_EQ(lay->seg_shapes.size(), cpu->seg.size()) << spec.name << " seg channels " << sc;
      for (size_t l = 0; l < cpu->seg.size(); ++l) {
        EXPECT_EQ(lay->seg_shapes[l], cpu->seg[l].shape());
        EXPECT_EQ(lay->seg_dtype, cpu->seg[l].dtype());
        EXPECT_EQ(lay->seg_bytes[l], cpu->seg[l].nbytes());
      }
    }
  }
}

}  // namespace
}  // namespace augmentd
