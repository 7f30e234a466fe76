// GPU tests of the CUDA kernel layer against an ATen (CPU, float32) re-statement of bgv2 0.3.5, computed
// from the same per-sample parameters: grid_sample per label with fp16 rounding, reflect-padded conv3d
// blur, nearest-exact / trilinear interpolate, gamma with retained (unbiased) stats, flips, DS picks.
// Fresh random inputs every run (the seed is printed), poisoned outputs, B = 1, 2, 8, odd sizes,
// 1 and 4 channels, 2 and 8 labels. Skipped when no GPU is present. Label gpu.
#include "augment/kernels/cuda/pipeline_cuda.h"

#include <ATen/ATen.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "augment/rng.h"
#include "augment/testing/label_tie.h"

namespace augmentd::cuda {
namespace {

bool HaveGpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define CUDA_OK(expr)                                                      \
  do {                                                                     \
    const cudaError_t e_ = (expr);                                         \
    ASSERT_EQ(e_, cudaSuccess) << #expr << ": " << cudaGetErrorString(e_); \
  } while (0)

struct Probs {
  double rot = 0.2, scale = 0.2, noise = 0.1, blur = 0.2, blur_ch = 0.5, bright = 0.15, contrast = 0.15, lowres = 0.25,
         lowres_ch = 0.5, g0 = 0.1, g1 = 0.3, mirror = 0.5, mask_ch = 0.0;
  double blur_sigma_hi = 1.0;  // blur sigma ~ U(0.5, hi) per axis (2.75: kernel radius up to kMaxBlurRadius)
  double retain = 1.0;         // probability that a gamma slot retains the statistics
  bool g0_invert = true, g1_invert = false;  // nnU-Net's slots: the inverted one first
  bool border_m1 = true;
  static Probs AllOn() {
    Probs p;
    p.rot = p.scale = p.noise = p.blur = p.blur_ch = p.bright = p.contrast = p.lowres = p.lowres_ch = p.g0 = p.g1 = 1.0;
    p.mirror = 0.5;
    p.mask_ch = 0.5;
    return p;
  }
  static Probs None() {
    Probs p;
    p.rot = p.scale = p.noise = p.blur = p.bright = p.contrast = p.lowres = p.g0 = p.g1 = 0.0;
    return p;
  }
};

struct Case {
  std::string name;
  int B = 2, C = 1;
  int S[3] = {37, 45, 41};
  int P[3] = {25, 31, 28};
  int labels = 4;
  Probs probs;
  OutDType dtype = OutDType::kFloat32;
  float image_mean = 0.3f, image_std = 1.f;  // the input image is N(mean, std²)
  uint32_t drop_stages = 0;                   // hints left out of ActiveStages' mask (kStageGamma1Alone: same values)
  std::function<void(std::vector<SampleParams>&)> edit;  // applied to the drawn parameters (a fixed pattern)
};

double BGContrast(std::mt19937_64& g, double lo, double hi) {
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  if (u01(g) < 0.5 && lo < 1.0) return lo + (1.0 - lo) * u01(g);
  const double a = std::max(lo, 1.0);
  return a + (hi - a) * u01(g);
}

void Matmul3(const double* a, const double* b, double* out) {
  double t[9];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) t[3 * i + j] = a[3 * i] * b[j] + a[3 * i + 1] * b[3 + j] + a[3 * i + 2] * b[6 + j];
  std::memcpy(out, t, sizeof(t));
}

SampleParams DrawParams(std::mt19937_64& g, const Case& cs, uint64_t seed, uint64_t index) {
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  const Probs& pr = cs.probs;
  SampleParams p;
  const bool rot = u01(g) < pr.rot, scale = u01(g) < pr.scale;
  double A[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  if (rot) {
    const double a0 = -0.5236 + 1.0472 * u01(g), a1 = -0.5236 + 1.0472 * u01(g), a2 = -0.5236 + 1.0472 * u01(g);
    const double rx[9] = {1, 0, 0, 0, std::cos(a0), -std::sin(a0), 0, std::sin(a0), std::cos(a0)};
    const double ry[9] = {std::cos(a1), 0, std::sin(a1), 0, 1, 0, -std::sin(a1), 0, std::cos(a1)};
    const double rz[9] = {std::cos(a2), -std::sin(a2), 0, std::sin(a2), std::cos(a2), 0, 0, 0, 1};
    Matmul3(rz, ry, A);
    Matmul3(A, rx, A);
  }
  if (scale) {
    const double s = 0.7 + 0.7 * u01(g);
    for (int i = 0; i < 9; ++i) A[i] *= s;
  }
  for (int i = 0; i < 9; ++i) p.matrix[i] = static_cast<float>(A[i]);
  p.use_crop = !(rot || scale);
  p.mirror_mask = 0;
  for (int d = 0; d < 3; ++d)
    if (u01(g) < pr.mirror) p.mirror_mask |= 1 << d;
  p.seg_border_minus_one = pr.border_m1 ? 1 : 0;
  p.seed = seed;
  p.sample_index = index;
  p.noise_transform_index = 3;
  if (u01(g) < pr.noise) p.noise_sigma = static_cast<float>(0.1 * u01(g) + 1e-3);
  const bool blur = u01(g) < pr.blur, bright = u01(g) < pr.bright, contrast = u01(g) < pr.contrast,
             lowres = u01(g) < pr.lowres, g0 = u01(g) < pr.g0, g1 = u01(g) < pr.g1;
  for (int c = 0; c < cs.C; ++c) {
    ChannelParams& cp = p.ch[c];
    if (blur && u01(g) < pr.blur_ch)
      for (int d = 0; d < 3; ++d) cp.blur_sigma[d] = static_cast<float>(0.5 + (pr.blur_sigma_hi - 0.5) * u01(g));
    if (bright) cp.brightness = static_cast<float>(BGContrast(g, 0.75, 1.25));
    if (contrast) cp.contrast = static_cast<float>(BGContrast(g, 0.75, 1.25));
    if (lowres && u01(g) < pr.lowres_ch) {
      const double s = 0.5 + 0.5 * u01(g);
      for (int d = 0; d < 3; ++d) cp.lowres_shape[d] = std::max(1, RoundHalfEven(cs.P[d] * s));
    }
    if (g0) {
      cp.gamma[0] = static_cast<float>(BGContrast(g, 0.7, 1.5));
      cp.gamma_invert[0] = pr.g0_invert ? 1 : 0;
    }
    if (g1) {
      cp.gamma[1] = static_cast<float>(BGContrast(g, 0.7, 1.5));
      cp.gamma_invert[1] = pr.g1_invert ? 1 : 0;
    }
    for (int k = 0; k < 2; ++k) cp.gamma_retain[k] = u01(g) < pr.retain ? 1 : 0;
    cp.mask = u01(g) < pr.mask_ch ? 1 : 0;
  }
  return p;
}

// ----- reference (ATen CPU, float32, bgv2 order) -----

at::Tensor Grid(const SampleParams& p, const int* S, const int* P) {
  at::Tensor grid = at::empty({1, P[0], P[1], P[2], 3}, at::kFloat);
  float* gp = grid.data_ptr<float>();
  const float hp[3] = {0.5f * (P[0] - 1), 0.5f * (P[1] - 1), 0.5f * (P[2] - 1)};
  int64_t i = 0;
  for (int j0 = 0; j0 < P[0]; ++j0)
    for (int j1 = 0; j1 < P[1]; ++j1)
      for (int j2 = 0; j2 < P[2]; ++j2, ++i) {
        const float g[3] = {static_cast<float>(j0) - hp[0], static_cast<float>(j1) - hp[1],
                            static_cast<float>(j2) - hp[2]};
        float n[3];
        for (int d = 0; d < 3; ++d) {
          float a = p.matrix[3 * d] * g[0];
          const float b = p.matrix[3 * d + 1] * g[1];
          const float c = p.matrix[3 * d + 2] * g[2];
          a = a + b;
          a = a + c;
          a = a + p.shift[d];
          n[d] = a / (static_cast<float>(S[d]) * 0.5f);
        }
        gp[3 * i + 0] = n[2];
        gp[3 * i + 1] = n[1];
        gp[3 * i + 2] = n[0];
      }
  return grid;
}

// bgv2 out-of-bounds mask: flipped grid entries against sizes in array order (the swapped quirk).
at::Tensor OobMask(const at::Tensor& grid, const int* S) {
  at::Tensor m = at::zeros(grid.sizes().slice(0, 4), at::kBool);
  for (int i = 0; i < 3; ++i) {
    const float lo = static_cast<float>(-1.0 + 1.0 / S[i]), hi = static_cast<float>(1.0 - 1.0 / S[i]);
    at::Tensor gi = grid.select(4, i);
    m = m | (gi < lo) | (gi > hi);
  }
  return m[0];
}

struct RefOut {
  at::Tensor image;            // (C, P) float
  at::Tensor seg;              // (P) int16
  at::Tensor mask_neg;         // (P) bool (seg < 0 after mirroring)
  std::vector<at::Tensor> ds;  // (Q) int16
};

at::Tensor Blur1d(const at::Tensor& x, double sigma, int axis) {
  const int k = BlurKernelSize(sigma), r = (k - 1) / 2;
  std::vector<double> w(k);
  double sum = 0;
  for (int t = 0; t < k; ++t) {
    const double z = (t - r) / sigma;
    w[t] = std::exp(-0.5 * z * z);
    sum += w[t];
  }
  at::Tensor wt = at::empty({k}, at::kFloat);
  for (int t = 0; t < k; ++t) wt.data_ptr<float>()[t] = static_cast<float>(w[t] / sum);
  std::vector<int64_t> shape = {1, 1, 1, 1, 1};
  shape[2 + axis] = k;
  std::vector<int64_t> pad(6, 0);
  pad[2 * (2 - axis)] = r;
  pad[2 * (2 - axis) + 1] = r;
  at::Tensor xp = at::pad(x.view({1, 1, x.size(0), x.size(1), x.size(2)}), pad, "reflect");
  return at::conv3d(xp, wt.view(shape))[0][0];
}

at::Tensor Gamma(at::Tensor x, float g, bool invert, bool retain) {
  if (invert) x = -x;
  float mu = 0, sd = 0;
  if (retain) {
    mu = x.mean().item<float>();
    sd = x.std().item<float>();
  }
  const float mn = x.min().item<float>(), r = x.max().item<float>() - mn;
  x = ((x - mn) / std::max(r, 1e-7f)).pow(g) * r + mn;
  if (retain) {
    const float m2 = x.mean().item<float>(), s2 = x.std().item<float>();
    x = (x - m2) * sd / std::max(s2, 1e-7f) + mu;
  }
  if (invert) x = -x;
  return x;
}

RefOut Reference(const at::Tensor& img, const at::Tensor& seg, const SampleParams& p, const BatchShape& sh) {
  const int* S = sh.in;
  const int* P = sh.out;
  const int C = sh.channels;
  at::Tensor x, s;
  if (p.use_crop) {
    // Centre crop; where the patch is larger than the input, the outside is image 0 and seg −1 (border_m1) or 0.
    int st[3];
    std::vector<int64_t> pad(6, 0);  // constant_pad_nd: last axis first, (before, after) each
    for (int d = 0; d < 3; ++d) {
      st[d] = S[d] / 2 - P[d] / 2;
      pad[2 * (2 - d)] = std::max(0, -st[d]);
      pad[2 * (2 - d) + 1] = std::max(0, st[d] + P[d] - S[d]);
      st[d] += static_cast<int>(pad[2 * (2 - d)]);
    }
    const at::Tensor ip = at::constant_pad_nd(img, pad, 0.0);
    const at::Tensor sp = at::constant_pad_nd(seg[0], pad, p.seg_border_minus_one ? -1.0 : 0.0);
    x = ip.slice(1, st[0], st[0] + P[0]).slice(2, st[1], st[1] + P[1]).slice(3, st[2], st[2] + P[2]).clone();
    s = sp.slice(0, st[0], st[0] + P[0]).slice(1, st[1], st[1] + P[1]).slice(2, st[2], st[2] + P[2]).clone();
  } else {
    at::Tensor grid = Grid(p, S, P);
    x = at::grid_sampler_3d(img.unsqueeze(0), grid, 0, 0, false)[0];
    at::Tensor labels = std::get<0>(at::_unique(seg, /*sorted=*/true));
    auto lab = labels.accessor<int16_t, 1>();
    at::Tensor result = at::full({P[0], P[1], P[2]}, static_cast<int64_t>(lab[0]), at::kShort);
    at::Tensor best;
    for (int64_t i = 0; i < labels.size(0); ++i) {
      at::Tensor oh = (seg == lab[i]).to(at::kFloat).mul(1000.0f).unsqueeze(0);  // (1,1,S)
      at::Tensor v = at::grid_sampler_3d(oh, grid, 0, 0, false)[0][0].to(at::kHalf).to(at::kFloat);
      if (i == 0) {
        best = v;
      } else {
        at::Tensor m = v > best;
        result.masked_fill_(m, static_cast<int64_t>(lab[i]));
        best = at::maximum(best, v);
      }
    }
    if (p.seg_border_minus_one) result.masked_fill_(OobMask(grid, S), -1);
    s = result;
  }
  // noise
  if (p.noise_sigma != 0.f) {
    for (int c = 0; c < C; ++c) {
      const StreamKey key = MakeStreamKey(p.seed, p.sample_index, p.noise_transform_index, 1u + static_cast<uint32_t>(c));
      at::Tensor xc = x[c].contiguous();
      float* d = xc.data_ptr<float>();
      for (int64_t j = 0; j < xc.numel(); ++j) d[j] = d[j] + p.noise_sigma * NormalAt(key, j);
      x[c].copy_(xc);
    }
  }
  std::vector<at::Tensor> ch;
  for (int c = 0; c < C; ++c) {
    const ChannelParams& cp = p.ch[c];
    at::Tensor v = x[c].contiguous();
    if (cp.blur_sigma[0] != 0.f)
      for (int a = 0; a < 3; ++a) v = Blur1d(v, cp.blur_sigma[a], a);
    v = v * cp.brightness;
    if (cp.contrast != 0.f) {
      const float mean = v.mean().item<float>(), mn = v.min().item<float>(), mx = v.max().item<float>();
      v = (((v - mean) * cp.contrast) + mean).clamp(mn, mx);
    }
    if (cp.lowres_shape[0] != 0) {
      at::Tensor d = at::_upsample_nearest_exact3d(v.view({1, 1, P[0], P[1], P[2]}),
                                                   {cp.lowres_shape[0], cp.lowres_shape[1], cp.lowres_shape[2]});
      v = at::upsample_trilinear3d(d, {P[0], P[1], P[2]}, false)[0][0];
    }
    for (int k = 0; k < 2; ++k)
      if (cp.gamma[k] != 0.f) v = Gamma(v, cp.gamma[k], cp.gamma_invert[k], cp.gamma_retain[k]);
    ch.push_back(v);
  }
  x = at::stack(ch);
  std::vector<int64_t> flip_img, flip_seg;
  for (int d = 0; d < 3; ++d)
    if (p.mirror_mask & (1 << d)) {
      flip_img.push_back(d + 1);
      flip_seg.push_back(d);
    }
  if (!flip_img.empty()) {
    x = at::flip(x, flip_img);
    s = at::flip(s, flip_seg);
  }
  RefOut r;
  r.mask_neg = s < 0;
  for (int c = 0; c < C; ++c)
    if (p.ch[c].mask) x[c].masked_fill_(r.mask_neg, 0.f);
  if (sh.remove_minus_one) s = s.masked_fill(s == -1, 0);
  r.image = x.contiguous();
  r.seg = s.contiguous();
  for (int l = 0; l < sh.num_ds; ++l) {
    r.ds.push_back(at::_upsample_nearest_exact3d(s.to(at::kFloat).view({1, 1, P[0], P[1], P[2]}),
                                                 {sh.ds[l][0], sh.ds[l][1], sh.ds[l][2]})[0][0]
                       .to(at::kShort)
                       .contiguous());
  }
  return r;
}

// Is a label mismatch at pre-mirror voxel j an fp16 near-tie (or on the out-of-bounds threshold)?
bool ExplainedByTie(const SampleParams& p, const int16_t* seg, const int* S, const int* P, int j0, int j1, int j2) {
  const double g[3] = {j0 - 0.5 * (P[0] - 1), j1 - 0.5 * (P[1] - 1), j2 - 0.5 * (P[2] - 1)};
  double u[3];
  for (int d = 0; d < 3; ++d)
    u[d] = p.matrix[3 * d] * g[0] + p.matrix[3 * d + 1] * g[1] + p.matrix[3 * d + 2] * g[2] + p.shift[d];
  return augmentd::testing::LabelVoteNearTie(seg, S, u);
}

float HalfBitsToFloat(uint16_t h, OutDType dt) {
  if (dt == OutDType::kBFloat16) {
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  at::Tensor t = at::empty({1}, at::kHalf);
  std::memcpy(t.data_ptr(), &h, 2);
  return t.to(at::kFloat).item<float>();
}

void RunCase(const Case& cs) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  std::random_device rd;
  const uint64_t seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  std::printf("[%s] seed %llu\n", cs.name.c_str(), static_cast<unsigned long long>(seed));
  std::mt19937_64 g(seed);
  at::manual_seed(static_cast<int64_t>(seed & 0x7fffffff));

  BatchShape sh;
  sh.batch = cs.B;
  sh.channels = cs.C;
  for (int d = 0; d < 3; ++d) {
    sh.in[d] = cs.S[d];
    sh.out[d] = cs.P[d];
  }
  sh.out_dtype = cs.dtype;
  for (double s : {0.5, 0.25, 0.125}) {
    int q[3];
    for (int d = 0; d < 3; ++d) q[d] = std::max(1, RoundHalfEven(cs.P[d] * s));
    std::memcpy(sh.ds[sh.num_ds++], q, sizeof(q));
  }

  // Inputs: image N(0.3, 1) unless the case says otherwise (never zeros); blobby labels (coarse random field,
  // nearest-upsampled) with a -1 slab in some samples.
  const int64_t out_n = int64_t{cs.P[0]} * cs.P[1] * cs.P[2];
  at::Tensor img = at::randn({cs.B, cs.C, cs.S[0], cs.S[1], cs.S[2]}, at::kFloat) * cs.image_std + cs.image_mean;
  at::Tensor coarse =
      at::randint(0, cs.labels, {cs.B, 1, (cs.S[0] + 3) / 4, (cs.S[1] + 3) / 4, (cs.S[2] + 3) / 4}, at::kFloat);
  at::Tensor seg = at::upsample_nearest3d(coarse, {cs.S[0], cs.S[1], cs.S[2]}).to(at::kShort).contiguous();
  for (int b = 0; b < cs.B; b += 2) seg[b].slice(1, 0, 3).fill_(-1);

  std::vector<SampleParams> params(cs.B);
  for (int b = 0; b < cs.B; ++b) params[b] = DrawParams(g, cs, seed, 1000 + b);
  if (cs.edit) cs.edit(params);
  const uint32_t stages = ActiveStages(params.data(), sh) & ~cs.drop_stages;

  const size_t img_bytes = img.numel() * 4, seg_bytes = seg.numel() * 2;
  const size_t el = cs.dtype == OutDType::kFloat32 ? 4 : 2;
  const size_t out_img_bytes = static_cast<size_t>(cs.B) * cs.C * out_n * el;
  const size_t out_seg_bytes = static_cast<size_t>(cs.B) * out_n * 2;
  void *d_img, *d_seg, *d_out, *d_oseg, *d_ws, *d_params;
  std::vector<void*> d_ds(sh.num_ds);
  const size_t ws_bytes = WorkspaceBytes(sh);
  ASSERT_GT(ws_bytes, 0u);
  CUDA_OK(cudaMalloc(&d_img, img_bytes));
  CUDA_OK(cudaMalloc(&d_seg, seg_bytes));
  CUDA_OK(cudaMalloc(&d_out, out_img_bytes));
  CUDA_OK(cudaMalloc(&d_oseg, out_seg_bytes));
  CUDA_OK(cudaMalloc(&d_ws, ws_bytes));
  CUDA_OK(cudaMalloc(&d_params, sizeof(SampleParams) * cs.B));
  PipelineIO io;
  io.image = static_cast<const float*>(d_img);
  io.seg = static_cast<const int16_t*>(d_seg);
  io.out_image = d_out;
  io.out_seg = static_cast<int16_t*>(d_oseg);
  std::vector<size_t> ds_n(sh.num_ds);
  for (int l = 0; l < sh.num_ds; ++l) {
    ds_n[l] = static_cast<size_t>(sh.ds[l][0]) * sh.ds[l][1] * sh.ds[l][2];
    CUDA_OK(cudaMalloc(&d_ds[l], cs.B * ds_n[l] * 2));
    CUDA_OK(cudaMemset(d_ds[l], 0x7f, cs.B * ds_n[l] * 2));
    io.out_ds[l] = static_cast<int16_t*>(d_ds[l]);
  }
  CUDA_OK(cudaMemcpy(d_img, img.data_ptr(), img_bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_seg, seg.data_ptr(), seg_bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_params, params.data(), sizeof(SampleParams) * cs.B, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(d_out, 0x7f, out_img_bytes));
  CUDA_OK(cudaMemset(d_oseg, 0x7f, out_seg_bytes));
  CUDA_OK(cudaMemset(d_ws, 0x7f, ws_bytes));  // poison scratch too, then arm the counters
  CUDA_OK(InitWorkspace(sh, d_ws, nullptr));
  // Run twice: the second run checks that the reduction counters re-arm themselves.
  for (int rep = 0; rep < 2; ++rep) {
    CUDA_OK(RunPipeline(sh, static_cast<const SampleParams*>(d_params), stages, io, d_ws, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
  }

  std::vector<uint8_t> out_img(out_img_bytes);
  std::vector<int16_t> out_seg(cs.B * out_n);
  CUDA_OK(cudaMemcpy(out_img.data(), d_out, out_img_bytes, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(out_seg.data(), d_oseg, out_seg_bytes, cudaMemcpyDeviceToHost));
  std::vector<std::vector<int16_t>> out_ds(sh.num_ds);
  for (int l = 0; l < sh.num_ds; ++l) {
    out_ds[l].resize(cs.B * ds_n[l]);
    CUDA_OK(cudaMemcpy(out_ds[l].data(), d_ds[l], cs.B * ds_n[l] * 2, cudaMemcpyDeviceToHost));
  }
  // Seg-only launch (pipeline_cuda.h; the generic chain's later seg channels): where nothing follows the spatial
  // kernel, the same parameters without the image give the same seg and DS targets, bit for bit (same device, same
  // kernel arithmetic), and leave the image output alone.
  if ((stages & kStagesAfterSpatial) == 0) {
    PipelineIO so;
    void* d_oseg2;
    CUDA_OK(cudaMalloc(&d_oseg2, out_seg_bytes));
    CUDA_OK(cudaMemset(d_oseg2, 0x7f, out_seg_bytes));
    so.seg = io.seg;
    so.out_seg = static_cast<int16_t*>(d_oseg2);
    std::vector<void*> d_ds2(sh.num_ds);
    for (int l = 0; l < sh.num_ds; ++l) {
      CUDA_OK(cudaMalloc(&d_ds2[l], cs.B * ds_n[l] * 2));
      CUDA_OK(cudaMemset(d_ds2[l], 0x7f, cs.B * ds_n[l] * 2));
      so.out_ds[l] = static_cast<int16_t*>(d_ds2[l]);
    }
    CUDA_OK(cudaMemset(d_out, 0x7f, out_img_bytes));
    CUDA_OK(RunPipeline(sh, static_cast<const SampleParams*>(d_params), stages, so, d_ws, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<int16_t> seg2(cs.B * out_n);
    CUDA_OK(cudaMemcpy(seg2.data(), d_oseg2, out_seg_bytes, cudaMemcpyDeviceToHost));
    EXPECT_EQ(seg2, out_seg) << cs.name << ": seg-only seg";
    for (int l = 0; l < sh.num_ds; ++l) {
      std::vector<int16_t> ds2(cs.B * ds_n[l]);
      CUDA_OK(cudaMemcpy(ds2.data(), d_ds2[l], cs.B * ds_n[l] * 2, cudaMemcpyDeviceToHost));
      EXPECT_EQ(ds2, out_ds[l]) << cs.name << ": seg-only DS level " << l;
      CUDA_OK(cudaFree(d_ds2[l]));
    }
    std::vector<uint8_t> untouched(out_img_bytes);
    CUDA_OK(cudaMemcpy(untouched.data(), d_out, out_img_bytes, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(std::all_of(untouched.begin(), untouched.end(), [](uint8_t v) { return v == 0x7f; }))
        << cs.name << ": a seg-only launch wrote the image output";
    CUDA_OK(cudaFree(d_oseg2));
  }
  // The same batch with `other` stages (float32 output), whose statistics differ from this run's by rounding only:
  // every slice's image within 1e-5 of its range of this run's, plus 32 · 2^-23 of its largest magnitude (32-64 ulps).
  // A gamma slot's input is rounded at its magnitude, which the power weighs by up to 1/γ near the slot's minimum, and
  // retain-stats spreads a statistic's difference over the slice: on an image far from 0 (gamma-offset, |x| ≈ 100,
  // range ≈ 7) that term alone exceeded 1e-5 of the range on one seed (session 22). Measured since (H200, 20 repeats
  // of gamma-offset and one suite run): at most 2.7 units of 2^-23 · magnitude. On a centred image the bound stays
  // ≈ 8 times tighter than the reference's below, on gamma-offset's ≈ 1.5 times. Prints the largest difference in
  // those units.
  const auto expect_close_with = [&](uint32_t other, const char* what) {
    double worst_units = 0.0;
    CUDA_OK(RunPipeline(sh, static_cast<const SampleParams*>(d_params), other, io, d_ws, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<float> alt(static_cast<size_t>(cs.B) * cs.C * out_n), here(alt.size());
    CUDA_OK(cudaMemcpy(alt.data(), d_out, out_img_bytes, cudaMemcpyDeviceToHost));
    std::memcpy(here.data(), out_img.data(), out_img_bytes);
    for (int64_t slice = 0; slice < int64_t{cs.B} * cs.C; ++slice) {
      const float* a = alt.data() + slice * out_n;
      const float* t = here.data() + slice * out_n;
      const auto [mn, mx] = std::minmax_element(a, a + out_n);
      const double magnitude = std::max(std::fabs(static_cast<double>(*mn)), std::fabs(static_cast<double>(*mx)));
      const double tol = 1e-5 * std::max(1e-6, static_cast<double>(*mx - *mn)) + 32 * 0x1p-23 * magnitude;
      int64_t bad = 0;
      double worst = 0.0;
      for (int64_t o = 0; o < out_n; ++o) {
        const double e = std::fabs(static_cast<double>(t[o]) - a[o]);
        bad += e <= tol ? 0 : 1;
        worst = std::max(worst, e);
      }
      EXPECT_EQ(bad, 0) << cs.name << ": slice " << slice << ", " << what << " (largest difference " << worst
                        << ", tolerance " << tol << ", range " << (*mx - *mn) << ")";
      worst_units = std::max(worst_units, worst / std::max(1e-30, 0x1p-23 * magnitude));
    }
    std::printf("[%s] %s: largest difference %.3g × 2^-23 of the magnitude\n", cs.name.c_str(), what, worst_units);
  };
  // Gamma slot 1's statistics from slot 0's pass (intensity.cu FusedY1) against the two passes run apart
  // (kStageGamma1Alone forces that); degenerate slices fall back to the same pass.
  const bool fused = (stages & kStageGamma0) && (stages & kStageGamma1) && !(stages & kStageGamma1Alone);
  if (fused && cs.dtype == OutDType::kFloat32) {
    expect_close_with(stages | kStageGamma1Alone, "fused gamma statistics against the passes apart");
  }
  // Slice shares (kStageSliceIdle: ActiveStages sets it for 3 or more slices) against per-slice blocks: the same
  // work, the statistics' partial sums cut differently (intensity.cu, common.cuh TakeSliceShare).
  if ((stages & kStageSliceIdle) && cs.dtype == OutDType::kFloat32) {
    expect_close_with(stages & ~kStageSliceIdle, "slice shares against per-slice blocks");
  }

  // A batch of centre crops alone (no kStageResample) runs the spatial kernel's crops build (spatial.cu kCrops); the
  // resampling build crops it too when the mask says some sample may resample: the same bytes (same device, same
  // operations in the same order).
  if (!(stages & kStageResample)) {
    CUDA_OK(RunPipeline(sh, static_cast<const SampleParams*>(d_params), stages | kStageResample, io, d_ws, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<uint8_t> img2(out_img_bytes);
    std::vector<int16_t> seg2(cs.B * out_n);
    CUDA_OK(cudaMemcpy(img2.data(), d_out, out_img_bytes, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(seg2.data(), d_oseg, out_seg_bytes, cudaMemcpyDeviceToHost));
    EXPECT_EQ(img2, out_img) << cs.name << ": crops build against the resampling build, image";
    EXPECT_EQ(seg2, out_seg) << cs.name << ": crops build against the resampling build, seg";
    for (int l = 0; l < sh.num_ds; ++l) {
      std::vector<int16_t> ds2(cs.B * ds_n[l]);
      CUDA_OK(cudaMemcpy(ds2.data(), d_ds[l], cs.B * ds_n[l] * 2, cudaMemcpyDeviceToHost));
      EXPECT_EQ(ds2, out_ds[l]) << cs.name << ": crops build against the resampling build, DS level " << l;
    }
  }

  int64_t seg_mismatch = 0, unexplained = 0, ds_mismatch = 0, ds_self_mismatch = 0, float_bad = 0;
  double max_rel = 0.0;
  for (int b = 0; b < cs.B; ++b) {
    const RefOut ref = Reference(img[b], seg[b], params[b], sh);
    const int16_t* rseg = ref.seg.data_ptr<int16_t>();
    const int16_t* kseg = out_seg.data() + b * out_n;
    const int16_t* in_seg = seg[b][0].data_ptr<int16_t>();
    std::vector<uint8_t> differ(out_n, 0);
    for (int64_t o = 0; o < out_n; ++o) {
      ASSERT_NE(kseg[o], 0x7f7f) << "seg voxel not written";
      if (kseg[o] == rseg[o]) continue;
      ++seg_mismatch;
      differ[o] = 1;
      const int o2 = o % cs.P[2], o1 = (o / cs.P[2]) % cs.P[1], o0 = o / (cs.P[1] * cs.P[2]);
      const int mm = params[b].mirror_mask;
      const int j0 = (mm & 1) ? cs.P[0] - 1 - o0 : o0, j1 = (mm & 2) ? cs.P[1] - 1 - o1 : o1,
                j2 = (mm & 4) ? cs.P[2] - 1 - o2 : o2;
      if (params[b].use_crop || !ExplainedByTie(params[b], in_seg, cs.S, cs.P, j0, j1, j2)) {
        if (unexplained < 5)
          std::printf("  b=%d voxel (%d,%d,%d): kernel %d ref %d\n", b, o0, o1, o2, kseg[o], rseg[o]);
        ++unexplained;
      }
    }
    for (int l = 0; l < sh.num_ds; ++l) {
      const int16_t* rd = ref.ds[l].data_ptr<int16_t>();
      const int16_t* kd = out_ds[l].data() + b * ds_n[l];
      for (size_t i = 0; i < ds_n[l]; ++i) {
        ASSERT_NE(kd[i], 0x7f7f) << "DS voxel not written";
        ds_mismatch += kd[i] != rd[i];
        const int q2 = i % sh.ds[l][2], q1 = (i / sh.ds[l][2]) % sh.ds[l][1], q0 = i / (sh.ds[l][1] * sh.ds[l][2]);
        // Self-consistency: DS must be the nearest-exact pick of the kernel's own full-resolution seg.
        auto src = [&](int q, int d) {
          const float sc = static_cast<float>(cs.P[d]) / static_cast<float>(sh.ds[l][d]);
          return std::min(static_cast<int>(std::floor(static_cast<float>((q + 0.5) * static_cast<double>(sc)))),
                          cs.P[d] - 1);
        };
        const int64_t so = (int64_t{src(q0, 0)} * cs.P[1] + src(q1, 1)) * cs.P[2] + src(q2, 2);
        ds_self_mismatch += kd[i] != kseg[so];
      }
    }
    // Image.
    for (int c = 0; c < cs.C; ++c) {
      const float* r = ref.image[c].data_ptr<float>();
      float rmin = INFINITY, rmax = -INFINITY;
      for (int64_t o = 0; o < out_n; ++o) {
        rmin = std::min(rmin, r[o]);
        rmax = std::max(rmax, r[o]);
      }
      const double range = std::max(1e-6, static_cast<double>(rmax - rmin));
      const int64_t base = (int64_t{b} * cs.C + c) * out_n;
      for (int64_t o = 0; o < out_n; ++o) {
        if (differ[o] && params[b].ch[c].mask) continue;  // label tie flipped the mask here
        float k;
        double tol = 1e-4 * range;
        if (cs.dtype == OutDType::kFloat32) {
          std::memcpy(&k, out_img.data() + (base + o) * 4, 4);
        } else {
          uint16_t h;
          std::memcpy(&h, out_img.data() + (base + o) * 2, 2);
          k = HalfBitsToFloat(h, cs.dtype);
          tol += std::fabs(r[o]) * (cs.dtype == OutDType::kFloat16 ? 1.0 / 1024 : 1.0 / 128);
        }
        const double err = std::fabs(static_cast<double>(k) - r[o]);
        if (!(err <= tol)) {
          if (float_bad < 5) std::printf("  b=%d c=%d o=%lld: kernel %g ref %g\n", b, c, (long long)o, k, r[o]);
          ++float_bad;
        }
        if (std::isfinite(err))
          max_rel = std::max(max_rel, err / range);
        else
          max_rel = INFINITY;
      }
    }
  }
  const double total = static_cast<double>(cs.B) * out_n;
  std::printf(
      "[%s] B=%d C=%d S=%dx%dx%d P=%dx%dx%d labels=%d stages=0x%x: image max|err|/range %.3g, seg tie "
      "mismatches %lld (fraction %.2e), unexplained %lld, DS vs ref mismatches %lld, DS self %lld\n",
      cs.name.c_str(), cs.B, cs.C, cs.S[0], cs.S[1], cs.S[2], cs.P[0], cs.P[1], cs.P[2], cs.labels, stages, max_rel,
      (long long)seg_mismatch, seg_mismatch / total, (long long)unexplained, (long long)ds_mismatch,
      (long long)ds_self_mismatch);
  EXPECT_EQ(float_bad, 0);
  EXPECT_EQ(unexplained, 0);
  EXPECT_LE(seg_mismatch / total, 1e-3);
  EXPECT_EQ(ds_self_mismatch, 0);
  for (void* p : {d_img, d_seg, d_out, d_oseg, d_ws, d_params}) cudaFree(p);
  for (void* p : d_ds) cudaFree(p);
}

Case Make(std::string name, int B, int C, int labels, Probs pr, std::vector<int> S = {37, 45, 41},
          std::vector<int> P = {25, 31, 28}, OutDType dt = OutDType::kFloat32) {
  Case c;
  c.name = std::move(name);
  c.B = B;
  c.C = C;
  c.labels = labels;
  c.probs = pr;
  for (int d = 0; d < 3; ++d) {
    c.S[d] = S[d];
    c.P[d] = P[d];
  }
  c.dtype = dt;
  return c;
}

Probs SpatialOnly() {
  Probs p = Probs::None();
  p.rot = 0.8;
  p.scale = 0.8;
  return p;
}

// kBatches batches, the even ones drawn with `even`, the odd ones with `odd`, each run alone between synchronisations on
// a workspace poisoned and then InitWorkspace'd, then all enqueued back to back three times with no synchronisation in
// between (parameters already on the device, so each batch's first kernel follows the previous batch's last kernel
// directly) on one workspace and stream: the same bytes, so the reduction counters re-arm whatever the previous
// batch's stage mask was and no pass depends on state (a statistic, a scratch image) a previous batch left. (Session 16
// ran it with the kernels chained by programmatic dependent launch as well, where a kernel touching scratch before its
// predecessor completed would have shown here.) The image is N(image_mean, image_std²).
void RunBackToBack(const char* name, const Probs& even, const Probs& odd, float image_mean, float image_std) {
  constexpr int kBatches = 12, B = 2, C = 2;
  Case cs = Make(name, B, C, 4, even, {100, 110, 96}, {64, 72, 60});
  BatchShape sh;
  sh.batch = B;
  sh.channels = C;
  for (int d = 0; d < 3; ++d) {
    sh.in[d] = cs.S[d];
    sh.out[d] = cs.P[d];
  }
  sh.num_ds = 1;
  for (int d = 0; d < 3; ++d) sh.ds[0][d] = cs.P[d] / 2;
  std::random_device rd;
  const uint64_t seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  std::printf("[%s] seed %llu\n", name, static_cast<unsigned long long>(seed));
  std::mt19937_64 g(seed);
  at::manual_seed(static_cast<int64_t>(seed & 0x7fffffff));
  const at::Tensor img = at::randn({B, C, cs.S[0], cs.S[1], cs.S[2]}, at::kFloat) * image_std + image_mean;
  const at::Tensor coarse = at::randint(0, 4, {B, 1, cs.S[0] / 4, cs.S[1] / 4, cs.S[2] / 4}, at::kFloat);
  const at::Tensor seg = at::upsample_nearest3d(coarse, {cs.S[0], cs.S[1], cs.S[2]}).to(at::kShort).contiguous();
  std::vector<SampleParams> params(kBatches * B);
  std::vector<uint32_t> stages(kBatches);
  for (int k = 0; k < kBatches; ++k) {
    cs.probs = k % 2 == 0 ? even : odd;
    for (int b = 0; b < B; ++b) params[k * B + b] = DrawParams(g, cs, seed, 1000 + k * B + b);
    stages[k] = ActiveStages(params.data() + k * B, sh);
  }
  const int64_t out_n = int64_t{cs.P[0]} * cs.P[1] * cs.P[2], ds_n = int64_t{sh.ds[0][0]} * sh.ds[0][1] * sh.ds[0][2];
  const size_t img_bytes = img.numel() * 4, seg_bytes = seg.numel() * 2;
  const size_t out_bytes = B * C * out_n * 4 + B * out_n * 2 + B * ds_n * 2;  // image, seg, DS of one batch
  void *d_img, *d_seg, *d_ws, *d_params, *d_out;
  CUDA_OK(cudaMalloc(&d_img, img_bytes));
  CUDA_OK(cudaMalloc(&d_seg, seg_bytes));
  CUDA_OK(cudaMalloc(&d_ws, WorkspaceBytes(sh)));
  CUDA_OK(cudaMalloc(&d_params, sizeof(SampleParams) * params.size()));
  CUDA_OK(cudaMalloc(&d_out, out_bytes * kBatches));
  CUDA_OK(cudaMemcpy(d_img, img.data_ptr(), img_bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_seg, seg.data_ptr(), seg_bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_params, params.data(), sizeof(SampleParams) * params.size(), cudaMemcpyHostToDevice));
  cudaStream_t st;
  CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  auto io_of = [&](int k) {
    char* base = static_cast<char*>(d_out) + k * out_bytes;
    PipelineIO io;
    io.image = static_cast<const float*>(d_img);
    io.seg = static_cast<const int16_t*>(d_seg);
    io.out_image = base;
    io.out_seg = reinterpret_cast<int16_t*>(base + B * C * out_n * 4);
    io.out_ds[0] = reinterpret_cast<int16_t*>(base + B * C * out_n * 4 + B * out_n * 2);
    return io;
  };
  const auto* d_p = static_cast<const SampleParams*>(d_params);
  std::vector<std::vector<uint8_t>> alone(kBatches, std::vector<uint8_t>(out_bytes));
  for (int k = 0; k < kBatches; ++k) {  // each batch alone, on a poisoned workspace fresh from InitWorkspace
    CUDA_OK(cudaMemsetAsync(d_ws, 0x7f, WorkspaceBytes(sh), st));  // poison, as RunCase does
    CUDA_OK(InitWorkspace(sh, d_ws, st));
    CUDA_OK(cudaMemsetAsync(static_cast<char*>(d_out) + k * out_bytes, 0x7f, out_bytes, st));
    CUDA_OK(cudaStreamSynchronize(st));
    CUDA_OK(RunPipeline(sh, d_p + k * B, stages[k], io_of(k), d_ws, st));
    CUDA_OK(cudaStreamSynchronize(st));
    CUDA_OK(cudaMemcpy(alone[k].data(), static_cast<char*>(d_out) + k * out_bytes, out_bytes, cudaMemcpyDeviceToHost));
  }
  CUDA_OK(InitWorkspace(sh, d_ws, st));
  CUDA_OK(cudaMemsetAsync(d_out, 0x7f, out_bytes * kBatches, st));
  for (int rep = 0; rep < 3; ++rep) {  // back to back, three passes over the batches
    for (int k = 0; k < kBatches; ++k) CUDA_OK(RunPipeline(sh, d_p + k * B, stages[k], io_of(k), d_ws, st));
  }
  CUDA_OK(cudaStreamSynchronize(st));
  bool armed = false;  // every reduction counter re-armed by the batch that used it
  CUDA_OK(WorkspaceArmed(sh, d_ws, &armed));
  EXPECT_TRUE(armed) << "a reduction counter of the workspace was left counting after the batches";
  int direct = 0;
  for (int k = 0; k < kBatches; ++k) {
    direct += (stages[k] & kStagesAfterSpatial) == 0 ? 1 : 0;
    std::vector<uint8_t> together(out_bytes);
    CUDA_OK(cudaMemcpy(together.data(), static_cast<char*>(d_out) + k * out_bytes, out_bytes, cudaMemcpyDeviceToHost));
    size_t diff = 0;
    for (size_t i = 0; i < out_bytes; ++i) diff += together[i] != alone[k][i] ? 1 : 0;
    EXPECT_EQ(diff, 0u) << "batch " << k << " (stages 0x" << std::hex << stages[k] << std::dec << "): " << diff
                        << " of " << out_bytes << " bytes differ";
  }
  std::printf("[%s] %d batches, %d on the direct path, 3 back-to-back passes\n", name, kBatches, direct);
  CUDA_OK(cudaStreamDestroy(st));
  for (void* p : {d_img, d_seg, d_ws, d_params, d_out}) CUDA_OK(cudaFree(p));
}

// Every stage mask: every transform on, and default probabilities (the direct path too).
TEST(CudaKernels, BatchesBackToBack) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  RunBackToBack("back-to-back", Probs::AllOn(), Probs(), 0.3f, 1.f);
}

// Slot 1's statistics reduced by the mode-2 pass, not converted from the mode-0 pass's (intensity.cu FusedY1), in every
// batch: an input range of ≈ 1e-8 leaves slot 1's input a range far under its 1e-7 floor (FusedY1Valid fails), and
// those statistics differ from batch to batch with the drawn gammas, so a launch that read the one before's, or a
// counter left armed, would differ from the batch alone. (Slot 0's statistics cancel out of these outputs: its mean
// shifts slot 1's input and minimum alike, and both stds are under the floor; BatchesBackToBack covers them.) Odd
// batches: slot 0 drawn with p 0.5, so most have a slice with slot 1 alone (not fused: the mode-2 pass at full
// width); or slot 1 with p 0.5, still fused, where the slices without it leave mode-2 blocks idle and the batch of
// four slices runs the slice-share builds.
TEST(CudaKernels, DegenerateGammaBatchesBackToBack) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  Probs both = Probs::None();
  both.g0 = both.g1 = 1.0;
  Probs slot1_alone = both;
  slot1_alone.g0 = 0.5;
  Probs shares = both;
  shares.g1 = 0.5;
  RunBackToBack("back-to-back-degenerate-gamma", both, slot1_alone, 0.f, 1e-9f);
  RunBackToBack("back-to-back-degenerate-gamma-shares", both, shares, 0.f, 1e-9f);
}

TEST(CudaKernels, HostRules) {
  EXPECT_EQ(BlurKernelSize(0.5), 3);
  EXPECT_EQ(BlurKernelSize(0.58), 3);
  EXPECT_EQ(BlurKernelSize(0.6), 5);
  EXPECT_EQ(BlurKernelSize(0.9), 5);
  EXPECT_EQ(BlurKernelSize(0.92), 7);
  EXPECT_EQ(BlurKernelSize(1.0), 7);
  EXPECT_EQ(RoundHalfEven(12.5), 12);
  EXPECT_EQ(RoundHalfEven(13.5), 14);
  BatchShape bad;
  EXPECT_EQ(WorkspaceBytes(bad), 0u);
}

// A batch of 2 samples, 20³ → 16³, for the launch-rule tests below (rejected before any device call).
BatchShape RuleShape(int channels) {
  BatchShape sh;
  sh.batch = 2;
  sh.channels = channels;
  for (int d = 0; d < 3; ++d) {
    sh.in[d] = 20;
    sh.out[d] = 16;
  }
  return sh;
}

// Seg-only launches (pipeline_cuda.h): both image pointers null, and only with the spatial kernel's direct path. The
// rejections happen before any device call (the pointers below are never dereferenced).
TEST(CudaKernels, SegOnlyLaunchRules) {
  const BatchShape sh = RuleShape(4);
  const auto* params = reinterpret_cast<const SampleParams*>(uintptr_t{4096});
  void* ws = reinterpret_cast<void*>(uintptr_t{8192});
  PipelineIO io;
  io.seg = reinterpret_cast<const int16_t*>(uintptr_t{12288});
  io.out_seg = reinterpret_cast<int16_t*>(uintptr_t{16384});
  for (uint32_t stage : {kStageBlur, kStageContrast, kStageLowRes, kStageGamma0, kStageGamma1}) {
    EXPECT_EQ(RunPipeline(sh, params, stage | kStageNoise, io, ws, nullptr), cudaErrorInvalidValue) << stage;
  }
  PipelineIO half = io;
  half.image = reinterpret_cast<const float*>(uintptr_t{20480});
  EXPECT_EQ(RunPipeline(sh, params, 0, half, ws, nullptr), cudaErrorInvalidValue);  // image without out_image
  half = io;
  half.out_image = reinterpret_cast<void*>(uintptr_t{24576});
  EXPECT_EQ(RunPipeline(sh, params, 0, half, ws, nullptr), cudaErrorInvalidValue);  // out_image without image
}

// The permuted store (SampleParams::out_axis): ActiveStages reports it per sample, and RunPipeline takes it only on
// the spatial kernel's direct path with at most kMaxPermutedChannels channels (rejected before any device call).
TEST(CudaKernels, PermutedStoreRules) {
  BatchShape sh = RuleShape(1);
  SampleParams h[2];
  EXPECT_EQ(ActiveStages(h, sh) & kStagePermute, 0u);
  h[0].mirror_mask = 5;  // flips alone are the plain build's mirroring
  EXPECT_EQ(ActiveStages(h, sh) & kStagePermute, 0u);
  h[1].out_axis[0] = 2;
  h[1].out_axis[2] = 0;
  EXPECT_EQ(ActiveStages(h, sh) & kStagePermute, kStagePermute);
  const auto* params = reinterpret_cast<const SampleParams*>(uintptr_t{4096});
  void* ws = reinterpret_cast<void*>(uintptr_t{8192});
  PipelineIO io;
  io.image = reinterpret_cast<const float*>(uintptr_t{12288});
  io.out_image = reinterpret_cast<void*>(uintptr_t{16384});
  io.seg = reinterpret_cast<const int16_t*>(uintptr_t{20480});
  io.out_seg = reinterpret_cast<int16_t*>(uintptr_t{24576});
  for (uint32_t stage : {kStageBlur, kStageContrast, kStageLowRes, kStageGamma0, kStageGamma1}) {
    EXPECT_EQ(RunPipeline(sh, params, stage | kStagePermute, io, ws, nullptr), cudaErrorInvalidValue) << stage;
  }
  sh.channels = kMaxPermutedChannels + 1;
  EXPECT_EQ(RunPipeline(sh, params, kStagePermute, io, ws, nullptr), cudaErrorInvalidValue);
}

TEST(CudaKernels, SpatialOnly) {
  for (int B : {1, 2, 8})
    for (int C : {1, 4})
      for (int L : {2, 8}) RunCase(Make("spatial", B, C, L, SpatialOnly()));
}

TEST(CudaKernels, SpatialOddAnisotropic) {
  RunCase(Make("spatial-aniso", 2, 1, 8, SpatialOnly(), {31, 64, 50}, {17, 40, 33}));
  RunCase(Make("spatial-cubic-in", 2, 4, 2, SpatialOnly(), {40, 40, 40}, {23, 29, 31}));
}

TEST(CudaKernels, ZeroSegBorderUsesLowestLabel) {
  Probs p = SpatialOnly();
  p.border_m1 = false;
  p.scale = 1.0;  // large scales reach outside the input: the lowest-label rule shows
  RunCase(Make("zero-border", 2, 1, 4, p));
  RunCase(Make("zero-border", 8, 4, 8, p));
}

TEST(CudaKernels, EachIntensityStageAlone) {
  const char* names[] = {"noise", "blur", "brightness", "contrast", "lowres", "gamma-inverted", "gamma"};
  for (int s = 0; s < 7; ++s) {
    Probs p = SpatialOnly();
    double* f[] = {&p.noise, &p.blur, &p.bright, &p.contrast, &p.lowres, &p.g0, &p.g1};
    *f[s] = 1.0;
    p.blur_ch = p.lowres_ch = 0.7;
    for (int B : {1, 8})
      for (int C : {1, 4}) RunCase(Make(names[s], B, C, 2, p));
  }
}

// Channel counts between the builds (3: the 4-channel build with a channel unused; 8: the largest build, which keeps
// NormalAt per voxel) with noise on the quad-shared Philox path (P2 % 4 == 0) and off it (P2 odd).
TEST(CudaKernels, NoiseAcrossChannelBuilds) {
  Probs p = SpatialOnly();
  p.noise = 1.0;
  for (int C : {2, 3, 4, 8}) {
    RunCase(Make("noise-shared", 2, C, 4, p));
    RunCase(Make("noise-odd-p2", 2, C, 4, p, {37, 45, 41}, {25, 31, 27}));
  }
  RunCase(Make("all-on-c3", 2, 3, 8, Probs::AllOn()));
}

TEST(CudaKernels, AllOn) {
  for (int B : {1, 2, 8})
    for (int C : {1, 4})
      for (int L : {2, 8}) RunCase(Make("all-on", B, C, L, Probs::AllOn()));
  RunCase(Make("all-on-aniso", 2, 4, 8, Probs::AllOn(), {31, 64, 50}, {17, 40, 33}));
}

// The tiled blur at every radius up to kMaxBlurRadius (anisotropic radii, odd sizes) and gamma slots that do not
// retain the statistics (slot 1's input statistics are derived from slot 0's core output either way).
TEST(CudaKernels, WideBlurAndGammaWithoutRetain) {
  Probs p = Probs::AllOn();
  p.blur_sigma_hi = 2.75;
  p.retain = 0.5;
  for (int B : {2, 8}) RunCase(Make("wide-blur", B, 1, 4, p, {37, 45, 41}, {25, 31, 28}));
  RunCase(Make("wide-blur-aniso", 2, 4, 8, p, {31, 64, 50}, {17, 40, 33}));
}

// The tiled blur's radius-1 path (σ ≤ 0.55 on every axis; every-transform-on draws reach it in 1 of 216 blurred
// channels) and volumes thinner than a blur block's 16 planes, with partial tiles on every axis (the flat halo tile
// of every radius <= 3 path, s29).
TEST(CudaKernels, NarrowBlurAndThinVolumes) {
  Probs p = Probs::AllOn();
  p.blur_sigma_hi = 0.55;
  RunCase(Make("narrow-blur", 2, 1, 4, p));
  RunCase(Make("narrow-blur-thin", 2, 4, 8, p, {19, 45, 41}, {9, 31, 28}));
  RunCase(Make("blur-thin", 2, 1, 4, Probs::AllOn(), {19, 45, 41}, {7, 33, 40}));
}

// s56: rows of whole 16-byte chunks (P2 % 4 == 0) with tiles inside the volume and tiles past its x edges, a last
// tile of 4 columns (100 = 3·32 + 4), and rows that are not (130 % 4 == 2), at every radius of the fast paths: the
// samples' sigmas fixed to kernel sizes 3, 5 and 7 (radius 1, 2, 3) per axis, isotropic and not. The 16-byte path runs
// in the build with -DAUGMENTD_BLUR_VEC_COPIES=1 (bench A/B); the default build runs the other path on the same shapes.
TEST(CudaKernels, BlurHaloChunks) {
  constexpr float kR1 = 0.55f, kR2 = 0.75f, kR3 = 1.0f;  // nearest_odd(6σ + 0.5) = 3, 5, 7
  const std::array<std::array<float, 3>, 8> sigmas = {{{kR1, kR1, kR1},
                                                       {kR2, kR1, kR1},
                                                       {kR1, kR2, kR3},
                                                       {kR3, kR3, kR3},
                                                       {kR1, kR3, kR2},
                                                       {kR2, kR2, kR2},
                                                       {kR1, kR1, kR2},
                                                       {kR3, kR1, kR1}}};
  for (int P2 : {100, 130}) {
    Case cs = Make("blur-chunks-" + std::to_string(P2), 8, 1, 4, Probs::AllOn(), {21, 24, P2 + 6}, {9, 19, P2});
    cs.edit = [&sigmas](std::vector<SampleParams>& ps) {
      for (size_t b = 0; b < ps.size(); ++b) {
        for (int a = 0; a < 3; ++a) ps[b].ch[0].blur_sigma[a] = sigmas[b][a];
      }
    };
    RunCase(cs);
  }
}

// s11: the mid pass keeps V1 in the buffer of a slice without low-res (the later passes apply brightness/contrast),
// skips a slice with no gamma slot, and gamma slot 1 may be on without slot 0: fixed probabilities for each path,
// which the default-probability draws reach only by chance.
TEST(CudaKernels, MidPassPartialLowRes) {
  Probs p = Probs::AllOn();
  p.lowres_ch = 0.5;
  p.g0 = 0.0;
  for (int C : {1, 4}) RunCase(Make("lowres-half-g1-only", 2, C, 8, p));
  p.g1 = 0.0;
  RunCase(Make("lowres-half-no-gamma", 2, 4, 8, p));
  p.g0 = p.g1 = 1.0;
  p.retain = 0.5;
  RunCase(Make("lowres-half-both", 8, 4, 8, p));
}

// s23: the mid pass's build without its per-block tables (axis 0 longer than kPickTable = 512: the axis-0 sources and
// the low-res planes' V1 offsets computed per step), which no other case reaches.
TEST(CudaKernels, MidPassLongAxis) {
  Probs p = Probs::AllOn();
  RunCase(Make("lowres-long-axis0", 2, 1, 4, p, {530, 6, 10}, {520, 4, 8}));
}

// s22: the slice passes (mid, gamma statistics) deal their blocks out among the slices with work in
// them (TakeSliceShare, common.cuh), found by warp ballots over groups of 32 slices: batches of more than 32 slices
// where each pass runs in some slices only, in the first group, the second or both, one or two slices of 40 with work
// (small patches: every slice's blocks are one per chunk either way); then 96³ patches of 8 slices, where per-slice
// blocks are a share of the wave (132 of 432 chunks in the gamma passes) and the slices with work take more: one, two
// and three of eight. RunCase checks each against the CPU reference and against per-slice blocks.
TEST(CudaKernels, SliceSharesOverManySlices) {
  Probs p = Probs::AllOn();
  p.lowres_ch = 0.3;
  p.g0 = 0.3;
  p.g1 = 0.5;
  p.retain = 0.5;
  RunCase(Make("slice-shares-40", 10, 4, 4, p));
  RunCase(Make("slice-shares-33", 11, 3, 4, p, {30, 33, 29}, {17, 21, 19}));
  // Every pass's work in the named slices alone (the others keep their drawn spatial and pointwise stages).
  const auto only = [](int C, std::vector<int> keep) {
    return [C, keep](std::vector<SampleParams>& ps) {
      for (int s = 0; s < static_cast<int>(ps.size()) * C; ++s) {
        if (std::find(keep.begin(), keep.end(), s) != keep.end()) continue;
        ChannelParams& cp = ps[s / C].ch[s % C];
        cp.gamma[0] = cp.gamma[1] = 0.f;
        cp.lowres_shape[0] = cp.lowres_shape[1] = cp.lowres_shape[2] = 0;
      }
    };
  };
  p.lowres_ch = 1.0;
  p.g0 = p.g1 = 1.0;
  Case cs = Make("slice-shares-one-of-40", 10, 4, 4, p);
  cs.edit = only(4, {37});
  RunCase(cs);
  cs = Make("slice-shares-two-of-40", 10, 4, 4, p);
  cs.edit = only(4, {3, 35});
  RunCase(cs);
  const std::vector<std::vector<int>> wide = {{1}, {1, 6}, {0, 3, 6}};
  for (const std::vector<int>& keep : wide) {
    cs = Make("slice-shares-96-" + std::to_string(keep.size()) + "-of-8", 2, 4, 4, p, {110, 104, 100}, {96, 96, 96});
    cs.edit = only(4, keep);
    RunCase(cs);
  }
}

// Gamma slot 1's statistics come from slot 0's pass where slot 1's input spans its own range (intensity.cu FusedY1)
// and from a pass of their own where it does not. Both slots inverted, neither, or one (slot 1's input rising or
// falling with slot 0's output; slots without retain-stats: WideBlurAndGammaWithoutRetain), an input offset far
// from 0; then two fallbacks: a constant image (slot 0's power 0 at the maximum) and a range of ≈ 1e-8 (slot 1's
// range under the 1e-7 floor); and slices with slot 1 alone in a batch whose stage mask leaves out
// kStageGamma1Alone (fused passes anyway). The third fallback, a range under 2^-8 of the magnitude, is not compared
// here: this test's tolerance, 1e-4 of the range, is then under 3.3 ulps of the values, which the direct pass itself
// does not promise. The narrow slot-1 pass launches at most 16 blocks a slice (intensity.cu kDegenerateBlocks): the
// default patch (21,700 voxels) has 11 chunks a slice, so every chunk gets a block; the wide cases (40³, 32 chunks)
// leave each of those blocks two chunks of a degenerate slice.
TEST(CudaKernels, GammaSlot1StatisticsFromSlot0) {
  Probs p = Probs::AllOn();  // retain-stats in every slot: the fused pass runs in every case of the loop
  for (bool inv0 : {false, true}) {
    for (bool inv1 : {false, true}) {
      p.g0_invert = inv0;
      p.g1_invert = inv1;
      RunCase(Make(std::string("gamma-invert-") + (inv0 ? "1" : "0") + (inv1 ? "1" : "0"), 2, 1, 4, p));
    }
  }
  Probs g = Probs::None();  // crop, no interpolation: a constant input stays constant
  g.g0 = g.g1 = 1.0;
  Case cs = Make("gamma-offset", 2, 4, 4, p);
  cs.image_mean = 100.f;
  RunCase(cs);
  // Slot 1 without slot 0 in some samples, but the mask without kStageGamma1Alone: the passes run fused and those
  // slices' statistics come from the narrow slot-1 pass.
  p.g0 = 0.5;
  cs = Make("gamma-narrow-slot1-pass", 8, 2, 4, p);
  cs.drop_stages = kStageGamma1Alone;
  RunCase(cs);
  // 0.5: the reference's float mean of a constant is then exact (the tolerance of a constant output is 1e-10). These
  // two catch a degenerate slice taken for fused (1/p0max infinite, r1 = 0: NaN statistics, NaN outputs), not a
  // rounding-level difference: their outputs span at most ≈ 1e-8.
  const std::tuple<const char*, float, float> cases[] = {{"gamma-constant", 0.5f, 0.f}, {"gamma-tiny", 0.f, 1e-9f}};
  for (const auto& [name, mean, sd] : cases) {
    cs = Make(name, 2, 1, 4, g);
    cs.image_mean = mean;
    cs.image_std = sd;
    RunCase(cs);
  }
  p.g0 = 1.0;
  RunCase(Make("gamma-wide", 2, 1, 4, p, {48, 48, 48}, {40, 40, 40}));
  cs = Make("gamma-constant-wide", 2, 1, 4, g, {48, 48, 48}, {40, 40, 40});
  cs.image_mean = 0.5f;
  cs.image_std = 0.f;
  RunCase(cs);
}

// Batches of centre crops alone (spatial.cu kCrops), each also run with kStageResample (RunCase: the same bytes):
// 1 channel (whole launch) and 4 (split launch, but on the direct path with a mask channel, which runs the 4-channel
// build: there the comparison is of one build with itself), the direct and the intensity path, with and without
// noise (shared noise quads, and per-voxel normals where P2 % 4 != 0), brightness, masks (negative labels only where
// the patch is larger than the input: the −1 slab lies outside the unpadded crops), padding on two axes, seg border 0
// and −1, fp16 output; low-res, whose mid pass launches plainly in the 1-channel batches and chained in the run with
// kStageResample (pipeline_cuda.cu kPlainMidMaxSlices): the same bytes either way.
TEST(CudaKernels, CropBatches) {
  Probs direct = Probs::None();
  direct.noise = direct.bright = 1.0;
  direct.mask_ch = 0.5;
  Probs direct_split = direct;  // no mask channel: a 4-channel direct batch takes the split launch
  direct_split.mask_ch = 0.0;
  Probs plain = Probs::None();  // no noise: the crops build without the noise epilogue
  plain.bright = 1.0;
  Probs intensity = direct;
  intensity.contrast = intensity.g0 = intensity.g1 = 1.0;
  Probs plain_intensity = intensity;
  plain_intensity.noise = 0.0;
  Probs zero_border = intensity;
  zero_border.border_m1 = false;
  Probs lowres = intensity;  // the mid pass right after the crops build: launched plainly at B·C <= 2 (s43)
  lowres.lowres = lowres.lowres_ch = 1.0;
  for (int C : {1, 4}) {
    RunCase(Make("crops-lowres", 2, C, 4, lowres));
    RunCase(Make("crops-lowres-odd", 2, C, 4, lowres, {20, 45, 30}, {25, 31, 27}));
    RunCase(Make("crops-direct", 2, C, 4, direct));
    RunCase(Make("crops-direct-nomask", 2, C, 4, direct_split, {20, 29, 41}, {25, 31, 28}));
    RunCase(Make("crops-plain", 2, C, 4, plain, {20, 45, 25}, {25, 31, 28}));
    RunCase(Make("crops-intensity", 2, C, 4, intensity));
    RunCase(Make("crops-plain-intensity", 2, C, 4, plain_intensity, {20, 45, 25}, {25, 31, 28}));
    RunCase(Make("crops-padded", 2, C, 4, intensity, {20, 45, 25}, {25, 31, 28}));
    RunCase(Make("crops-padded-direct", 2, C, 4, direct, {20, 29, 41}, {25, 31, 28}));
    RunCase(Make("crops-zero-border", 2, C, 4, zero_border, {20, 45, 25}, {25, 31, 28}));
    RunCase(Make("crops-p2-odd", 2, C, 4, intensity, {20, 45, 30}, {25, 31, 27}));
  }
  RunCase(Make("crops-direct-fp16", 2, 1, 4, direct, {37, 45, 41}, {25, 31, 28}, OutDType::kFloat16));
}

TEST(CudaKernels, ResampleStageRule) {
  BatchShape sh = RuleShape(1);
  SampleParams h[2];
  EXPECT_EQ(ActiveStages(h, sh) & kStageResample, 0u);  // SampleParams' default: a centre crop
  h[1].use_crop = 0;
  EXPECT_EQ(ActiveStages(h, sh) & kStageResample, kStageResample);
  h[1].use_crop = 1;
  h[0].use_crop = 0;
  h[0].elastic = 1;  // elastic samples resample (use_crop must be 0 for them)
  EXPECT_EQ(ActiveStages(h, sh) & kStageResample, kStageResample);
}

// kStageSliceIdle: some slice skips a slice pass (mid, gamma statistics 0 / 2) that another runs.
TEST(CudaKernels, SliceIdleStageRule) {
  BatchShape sh = RuleShape(2);
  SampleParams h[2];
  EXPECT_EQ(ActiveStages(h, sh) & kStageSliceIdle, 0u);  // no slice runs any
  for (int s = 0; s < 4; ++s) h[s / 2].ch[s % 2].gamma[0] = 1.2f;
  EXPECT_EQ(ActiveStages(h, sh) & kStageSliceIdle, 0u);  // every slice runs mid and gamma 0
  h[1].ch[1].gamma_retain[0] = 0;                         // slice 3: mid, but not the gamma-0 statistics
  EXPECT_EQ(ActiveStages(h, sh) & kStageSliceIdle, kStageSliceIdle);
  h[1].ch[1].gamma_retain[0] = 1;
  h[0].ch[0].lowres_shape[0] = h[0].ch[0].lowres_shape[1] = h[0].ch[0].lowres_shape[2] = 8;  // low-res in slice 0:
  EXPECT_EQ(ActiveStages(h, sh) & kStageSliceIdle, 0u);  // no pass of its own (the mid pass, which every slice runs)
  h[0].ch[0].gamma[0] = 0.f;                             // slice 0: the mid pass for low-res, no gamma statistics
  EXPECT_EQ(ActiveStages(h, sh) & kStageSliceIdle, kStageSliceIdle);
  h[0].ch[0].lowres_shape[0] = 17;  // beyond the patch: low-res off (LowResOn), so slice 0 runs no pass
  EXPECT_EQ(ActiveStages(h, sh) & kStageSliceIdle, kStageSliceIdle);
  h[0].ch[0].gamma[0] = 1.2f;  // every slice alike again
  EXPECT_EQ(ActiveStages(h, sh) & kStageSliceIdle, 0u);
  h[0].ch[1].gamma[0] = h[1].ch[1].gamma[0] = 0.f;  // slices 1 and 3 idle
  EXPECT_EQ(ActiveStages(h, sh) & kStageSliceIdle, kStageSliceIdle);
  sh.channels = 1;  // slices past the batch's channels do not count
  EXPECT_EQ(ActiveStages(h, sh) & kStageSliceIdle, 0u);
  h[1].ch[0].gamma[0] = 0.f;  // two slices, one idle: no hint (shares only from kSliceShareMinSlices = 3 slices)
  EXPECT_EQ(ActiveStages(h, sh) & kStageSliceIdle, 0u);
}

TEST(CudaKernels, DefaultProbabilities) {
  for (int B : {2, 8})
    for (int C : {1, 4}) RunCase(Make("default-p", B, C, 8, Probs()));
}

TEST(CudaKernels, HalfOutputs) {
  RunCase(Make("all-on-fp16", 2, 4, 8, Probs::AllOn(), {37, 45, 41}, {25, 31, 28}, OutDType::kFloat16));
  RunCase(Make("all-on-bf16", 2, 1, 2, Probs::AllOn(), {37, 45, 41}, {25, 31, 28}, OutDType::kBFloat16));
  // Direct path (no stage after the spatial kernel) writing half precision.
  Probs direct = SpatialOnly();
  direct.noise = direct.bright = 1.0;
  direct.mask_ch = 0.5;
  RunCase(Make("direct-fp16", 2, 4, 8, direct, {37, 45, 41}, {25, 31, 28}, OutDType::kFloat16));
}

TEST(CudaKernels, BenchmarkShapes) {
  RunCase(Make("all-on-128", 2, 1, 4, Probs::AllOn(), {205, 205, 205}, {128, 128, 128}));
  RunCase(Make("all-on-80x160x160", 2, 4, 4, Probs::AllOn(), {175, 257, 210}, {80, 160, 160}));
}

}  // namespace
}  // namespace augmentd::cuda
