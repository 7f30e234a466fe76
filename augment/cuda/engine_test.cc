// CUDA engine vs CPU engine (cuda/engine.h): the same AugmentBatch call on "cpu" and "cuda:0", same seed and sample
// indices, fresh random inputs every run (the seed is printed; AUGMENTD_TEST_SEED replays one). Counts label mismatches
// (each must be an fp16 vote tie or sit on the out-of-bounds threshold) and the max image error relative to the
// channel's range (must be <= 1e-4). Cases: isotropic / anisotropic / odd patches, 1 and 4 channels, 2 and 8 labels,
// ignore label, -1 regions + masking, B = 1, 2, 8, default probabilities and every transform forced on; plus the
// device-buffer path, coverage errors (UNIMPLEMENTED without a GPU too) and a timing of the engine path. Label gpu.
#include "augment/cuda/engine.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "augment/engine.h"
#include "augment/pipeline.h"
#include "augment/testing/have_gpu.h"
#include "augment/testing/image_compare.h"
#include "augment/testing/label_tie.h"
#include "augment/testing/random_volume.h"
#include "augment/transforms/mirror/mirror.h"
#include "augment/transforms/spatial/spatial.h"
#include "gtest/gtest.h"

namespace augmentd {
namespace {

using testing::HaveGpu;

struct Case {
  std::string name;
  std::vector<int64_t> patch = {25, 31, 27};
  int B = 2, C = 1, labels = 4;
  bool all_on = false;
  bool ignore_label = false;  // an extra label value = ignore label (nnU-Net keeps it as a plain label without regions)
  bool mask = false;          // use_mask_for_norm on channel 0 (MaskImageTransform) + -1 regions in the input seg
  DType out_dtype = DType::kFloat32;
  double p_elastic = 0;       // spatial p_elastic_deform (1 with all_on)
  double elastic_magnitude = 0;  // > 0: magnitude U(0.5·m, m) pixels instead of bgv2's default U(0, 0.2)
  std::string bgv2 = "0.3.6";    // the preset's batchgeneratorsv2 release (TrainerConfig::bgv2_version)
  std::string seg_tiebreak;      // 0.3.6: empty = 'nearest'
  double max_scale = 0;          // > 0: scaling U(0.7, max_scale) (> 1.4 pushes the sampling out of the image)
};

PipelineSpec MakeSpec(const Case& cs) {
  TrainerConfig tc;
  tc.patch_size = cs.patch;
  tc.num_input_channels = cs.C;
  tc.deep_supervision_scales = {{1, 1, 1}, {0.5, 0.5, 0.5}, {0.25, 0.25, 0.25}};
  if (cs.ignore_label) tc.ignore_label = cs.labels;
  tc.bgv2_version = cs.bgv2;
  if (cs.mask) {
    tc.use_mask_for_norm.assign(cs.C, false);
    tc.use_mask_for_norm[0] = true;
  }
  auto spec = NnunetDefaultPipeline(tc);
  EXPECT_TRUE(spec.ok()) << spec.status();
  for (TransformSpec& ts : spec->transforms) {
    if (cs.all_on) ts.apply_probability = 1.0;
    if (ts.kind == TransformKind::kSpatial) {
      SpatialConfig c = static_cast<const SpatialTransform&>(*ts.transform).config();
      if (cs.all_on) {
        c.p_rotation = 1;
        c.p_scaling = 1;
      }
      c.p_elastic_deform = cs.p_elastic;
      c.seg_tiebreak = cs.seg_tiebreak;
      if (cs.max_scale > 0) c.scaling = RandomScalar::Uniform(0.7, cs.max_scale);
      if (cs.elastic_magnitude > 0)
        c.elastic_deform_magnitude = RandomScalar::Uniform(0.5 * cs.elastic_magnitude, cs.elastic_magnitude);
      ts.transform = *SpatialTransform::Create(c);
    }
  }
  return *spec;
}

struct Inputs {
  std::vector<float> image;
  std::vector<int16_t> seg;
  std::vector<int64_t> ishape, sshape;
  BatchInput In() const {
    return {TensorView{image.data(), ishape, DType::kFloat32}, TensorView{seg.data(), sshape, DType::kInt16}};
  }
};

// Image N(0.3, 1) (never zeros); blobby labels (a coarse random field, nearest-upsampled by 4) so the vote sees
// real boundaries; -1 slabs when masking.
Inputs MakeInputs(const Case& cs, const std::vector<int64_t>& S, std::mt19937_64& g) {
  Inputs x;
  x.ishape = {cs.B, cs.C, S[0], S[1], S[2]};
  x.sshape = {cs.B, 1, S[0], S[1], S[2]};
  const int64_t n = S[0] * S[1] * S[2];
  x.image.resize(cs.B * cs.C * n);
  testing::FillNormal(g, x.image);
  const int nl = cs.labels + (cs.ignore_label ? 1 : 0);
  x.seg.resize(cs.B * n);
  for (int b = 0; b < cs.B; ++b) {
    int16_t* plane = x.seg.data() + b * n;
    testing::FillBlobbyLabels(g, S, nl, plane);
    if (cs.mask && b % 2 == 0) std::fill(plane, plane + std::min<int64_t>(3, S[0]) * S[1] * S[2], int16_t{-1});
  }
  return x;
}

const SpatialParams* SpatialOf(const SampleRecord& r) {
  for (const AppliedTransform& a : r.transforms)
    if (a.kind == TransformKind::kSpatial && a.applied) return static_cast<const SpatialParams*>(a.params.get());
  return nullptr;
}
int MirrorMaskOf(const SampleRecord& r) {
  int m = 0;
  for (const AppliedTransform& a : r.transforms)
    if (a.kind == TransformKind::kMirror && a.applied)
      for (int64_t ax : static_cast<const MirrorParams*>(a.params.get())->axes) m |= 1 << ax;
  return m;
}

// The CPU's elastic offsets of one sample and the mean they shift the grid by (materialised once, on demand).
struct ElasticGeometry {
  bool ready = false;
  std::vector<float> offsets;  // (P, 3)
  double mean[3] = {0, 0, 0};
};

// Is output voxel o (post-mirror) of this sample an fp16 near-tie of the label vote, or on the (swapped-axis)
// out-of-bounds threshold? Mirrors the kernel test's rule with the sample's own float32 affine (and elastic offsets).
bool ExplainedByTie(const SampleRecord& r, const int16_t* seg, const std::vector<int64_t>& S,
                    const std::vector<int64_t>& P, int64_t o, const PipelineSpec& spec, ElasticGeometry& el) {
  const SpatialParams* sp = SpatialOf(r);
  if (sp == nullptr || (!sp->affine && !sp->elastic)) return false;  // crop: must be exact
  const auto& tr = static_cast<const SpatialTransform&>(*spec.transforms[0].transform);
  double A[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  for (int i = 0; sp->affine && i < 9; ++i) A[i] = static_cast<float>((*sp->affine)[i]);
  const int64_t n = P[0] * P[1] * P[2];
  if (sp->elastic && !el.ready) {
    el.offsets = tr.ElasticOffsets(*sp);
    if (tr.config().center_deformation) {
      double m[3] = {0, 0, 0};
      for (int64_t v = 0; v < n; ++v)
        for (int e = 0; e < 3; ++e) m[e] += el.offsets[v * 3 + e];
      for (int d = 0; d < 3; ++d)
        for (int e = 0; e < 3; ++e) el.mean[d] += A[3 * d + e] * m[e] / static_cast<double>(n);
    }
    el.ready = true;
  }
  const int mm = MirrorMaskOf(r);
  int64_t jo[3] = {o / (P[1] * P[2]), (o / P[2]) % P[1], o % P[2]};
  for (int d = 0; d < 3; ++d)
    if (mm & (1 << d)) jo[d] = P[d] - 1 - jo[d];
  const int64_t v = (jo[0] * P[1] + jo[1]) * P[2] + jo[2];
  double g[3], u[3];
  for (int d = 0; d < 3; ++d) g[d] = jo[d] - 0.5 * (P[d] - 1) + (sp->elastic ? el.offsets[v * 3 + d] : 0.0);
  for (int d = 0; d < 3; ++d) {
    u[d] = 0;
    for (int e = 0; e < 3; ++e) u[d] += A[3 * d + e] * g[e];
    u[d] += sp->center_location_in_pixels[d] - S[d] / 2.0 - el.mean[d];
  }
  if (SegPadFirst(tr.config()))  // 0.3.6: the padding label (−1) votes
    return augmentd::testing::LabelVoteNearTiePadFirst(seg, S.data(), u, -1);
  return augmentd::testing::LabelVoteNearTie(seg, S.data(), u);
}

// A fresh 64-bit seed per run (the tests print it), or AUGMENTD_TEST_SEED's to replay one.
uint64_t TestSeed() {
  if (const char* fixed = std::getenv("AUGMENTD_TEST_SEED")) return std::strtoull(fixed, nullptr, 10);
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

void RunCase(const Case& cs) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  const uint64_t seed = TestSeed();
  std::mt19937_64 g(seed);
  const PipelineSpec spec = MakeSpec(cs);
  const std::vector<int64_t> S = spec.input_patch_size;
  const Inputs x = MakeInputs(cs, S, g);
  RunOptions opt;
  opt.seed = seed;
  opt.first_sample_index = 1000 + (seed % 97);
  opt.num_threads = 0;
  opt.image_dtype = cs.out_dtype;
  auto cpu = AugmentBatch(spec, x.In(), opt);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  opt.device = "cuda:0";
  auto gpu = AugmentBatch(spec, x.In(), opt);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  ASSERT_EQ(gpu->image.shape(), cpu->image.shape());
  ASSERT_EQ(gpu->seg.size(), cpu->seg.size());
  // Same parameters drawn (JSON materialises elastic offsets: only for small patches; the recipes always).
  const int64_t patch_n = cs.patch[0] * cs.patch[1] * cs.patch[2];
  if (cs.p_elastic == 0 || patch_n <= 32768) {
    EXPECT_EQ(gpu->ParamsJson(spec), cpu->ParamsJson(spec));
  }
  for (int b = 0; b < cs.B; ++b) {
    const SpatialParams* c = SpatialOf(cpu->samples[b]);
    const SpatialParams* k = SpatialOf(gpu->samples[b]);
    ASSERT_EQ(c == nullptr, k == nullptr);
    if (c == nullptr) continue;
    ASSERT_EQ(c->elastic.has_value(), k->elastic.has_value());
    if (c->elastic) {
      EXPECT_EQ(c->elastic->sigma, k->elastic->sigma);
      EXPECT_EQ(c->elastic->magnitude, k->elastic->magnitude);
      EXPECT_EQ(c->elastic->sample_index, k->elastic->sample_index);
    }
  }

  const std::vector<int64_t> P(cpu->image.shape().begin() + 2, cpu->image.shape().end());
  const int64_t out_n = P[0] * P[1] * P[2], in_n = S[0] * S[1] * S[2];
  int64_t seg_mismatch = 0, unexplained = 0, ds_mismatch = 0, ds_unexplained = 0, float_bad = 0;
  double max_rel = 0;
  for (int b = 0; b < cs.B; ++b) {
    const SampleRecord& rec = cpu->samples[b];
    const int16_t* in_seg = x.seg.data() + b * in_n;
    const int16_t* cs0 = cpu->seg[0].data<int16_t>() + b * out_n;
    const int16_t* gs0 = gpu->seg[0].data<int16_t>() + b * out_n;
    std::vector<uint8_t> differ(out_n, 0);
    ElasticGeometry el;
    for (int64_t o = 0; o < out_n; ++o) {
      if (cs0[o] == gs0[o]) continue;
      ++seg_mismatch;
      differ[o] = 1;
      if (!ExplainedByTie(rec, in_seg, S, P, o, spec, el)) {
        if (unexplained < 5) std::printf("  b=%d voxel %lld: cuda %d cpu %d\n", b, (long long)o, gs0[o], cs0[o]);
        ++unexplained;
      }
    }
    for (size_t l = 1; l < cpu->seg.size(); ++l) {
      const auto& sh = cpu->seg[l].shape();
      const int64_t q[3] = {sh[2], sh[3], sh[4]}, qn = q[0] * q[1] * q[2];
      const int16_t* c = cpu->seg[l].data<int16_t>() + b * qn;
      const int16_t* k = gpu->seg[l].data<int16_t>() + b * qn;
      for (int64_t i = 0; i < qn; ++i) {
        if (c[i] == k[i]) continue;
        ++ds_mismatch;
        // Nearest-exact source voxel (torch's float scale): a DS mismatch must come from a full-res one.
        int64_t src[3];
        const int64_t qi[3] = {i / (q[1] * q[2]), (i / q[2]) % q[1], i % q[2]};
        for (int d = 0; d < 3; ++d) {
          const float sc = static_cast<float>(P[d]) / static_cast<float>(q[d]);
          src[d] = std::min<int64_t>(
              static_cast<int64_t>(std::floor(static_cast<float>((qi[d] + 0.5) * static_cast<double>(sc)))), P[d] - 1);
        }
        if (!differ[(src[0] * P[1] + src[1]) * P[2] + src[2]]) ++ds_unexplained;
      }
    }
    for (int c = 0; c < cs.C; ++c) {
      const int64_t base = (int64_t{b} * cs.C + c) * out_n;
      const double range = testing::RangeOf(cpu->image, base, out_n);
      for (int64_t o = 0; o < out_n; ++o) {
        const double r = testing::ValueAt(cpu->image, base + o), k = testing::ValueAt(gpu->image, base + o);
        const double err = std::fabs(k - r);
        if (!(err <= testing::ImageTolerance(range, cs.out_dtype, r))) {
          // A vote tie between -1 and a label flips the mask (labels then agree after -1 -> 0).
          if (cs.mask && c == 0 && (differ[o] || ExplainedByTie(rec, in_seg, S, P, o, spec, el))) continue;
          if (float_bad < 5) std::printf("  b=%d c=%d o=%lld: cuda %g cpu %g\n", b, c, (long long)o, k, r);
          ++float_bad;
        }
        max_rel = std::isfinite(err) ? std::max(max_rel, err / range) : INFINITY;
      }
    }
  }
  const double total = static_cast<double>(cs.B) * out_n;
  std::printf(
      "[engine %s] seed %llu B=%d C=%d S=%s P=%s labels=%d%s: image max|err|/range %.3g (bad %lld), seg mismatches "
      "%lld (%.2e, all fp16 ties: %s), DS mismatches %lld (not from full-res: %lld)\n",
      cs.name.c_str(), static_cast<unsigned long long>(seed), cs.B, cs.C, ShapeString(S).c_str(),
      ShapeString(P).c_str(), cs.labels, cs.ignore_label ? "+ignore" : "", max_rel, (long long)float_bad,
      (long long)seg_mismatch, seg_mismatch / total, unexplained == 0 ? "yes" : "NO", (long long)ds_mismatch,
      (long long)ds_unexplained);
  EXPECT_EQ(float_bad, 0);
  EXPECT_EQ(unexplained, 0);
  EXPECT_EQ(ds_unexplained, 0);
  EXPECT_LE(seg_mismatch / total, 1e-3);
}

Case Make(std::string name, std::vector<int64_t> patch, int B, int C, int labels, bool all_on) {
  Case c;
  c.name = std::move(name);
  c.patch = std::move(patch);
  c.B = B;
  c.C = C;
  c.labels = labels;
  c.all_on = all_on;
  return c;
}

TEST(CudaEngine, DefaultProbabilities) {
  for (int B : {1, 2, 8})
    for (int C : {1, 4})
      for (int L : {2, 8}) RunCase(Make("default-p", {25, 31, 27}, B, C, L, false));
}

TEST(CudaEngine, AllTransformsOn) {
  for (int B : {1, 2, 8})
    for (int C : {1, 4})
      for (int L : {2, 8}) RunCase(Make("all-on", {25, 31, 27}, B, C, L, true));
}

TEST(CudaEngine, IsotropicAnisotropicOdd) {
  RunCase(Make("iso-32", {32, 32, 32}, 2, 1, 4, true));
  RunCase(Make("aniso-24x48x40", {24, 48, 40}, 2, 4, 8, true));
  RunCase(Make("aniso-default-p", {24, 48, 40}, 8, 1, 4, false));
  RunCase(Make("odd-17x23x19", {17, 23, 19}, 8, 4, 2, true));
}

TEST(CudaEngine, IgnoreLabelAndMasking) {
  for (bool all_on : {false, true}) {
    Case c = Make(all_on ? "ignore+mask-all-on" : "ignore+mask", {25, 31, 27}, 8, 4, 3, all_on);
    c.ignore_label = true;
    c.mask = true;
    RunCase(c);
  }
  Case c = Make("mask-1ch", {25, 31, 27}, 2, 1, 2, true);
  c.mask = true;
  RunCase(c);
}

TEST(CudaEngine, HalfPrecisionOutputs) {
  Case c = Make("all-on-fp16", {25, 31, 27}, 2, 4, 8, true);
  c.out_dtype = DType::kFloat16;
  RunCase(c);
  c.name = "all-on-bf16";
  c.out_dtype = DType::kBFloat16;
  RunCase(c);
}

// Elastic deformation on the device vs the CPU engine's field (bgv2 semantics): alone and with rotation/scaling,
// default and larger magnitudes, odd and anisotropic patches, B = 1, 2, 8, 1 and 4 channels.
TEST(CudaEngine, ElasticDeformation) {
  for (int B : {1, 2, 8})
    for (int C : {1, 4}) {
      Case c = Make("elastic-all-on", {25, 31, 27}, B, C, 4, true);
      c.p_elastic = 1;
      c.elastic_magnitude = B == 2 ? 0 : 3.0;
      RunCase(c);
    }
  Case c = Make("elastic-only-odd", {17, 23, 19}, 2, 1, 8, false);
  c.p_elastic = 1;
  c.elastic_magnitude = 5.0;
  RunCase(c);
  c = Make("elastic-default-p-aniso", {24, 48, 40}, 8, 4, 4, false);
  c.p_elastic = 0.5;
  c.elastic_magnitude = 2.0;
  RunCase(c);
  c = Make("elastic-all-on-128", {128, 128, 128}, 2, 1, 4, true);
  c.p_elastic = 1;
  c.elastic_magnitude = 4.0;
  RunCase(c);
}

// bgv2 0.3.5's vote (lowest-label ties, the −1 mask with its swapped-threshold quirk) beside the default 0.3.6; and
// 0.3.6's other tie-breaks and sampling far outside the image (scale up to 1.9).
TEST(CudaEngine, Bgv2Releases) {
  for (int B : {1, 2, 8}) {
    Case c = Make("bgv2-0.3.5-all-on", {25, 31, 27}, B, 1 + (B == 8 ? 3 : 0), B == 1 ? 2 : 8, true);
    c.bgv2 = "0.3.5";
    RunCase(c);
  }
  Case c = Make("bgv2-0.3.5-elastic", {17, 23, 19}, 2, 1, 4, true);
  c.bgv2 = "0.3.5";
  c.p_elastic = 1;
  c.elastic_magnitude = 3.0;
  RunCase(c);
  for (const char* tiebreak : {"nearest", "lowest", "highest"}) {
    for (int L : {2, 6}) {
      Case t = Make(std::string("bgv2-0.3.6-") + tiebreak + "-outside", {25, 31, 27}, 2, 1, L, true);
      t.seg_tiebreak = tiebreak;
      t.max_scale = 1.9;
      t.mask = true;  // −1 regions in the input: the padding label is also a label of the image
      RunCase(t);
    }
  }
  Case e = Make("bgv2-0.3.6-elastic-outside", {25, 31, 27}, 2, 4, 4, true);
  e.p_elastic = 1;
  e.elastic_magnitude = 4.0;
  e.max_scale = 1.8;
  RunCase(e);
}

TEST(CudaEngine, BenchmarkShape) { RunCase(Make("all-on-128", {128, 128, 128}, 2, 1, 4, true)); }

// Device buffers in, caller buffers out, a caller stream, twice with the same buffers (steady state) and then a
// smaller batch (the workspace is re-armed): equal to the host path.
TEST(CudaEngine, DeviceBuffersAndStreams) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  std::mt19937_64 g(42);
  Case cs = Make("device", {25, 31, 27}, 4, 2, 4, true);
  const PipelineSpec spec = MakeSpec(cs);
  const Inputs x = MakeInputs(cs, spec.input_patch_size, g);
  RunOptions opt;
  opt.seed = 9;
  opt.device = "cuda:0";
  auto host = AugmentBatch(spec, x.In(), opt);
  ASSERT_TRUE(host.ok()) << host.status();
  auto aug = CudaAugmenter::Create(spec, 0);
  ASSERT_TRUE(aug.ok()) << aug.status();
  auto lay = (*aug)->OutputLayout(x.ishape, DType::kFloat32);
  ASSERT_TRUE(lay.ok()) << lay.status();
  float* d_img;
  int16_t* d_seg;
  void* d_out;
  ASSERT_EQ(cudaMalloc(&d_img, x.image.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_seg, x.seg.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_out, lay->image_bytes), cudaSuccess);
  std::vector<int16_t*> d_levels;
  for (size_t b : lay->seg_bytes) {
    void* p;
    ASSERT_EQ(cudaMalloc(&p, b), cudaSuccess);
    d_levels.push_back(static_cast<int16_t*>(p));
  }
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_img, x.image.data(), x.image.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_seg, x.seg.data(), x.seg.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  CudaBatchInput in{d_img, d_seg, x.ishape};
  CudaBatchOutput out{d_out, d_levels};
  for (int rep = 0; rep < 2; ++rep) {
    std::vector<SampleRecord> recs;
    ASSERT_TRUE((*aug)->Run(in, out, opt, s, &recs).ok());
    ASSERT_EQ(recs.size(), 4u);
  }
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  std::vector<float> img(lay->image_bytes / 4);
  ASSERT_EQ(cudaMemcpy(img.data(), d_out, lay->image_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(0, std::memcmp(img.data(), host->image.raw_data(), lay->image_bytes));
  for (size_t l = 0; l < d_levels.size(); ++l) {
    std::vector<int16_t> v(lay->seg_bytes[l] / 2);
    ASSERT_EQ(cudaMemcpy(v.data(), d_levels[l], lay->seg_bytes[l], cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(0, std::memcmp(v.data(), host->seg[l].raw_data(), lay->seg_bytes[l])) << "level " << l;
  }
  // Smaller batch (first two samples) through the same augmenter, default stream.
  CudaBatchInput in2{d_img, d_seg, {2, 2, x.ishape[2], x.ishape[3], x.ishape[4]}};
  EXPECT_TRUE((*aug)->Run(in2, out, opt, nullptr).ok());
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // Bad outputs.
  CudaBatchOutput bad{d_out, {d_levels[0]}};
  EXPECT_EQ((*aug)->Run(in, bad, opt, s).code(), absl::StatusCode::kInvalidArgument);
  cudaStreamDestroy(s);
  for (void* p : {static_cast<void*>(d_img), static_cast<void*>(d_seg), d_out}) cudaFree(p);
  for (int16_t* p : d_levels) cudaFree(p);
}

// Device output buffers of one layout (freed on destruction).
struct DeviceOutputs {
  void* image = nullptr;
  std::vector<int16_t*> seg;
  CudaOutputLayout lay;
  explicit DeviceOutputs(const CudaOutputLayout& l) : lay(l) {
    EXPECT_EQ(cudaMalloc(&image, lay.image_bytes), cudaSuccess);
    for (size_t b : lay.seg_bytes) {
      void* p = nullptr;
      EXPECT_EQ(cudaMalloc(&p, b), cudaSuccess);
      seg.push_back(static_cast<int16_t*>(p));
    }
  }
  ~DeviceOutputs() {
    cudaFree(image);
    for (int16_t* p : seg) cudaFree(p);
  }
  CudaBatchOutput Out() const { return {image, seg}; }
  // Every output byte, image then levels (synchronous).
  std::vector<char> Bytes() const {
    size_t total = lay.image_bytes;
    for (size_t b : lay.seg_bytes) total += b;
    std::vector<char> h(total);
    EXPECT_EQ(cudaMemcpy(h.data(), image, lay.image_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    size_t o = lay.image_bytes;
    for (size_t l = 0; l < seg.size(); ++l) {
      EXPECT_EQ(cudaMemcpy(h.data() + o, seg[l], lay.seg_bytes[l], cudaMemcpyDeviceToHost), cudaSuccess);
      o += lay.seg_bytes[l];
    }
    return h;
  }
  // On the stream the batch then runs on: a cudaMemset (legacy default stream) is not ordered before the work of a
  // non-blocking stream, and under a busy GPU it landed after the kernels' stores (session 17: 84 % of repetitions
  // failed with three test processes sharing the GPU, the full-resolution labels poisoned after the spatial kernel).
  void Poison(cudaStream_t s) const {
    EXPECT_EQ(cudaMemsetAsync(image, 0x7f, lay.image_bytes, s), cudaSuccess);
    for (size_t l = 0; l < seg.size(); ++l) {
      EXPECT_EQ(cudaMemsetAsync(seg[l], 0x7f, lay.seg_bytes[l], s), cudaSuccess);
    }
  }
};

// Device copies of a batch's inputs (freed on destruction).
struct DeviceInputs {
  float* image = nullptr;
  int16_t* seg = nullptr;
  std::vector<int64_t> shape;
  explicit DeviceInputs(const Inputs& x) : shape(x.ishape) {
    EXPECT_EQ(cudaMalloc(&image, x.image.size() * 4), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&seg, x.seg.size() * 2), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(image, x.image.data(), x.image.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(seg, x.seg.data(), x.seg.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceInputs() {
    cudaFree(image);
    cudaFree(seg);
  }
  CudaBatchInput In() const { return {image, seg, shape}; }
};

// Where two output byte vectors first differ: "image byte i" or "level l byte i" (Bytes() order), or "" if equal.
std::string FirstDifference(const std::vector<char>& a, const std::vector<char>& b, const CudaOutputLayout& lay) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  if (i == n && a.size() == b.size()) return "";
  if (i < lay.image_bytes) return "image byte " + std::to_string(i) + " of " + std::to_string(lay.image_bytes);
  size_t o = lay.image_bytes;
  for (size_t l = 0; l < lay.seg_bytes.size(); o += lay.seg_bytes[l], ++l) {
    if (i < o + lay.seg_bytes[l]) return "level " + std::to_string(l) + " byte " + std::to_string(i - o);
  }
  return "sizes " + std::to_string(a.size()) + " / " + std::to_string(b.size());
}

// CUDA graphs (cuda/engine.h): batches replayed from captured graphs equal the eager launches bit for bit, for
// fresh parameters every batch and output buffers that change between replays (the kernels read the pointers from
// the device); the first sighting of a key runs eagerly, the second captures, later ones replay; the default stream
// stays eager.
// 2 and 4 channels (the 4-channel batches run the channel split, spatial.cu kSplitMinChannels).
TEST(CudaEngine, GraphsEqualEagerLaunches) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  const uint64_t seed0 = TestSeed();
  std::printf("[graphs] seed %llu\n", static_cast<unsigned long long>(seed0));
  for (int C : {2, 4}) {
    for (bool all_on : {true, false}) {
      std::mt19937_64 g(seed0 + 2 * C + (all_on ? 1 : 0));
      Case cs = Make("graphs", {25, 31, 27}, 2, C, 4, all_on);
      const PipelineSpec spec = MakeSpec(cs);
      const Inputs x = MakeInputs(cs, spec.input_patch_size, g);
      auto eager = CudaAugmenter::Create(spec, 0);
      auto graphs = CudaAugmenter::Create(spec, 0);
      ASSERT_TRUE(eager.ok() && graphs.ok());
      (*eager)->set_graphs_enabled(false);
      (*graphs)->set_graphs_enabled(true);
      // Two parts for every batch on both (the default policy decides on the host, alike for both): the graphs capture
      // and replay the forked stream.
      (*eager)->set_split_policy(CudaSplitPolicy::kAlways);
      (*graphs)->set_split_policy(CudaSplitPolicy::kAlways);
      auto lay = (*eager)->OutputLayout(x.ishape, DType::kFloat32);
      ASSERT_TRUE(lay.ok()) << lay.status();
      const DeviceInputs din(x);
      const DeviceOutputs ref(*lay), out_a(*lay), out_b(*lay);
      cudaStream_t s;
      ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
      const CudaBatchInput in = din.In();
      RunOptions opt;
      opt.seed = g();
      const int kBatches = 8;
      for (int it = 0; it < kBatches; ++it) {
        opt.first_sample_index = static_cast<uint64_t>(it) * cs.B;  // fresh parameters (and stage masks) every batch
        const DeviceOutputs& out = it % 2 ? out_b : out_a;          // the graph's buffers change between replays
        ref.Poison(s);
        out.Poison(s);
        std::vector<SampleRecord> r_eager, r_graph;
        ASSERT_TRUE((*eager)->Run(in, ref.Out(), opt, s, &r_eager).ok());
        ASSERT_TRUE((*graphs)->Run(in, out.Out(), opt, s, &r_graph).ok());
        ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
        EXPECT_EQ(FirstDifference(ref.Bytes(), out.Bytes(), *lay), "")
            << (all_on ? "all-on" : "default-p") << ", " << C << " channels, batch " << it << ", seed " << seed0;
      }
      const CudaGraphCounters e = (*eager)->graph_counters(), gc = (*graphs)->graph_counters();
      EXPECT_EQ(e.eager, kBatches);
      EXPECT_EQ(e.replays, 0);
      EXPECT_EQ(gc.eager + gc.replays, kBatches);
      EXPECT_EQ(gc.capture_failures, 0);
      EXPECT_EQ(gc.split, kBatches);  // B = 2: two parts each (cuda/engine.h "Two parts")
      // How many of the 8 keys repeat is up to the seed (each part's stage mask is in the key, and a one-sample part's
      // per-channel draws vary more than a batch's union): one batch three times more is sure to replay, and must
      // equal its eager run.
      {
        opt.first_sample_index = 0;
        const int64_t replays_before = (*graphs)->graph_counters().replays;
        ASSERT_TRUE((*eager)->Run(in, ref.Out(), opt, s).ok());
        for (int rep = 0; rep < 3; ++rep) {
          out_a.Poison(s);
          ASSERT_TRUE((*graphs)->Run(in, out_a.Out(), opt, s).ok());
        }
        ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
        EXPECT_GE((*graphs)->graph_counters().replays - replays_before, 2);
        EXPECT_EQ(FirstDifference(ref.Bytes(), out_a.Bytes(), *lay), "")
            << (all_on ? "all-on" : "default-p") << ", " << C << " channels, batch 0 replayed, seed " << seed0;
      }
      // The default stream: eager, in two parts (the side stream forked from and joined to the legacy stream), equal
      // to batch 0's eager run above (`ref`).
      const int64_t before = (*graphs)->graph_counters().eager, split_before = (*graphs)->graph_counters().split;
      out_a.Poison(s);
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      EXPECT_TRUE((*graphs)->Run(in, out_a.Out(), opt, nullptr).ok());
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ((*graphs)->graph_counters().eager, before + 1);
      EXPECT_EQ((*graphs)->graph_counters().split, split_before + 1);
      EXPECT_EQ(FirstDifference(ref.Bytes(), out_a.Bytes(), *lay), "")
          << (all_on ? "all-on" : "default-p") << ", " << C << " channels, batch 0 on the default stream";
      std::printf("[graphs] %s, %d channels: eager %lld, captures %lld, replays %lld\n",
                  all_on ? "all-on" : "default-p", C, static_cast<long long>(gc.eager),
                  static_cast<long long>(gc.captures), static_cast<long long>(gc.replays));
      cudaStreamDestroy(s);
    }
  }
}

// `out` against `ref` (same layout): every label level byte for byte, the image within the parity tests' tolerance
// per sample and channel.
void ExpectLabelsEqualImageClose(const DeviceOutputs& ref, const DeviceOutputs& out, DType dt, const std::string& what) {
  const CudaOutputLayout& lay = ref.lay;
  const std::vector<char> a = ref.Bytes(), b = out.Bytes();
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(0, std::memcmp(a.data() + lay.image_bytes, b.data() + lay.image_bytes, a.size() - lay.image_bytes))
      << what << ": labels differ";
  HostTensor ia = HostTensor::Empty(lay.image_shape, dt), ib = HostTensor::Empty(lay.image_shape, dt);
  std::memcpy(ia.raw_data(), a.data(), lay.image_bytes);
  std::memcpy(ib.raw_data(), b.data(), lay.image_bytes);
  const int64_t planes = lay.image_shape[0] * lay.image_shape[1];
  const int64_t per = lay.image_bytes / (dt == DType::kFloat32 ? 4 : 2) / planes;
  int64_t bad = 0;
  for (int64_t bc = 0; bc < planes; ++bc) {
    const double range = testing::RangeOf(ia, bc * per, per);
    for (int64_t o = 0; o < per; ++o) {
      const double r = testing::ValueAt(ia, bc * per + o), k = testing::ValueAt(ib, bc * per + o);
      if (!(std::fabs(k - r) <= testing::ImageTolerance(range, dt, r))) ++bad;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": image values outside the tolerance";
}

// One batch through `whole` into `ref` and through `other` into `out` (both poisoned first), on `s`, then
// ExpectLabelsEqualImageClose.
void RunBothAndCompare(CudaAugmenter& whole, CudaAugmenter& other, const CudaBatchInput& in, const DeviceOutputs& ref,
                       const DeviceOutputs& out, const RunOptions& opt, cudaStream_t s, DType dt,
                       const std::string& what) {
  ref.Poison(s);
  out.Poison(s);
  ASSERT_TRUE(whole.Run(in, ref.Out(), opt, s).ok());
  ASSERT_TRUE(other.Run(in, out.Out(), opt, s).ok());
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ExpectLabelsEqualImageClose(ref, out, dt, what);
}

// One case of SplitBatchesEqualWholeBatches: 4 batches through a whole-batch augmenter and a two-part one (graphs on),
// then one batch three more times through the latter against a two-part augmenter with graphs off.
void CheckSplitAgainstWhole(int B, int C, bool all_on, DType dt, int64_t p2, std::mt19937_64& g) {
  Case cs = Make("split", {25, 31, p2}, B, C, 4, all_on);
  cs.out_dtype = dt;
  const PipelineSpec spec = MakeSpec(cs);
  const Inputs x = MakeInputs(cs, spec.input_patch_size, g);
  auto whole = CudaAugmenter::Create(spec, 0);
  auto split = CudaAugmenter::Create(spec, 0);
  auto split_eager = CudaAugmenter::Create(spec, 0);
  ASSERT_TRUE(whole.ok() && split.ok() && split_eager.ok());
  (*whole)->set_split_policy(CudaSplitPolicy::kWhole);
  (*split)->set_split_policy(CudaSplitPolicy::kAlways);
  (*split)->set_graphs_enabled(true);
  (*split_eager)->set_split_policy(CudaSplitPolicy::kAlways);
  (*split_eager)->set_graphs_enabled(false);
  auto lay = (*whole)->OutputLayout(x.ishape, dt);
  ASSERT_TRUE(lay.ok()) << lay.status();
  const DeviceInputs din(x);
  const DeviceOutputs ref(*lay), out(*lay);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  RunOptions opt;
  opt.seed = g();
  opt.image_dtype = dt;
  const std::string what = std::string(all_on ? "all-on" : "default-p") + " B=" + std::to_string(B) +
                           " C=" + std::to_string(C) + (dt == DType::kFloat16 ? " fp16" : " fp32") +
                           " P2=" + std::to_string(p2);
  for (int it = 0; it < 4; ++it) {
    opt.first_sample_index = static_cast<uint64_t>(it) * B;
    ASSERT_NO_FATAL_FAILURE(
        RunBothAndCompare(**whole, **split, din.In(), ref, out, opt, s, dt, what + ", batch " + std::to_string(it)));
  }
  // A sure replay (the key's second sighting captures, the third replays) equals the eager parts bit for bit.
  opt.first_sample_index = 0;
  ASSERT_TRUE((*split_eager)->Run(din.In(), ref.Out(), opt, s).ok());
  const int64_t replays_before = (*split)->graph_counters().replays;
  for (int rep = 0; rep < 3; ++rep) ASSERT_TRUE((*split)->Run(din.In(), out.Out(), opt, s).ok());
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_GE((*split)->graph_counters().replays - replays_before, 2) << what;
  EXPECT_EQ(FirstDifference(ref.Bytes(), out.Bytes(), *lay), "") << what << ", replayed";
  const CudaGraphCounters c = (*split)->graph_counters(), w = (*whole)->graph_counters();
  EXPECT_EQ(c.split, B >= 2 ? 7 : 0) << what;
  EXPECT_EQ(w.split, 0) << what;
  EXPECT_EQ(c.capture_failures, 0) << what;
  std::printf("[split] %s: %lld in two parts, eager %lld, replays %lld\n", what.c_str(),
              static_cast<long long>(c.split), static_cast<long long>(c.eager),
              static_cast<long long>(c.replays));
  cudaStreamDestroy(s);
}

// Two parts (cuda/engine.h): batches of 2, 3 and 8 samples run in two parts on two streams equal the same batches run
// whole: every label level byte for byte, the image within the parity tests' tolerance (the parts may round a pass's
// statistics differently, as the samples of one batch already may: kStageSliceIdle, kStageGamma1Alone). P2 = 27 runs
// the final pass's scalar form; P2 = 28 its vectorised form wherever a part's image output is 16-byte aligned: both
// parts at float32, only the first at float16 with B = 2 (the second starts 43,400 bytes in), so the graph key's
// per-part alignment bits differ between the two. Graphs are on, and each case ends with a sure replay compared bit for
// bit with the eager parts. A batch of 1 runs whole.
TEST(CudaEngine, SplitBatchesEqualWholeBatches) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  const uint64_t seed0 = TestSeed();
  std::printf("[split] seed %llu\n", static_cast<unsigned long long>(seed0));
  std::mt19937_64 g(seed0);
  for (const int B : {1, 2, 3, 8})
    for (const int C : {1, 4})
      for (const bool all_on : {true, false})
        for (const DType dt : {DType::kFloat32, DType::kFloat16}) {
          if (B == 8 && C == 4) continue;
          CheckSplitAgainstWhole(B, C, all_on, dt, 27, g);
          // P2 % 4 == 0: the final pass's vectorised form, where a part's image output is 16-byte aligned.
          if (B <= 3 && C == 1) CheckSplitAgainstWhole(B, C, all_on, dt, 28, g);
        }
}

// One augmenter through changing batch sizes (2, 3, 1, 3 whole, 8, 3, 2; each part's workspace re-armed or grown as
// its shape changes, graphs dropped when a buffer moves) equals a whole-batch augmenter fed the same batches.
TEST(CudaEngine, SplitAcrossBatchSizes) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  const uint64_t seed0 = TestSeed();
  std::printf("[split sizes] seed %llu\n", static_cast<unsigned long long>(seed0));
  std::mt19937_64 g(seed0);
  const Case cs = Make("split-sizes", {25, 31, 28}, 8, 2, 4, false);
  const PipelineSpec spec = MakeSpec(cs);
  const Inputs x = MakeInputs(cs, spec.input_patch_size, g);
  const DeviceInputs din(x);
  auto parts = CudaAugmenter::Create(spec, 0);
  auto whole = CudaAugmenter::Create(spec, 0);
  ASSERT_TRUE(parts.ok() && whole.ok());
  (*parts)->set_graphs_enabled(true);
  (*whole)->set_split_policy(CudaSplitPolicy::kWhole);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  RunOptions opt;
  opt.seed = g();
  const std::pair<int, bool> steps[] = {{2, true}, {3, true}, {1, true}, {3, false}, {8, true}, {3, true}, {2, true}};
  int64_t expect_split = 0;
  for (size_t i = 0; i < std::size(steps); ++i) {
    const auto [B, split] = steps[i];
    (*parts)->set_split_policy(split ? CudaSplitPolicy::kAlways : CudaSplitPolicy::kWhole);
    expect_split += split && B >= 2;
    std::vector<int64_t> shape = x.ishape;
    shape[0] = B;
    const CudaBatchInput in{din.image, din.seg, shape};
    auto lay = (*whole)->OutputLayout(shape, DType::kFloat32);
    ASSERT_TRUE(lay.ok()) << lay.status();
    const DeviceOutputs ref(*lay), out(*lay);
    opt.first_sample_index = i * 8;
    ASSERT_NO_FATAL_FAILURE(RunBothAndCompare(**whole, **parts, in, ref, out, opt, s, DType::kFloat32,
                                              "step " + std::to_string(i) + " (B=" + std::to_string(B) + "), seed " +
                                                  std::to_string(seed0)));
  }
  EXPECT_EQ((*parts)->graph_counters().split, expect_split);
  cudaStreamDestroy(s);
}

// CudaSplitPolicy::kWhenMasksDiffer and kWhenOnePartDirect (not the default) on injected parameters, every transform
// on where not injected off: a batch whose two halves draw the same stage mask runs whole under both; one whose first
// or second half draws no intensity transform runs in two parts under both; one whose halves both run passes, but
// different ones (gamma off in the first half, blur in the second; both keep the contrast pass, p_per_channel 1), and
// one whose halves both take the direct path but differ in noise (the spatial kernel's), in two parts only where the
// masks decide. Each batch equals a whole-batch augmenter's outputs.
TEST(CudaEngine, SplitPoliciesOnTheHalvesMasks) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  const uint64_t seed0 = TestSeed();
  std::printf("[split policy] seed %llu\n", static_cast<unsigned long long>(seed0));
  std::mt19937_64 g(seed0);
  const Case cs = Make("split-policy", {25, 31, 28}, 4, 1, 4, true);
  const PipelineSpec spec = MakeSpec(cs);
  const Inputs x = MakeInputs(cs, spec.input_patch_size, g);
  const DeviceInputs din(x);
  auto whole = CudaAugmenter::Create(spec, 0);
  ASSERT_TRUE(whole.ok());
  (*whole)->set_split_policy(CudaSplitPolicy::kWhole);
  auto lay = (*whole)->OutputLayout(x.ishape, DType::kFloat32);
  ASSERT_TRUE(lay.ok()) << lay.status();
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  using K = TransformKind;
  const std::vector<K> intensity = {K::kGaussianNoise, K::kGaussianBlur, K::kMultiplicativeBrightness,
                                    K::kContrast,      K::kSimulateLowResolution, K::kGamma};
  // Sample b's entries of a kind in off[b] are not applied ({"applied": false}); the others drawn (null: applied).
  const auto inject = [&](const std::vector<std::vector<K>>& off) {
    std::vector<std::vector<nlohmann::json>> inj(cs.B);
    for (int b = 0; b < cs.B; ++b)
      for (const TransformSpec& ts : spec.transforms) {
        const bool drop = std::find(off[b].begin(), off[b].end(), ts.kind) != off[b].end();
        inj[b].push_back(drop ? nlohmann::json{{"applied", false}} : nlohmann::json());
      }
    return inj;
  };
  const std::vector<K> none, gamma = {K::kGamma}, blur = {K::kGaussianBlur};
  std::vector<K> all_but_noise;
  for (K k : intensity)
    if (k != K::kGaussianNoise) all_but_noise.push_back(k);
  struct Step {
    std::vector<std::vector<K>> off;
    bool differ, direct;  // split under kWhenMasksDiffer, kWhenOnePartDirect
  };
  const Step steps[] = {
      {{intensity, intensity, intensity, intensity}, false, false},  // both halves: the spatial kernel alone
      {{none, none, intensity, intensity}, true, true},              // the second half skips every pass
      {{intensity, intensity, none, none}, true, true},              // the first half does
      {{gamma, gamma, blur, blur}, true, false},                     // both run passes, not the same ones
      {{all_but_noise, all_but_noise, intensity, intensity}, true, false},  // both direct, noise in one only
      {{intensity, intensity, intensity, intensity}, false, false},  // whole again (the first workspace re-armed)
  };
  for (const CudaSplitPolicy policy : {CudaSplitPolicy::kWhenMasksDiffer, CudaSplitPolicy::kWhenOnePartDirect}) {
    const bool differ = policy == CudaSplitPolicy::kWhenMasksDiffer;
    for (const bool graphs : {false, true}) {
      auto aug = CudaAugmenter::Create(spec, 0);
      ASSERT_TRUE(aug.ok());
      (*aug)->set_split_policy(policy);
      (*aug)->set_graphs_enabled(graphs);
      int64_t expect_split = 0;
      for (size_t i = 0; i < std::size(steps); ++i) {
        const auto inj = inject(steps[i].off);
        RunOptions opt;
        opt.seed = g();
        opt.first_sample_index = i * cs.B;
        opt.injected = &inj;
        const DeviceOutputs ref(*lay), out(*lay);
        const std::string what = std::string(differ ? "differ, " : "direct, ") + (graphs ? "graphs" : "eager") +
                                 ", step " + std::to_string(i);
        ASSERT_NO_FATAL_FAILURE(RunBothAndCompare(**whole, **aug, din.In(), ref, out, opt, s, DType::kFloat32, what));
        expect_split += differ ? steps[i].differ : steps[i].direct;
        EXPECT_EQ((*aug)->graph_counters().split, expect_split) << what;
      }
    }
  }
  cudaStreamDestroy(s);
}

// The generic chain (DA5, its probabilities and every entry on) with batches enqueued back to back on one stream, one
// synchronisation at the end, each into its own outputs: equal byte for byte to the same batches run one at a time.
// The chain shares its scratch (and its parameter arenas, the late one uploaded on a stream of its own) between
// batches; a missing wait or an early reuse would show here. 64³ patches, so that a batch's kernels outlast the next
// batch's host work (the parameter uploads wait on the host only for the previous batch's, which run at its start).
TEST(CudaEngine, ChainBatchesBackToBack) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  const uint64_t seed0 = TestSeed();
  std::printf("[chain back to back] seed %llu\n", static_cast<unsigned long long>(seed0));
  std::mt19937_64 g(seed0);
  TrainerConfig tc;
  tc.patch_size = {64, 64, 64};
  tc.num_input_channels = 1;
  tc.deep_supervision_scales = {{1, 1, 1}, {0.5, 0.5, 0.5}, {0.25, 0.25, 0.25}};
  for (bool all_on : {true, false}) {
    PipelineSpec spec = *NnunetDa5Pipeline(tc);
    if (all_on)
      for (TransformSpec& ts : spec.transforms) ts.apply_probability = 1.0;
    const Inputs x = MakeInputs(Make("chain", tc.patch_size, 2, 1, 4, all_on), spec.input_patch_size, g);
    auto aug = CudaAugmenter::Create(spec, 0);
    ASSERT_TRUE(aug.ok()) << aug.status();
    auto lay = (*aug)->OutputLayout(x.ishape, DType::kFloat32);
    ASSERT_TRUE(lay.ok()) << lay.status();
    const DeviceInputs din(x);
    constexpr int kBatches = 8;
    std::vector<std::unique_ptr<DeviceOutputs>> piped, alone;
    for (int i = 0; i < kBatches; ++i) {
      piped.push_back(std::make_unique<DeviceOutputs>(*lay));
      alone.push_back(std::make_unique<DeviceOutputs>(*lay));
    }
    cudaStream_t s;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    RunOptions opt;
    opt.seed = g();
    for (int i = 0; i < kBatches; ++i) piped[i]->Poison(s);
    for (int i = 0; i < kBatches; ++i) {
      opt.first_sample_index = static_cast<uint64_t>(i) * 2;
      ASSERT_TRUE((*aug)->Run(din.In(), piped[i]->Out(), opt, s).ok());
    }
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    for (int i = 0; i < kBatches; ++i) {
      opt.first_sample_index = static_cast<uint64_t>(i) * 2;
      alone[i]->Poison(s);
      ASSERT_TRUE((*aug)->Run(din.In(), alone[i]->Out(), opt, s).ok());
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      EXPECT_EQ(FirstDifference(alone[i]->Bytes(), piped[i]->Bytes(), *lay), "")
          << (all_on ? "all on" : "DA5 probabilities") << ", batch " << i << ", seed " << seed0;
    }
    cudaStreamDestroy(s);
  }
}

// The service's regime (server/options.h gpu_workers: one CudaAugmenter and stream per GPU worker): two augmenters
// of one spec on two streams, their batches enqueued in turn without a synchronisation, so that one's kernels run
// while the other's do. Each batch equals, byte for byte, the same batch run alone. The default pipeline (the fused
// kernels) and DA5 (the generic chain), every transform on, 64³ patches (kernels that outlast the host's enqueueing).
TEST(CudaEngine, TwoAugmentersOnTwoStreams) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  const uint64_t seed0 = TestSeed();
  std::printf("[two streams] seed %llu\n", static_cast<unsigned long long>(seed0));
  std::mt19937_64 g(seed0);
  Case cs = Make("two-streams", {64, 64, 64}, 2, 1, 4, true);
  TrainerConfig tc;
  tc.patch_size = cs.patch;
  tc.num_input_channels = 1;
  tc.deep_supervision_scales = {{1, 1, 1}, {0.5, 0.5, 0.5}, {0.25, 0.25, 0.25}};
  PipelineSpec da5 = *NnunetDa5Pipeline(tc);
  for (TransformSpec& ts : da5.transforms) ts.apply_probability = 1.0;
  for (const bool chain : {false, true}) {
    const PipelineSpec spec = chain ? da5 : MakeSpec(cs);
    const Inputs x = MakeInputs(cs, spec.input_patch_size, g);
    std::unique_ptr<CudaAugmenter> augs[2];
    cudaStream_t streams[2];
    for (int k = 0; k < 2; ++k) {
      auto aug = CudaAugmenter::Create(spec, 0);
      ASSERT_TRUE(aug.ok()) << aug.status();
      augs[k] = *std::move(aug);
      ASSERT_EQ(cudaStreamCreateWithFlags(&streams[k], cudaStreamNonBlocking), cudaSuccess);
    }
    auto lay = augs[0]->OutputLayout(x.ishape, DType::kFloat32);
    ASSERT_TRUE(lay.ok()) << lay.status();
    const DeviceInputs din(x);
    constexpr int kBatches = 8;  // batch i on augmenter i % 2
    std::vector<std::unique_ptr<DeviceOutputs>> together, alone;
    for (int i = 0; i < kBatches; ++i) {
      together.push_back(std::make_unique<DeviceOutputs>(*lay));
      alone.push_back(std::make_unique<DeviceOutputs>(*lay));
      together[i]->Poison(streams[i % 2]);
    }
    RunOptions opt;
    opt.seed = g();
    for (int i = 0; i < kBatches; ++i) {
      opt.first_sample_index = static_cast<uint64_t>(i) * 2;
      ASSERT_TRUE(augs[i % 2]->Run(din.In(), together[i]->Out(), opt, streams[i % 2]).ok());
    }
    for (cudaStream_t s : streams) ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    for (int i = 0; i < kBatches; ++i) {
      opt.first_sample_index = static_cast<uint64_t>(i) * 2;
      alone[i]->Poison(streams[0]);
      ASSERT_TRUE(augs[0]->Run(din.In(), alone[i]->Out(), opt, streams[0]).ok());
      ASSERT_EQ(cudaStreamSynchronize(streams[0]), cudaSuccess);
      EXPECT_EQ(FirstDifference(alone[i]->Bytes(), together[i]->Bytes(), *lay), "")
          << (chain ? "DA5 (generic chain)" : "default (fused)") << ", batch " << i << ", seed " << seed0;
    }
    for (cudaStream_t s : streams) cudaStreamDestroy(s);
  }
}

// What the kernels do not cover is UNIMPLEMENTED naming the transform (answered without a GPU).
TEST(CudaEngine, CoverageErrors) {
  EXPECT_EQ(*ParseCudaOrdinal("cpu"), -1);
  EXPECT_EQ(*ParseCudaOrdinal("cuda"), 0);
  EXPECT_EQ(*ParseCudaOrdinal("cuda:3"), 3);
  EXPECT_EQ(ParseCudaOrdinal("gpu0").status().code(), absl::StatusCode::kInvalidArgument);
  TrainerConfig tc;
  tc.patch_size = {16, 16, 16};
  tc.regions = std::vector<std::vector<int64_t>>{{1, 2}, {2}};
  auto regions = NnunetDefaultPipeline(tc);
  ASSERT_TRUE(regions.ok());
  // Covered by the generic chain (cuda/chain.h): created with a GPU, NOT_FOUND (no device) without.
  const absl::StatusCode covered = HaveGpu() ? absl::StatusCode::kOk : absl::StatusCode::kNotFound;
  auto r = CudaAugmenter::Create(*regions, 0);
  EXPECT_EQ(r.status().code(), covered) << r.status();

  TrainerConfig t2;
  t2.patch_size = {8, 64, 64};  // max/min > 3: dummy-2D
  auto d2 = NnunetDefaultPipeline(t2);
  ASSERT_TRUE(d2.ok());
  r = CudaAugmenter::Create(*d2, 0);
  EXPECT_EQ(r.status().code(), covered) << r.status();  // the chain's generic spatial kernel

  Case cs;
  TrainerConfig t3;
  t3.patch_size = {16, 600, 600};  // elastic fields are limited to axes <= 512
  auto big = NnunetDefaultPipeline(t3);
  ASSERT_TRUE(big.ok());
  SpatialConfig c = static_cast<const SpatialTransform&>(*big->transforms[0].transform).config();
  c.p_elastic_deform = 0.2;
  c.dummy_2d = false;
  c.patch_size = {16, 600, 600};
  big->transforms[0].transform = *SpatialTransform::Create(c);
  r = CudaAugmenter::Create(*big, 0);
  EXPECT_EQ(r.status().code(), covered) << r.status();  // the chain's generic spatial kernel (host-made field)
  c.bg_style_seg_sampling = true;  // the generic spatial kernel's threshold vote
  big->transforms[0].transform = *SpatialTransform::Create(c);
  r = CudaAugmenter::Create(*big, 0);
  EXPECT_EQ(r.status().code(), covered) << r.status();

  auto da5 = NnunetDa5Pipeline(tc);
  ASSERT_TRUE(da5.ok()) << da5.status();
  r = CudaAugmenter::Create(*da5, 0);
  EXPECT_EQ(r.status().code(), covered) << r.status();

  PipelineSpec order = MakeSpec(cs);
  std::swap(order.transforms[1], order.transforms[2]);  // blur before noise: the chain
  r = CudaAugmenter::Create(order, 0);
  EXPECT_EQ(r.status().code(), covered) << r.status();
  std::swap(order.transforms[0], order.transforms[1]);  // spatial second: the chain
  r = CudaAugmenter::Create(order, 0);
  EXPECT_EQ(r.status().code(), covered) << r.status();
  std::swap(order.transforms[0], order.transforms.back());  // downsample_seg_for_ds first: refused (both engines)
  r = CudaAugmenter::Create(order, 0);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("uses the labels after downsample_seg_for_ds"), std::string::npos)
      << r.status();
  // DS / regions with p < 1 change the layout of some samples only: INVALID_ARGUMENT, as on the CPU engine.
  PipelineSpec skip = *regions;
  for (TransformSpec& ts : skip.transforms)
    if (ts.kind == TransformKind::kConvertSegmentationToRegions) ts.apply_probability = 0.9;
  r = CudaAugmenter::Create(skip, 0);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("changes the output layout: apply_probability must be 1"), std::string::npos)
      << r.status();

  if (!HaveGpu()) {
    r = CudaAugmenter::Create(MakeSpec(cs), 0);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  }
}

// ms per batch of the engine path (host draws + parameter upload + kernels, device buffers, one stream), to compare
// with the raw kernel benchmark (bench/cuda_pipeline_bench), eager launches vs CUDA graphs. Median of 30 after a
// warm-up pass over the same 30 parameter sets.
TEST(CudaEngine, Timing) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  for (bool all_on : {true, false}) {
    for (int B : {2, 8}) {
      for (bool use_graphs : {false, true}) {
        std::mt19937_64 g(1);
        Case cs = Make("timing", {128, 128, 128}, B, 1, 4, all_on);
        const PipelineSpec spec = MakeSpec(cs);
        const Inputs x = MakeInputs(cs, spec.input_patch_size, g);
        auto aug = CudaAugmenter::Create(spec, 0);
        ASSERT_TRUE(aug.ok()) << aug.status();
        (*aug)->set_graphs_enabled(use_graphs);
        auto lay = (*aug)->OutputLayout(x.ishape, DType::kFloat32);
        ASSERT_TRUE(lay.ok());
        const DeviceInputs din(x);
        const DeviceOutputs dout(*lay);
        cudaStream_t s;
        cudaStreamCreate(&s);
        const CudaBatchInput in = din.In();
        const CudaBatchOutput out = dout.Out();
        RunOptions opt;
        std::vector<double> ms;
        // Two passes over the same 30 parameter sets (fresh parameters every batch); only the second is timed, so
        // with graphs every stage mask has been captured and the numbers are replays.
        for (int it = 0; it < 60; ++it) {
          opt.first_sample_index = static_cast<uint64_t>(it % 30) * B;
          const auto t0 = std::chrono::steady_clock::now();
          ASSERT_TRUE((*aug)->Run(in, out, opt, s).ok());
          ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
          const auto t1 = std::chrono::steady_clock::now();
          if (it >= 30) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        }
        // Pipelined: enqueue 30 batches back to back, one sync (host draws overlap the previous batch's kernels).
        const auto p0 = std::chrono::steady_clock::now();
        for (int it = 0; it < 30; ++it) {
          opt.first_sample_index = static_cast<uint64_t>(it) * B;
          ASSERT_TRUE((*aug)->Run(in, out, opt, s).ok());
        }
        ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
        const double pipelined =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - p0).count() / 30;
        std::sort(ms.begin(), ms.end());
        const CudaGraphCounters gc = (*aug)->graph_counters();
        std::printf(
            "[engine timing] %s B=%d C=1 205^3->128^3-ish (S=%s) %s: sync %.3f ms/batch (median), pipelined %.3f "
            "ms/batch, %.0f samples/s (graph replays %lld of %lld batches)\n",
            all_on ? "all-on" : "default-p", B, ShapeString(spec.input_patch_size).c_str(),
            use_graphs ? "graphs" : "eager", ms[ms.size() / 2], pipelined, B / pipelined * 1000,
            static_cast<long long>(gc.replays), static_cast<long long>(gc.replays + gc.eager));
        cudaStreamDestroy(s);
      }
    }
  }
}

}  // namespace
}  // namespace augmentd
