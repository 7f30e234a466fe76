// CPU spatial kernels. Math (bgv2 0.3.5 SpatialTransform + torch grid_sample, align_corners=False):
//   grid_d(j)  = ((lin_d(j) + off_d(j)) · Aᵀ + shift_d) / (S_d / 2)          lin_d(j) = j_d − (p_d − 1)/2
//   x_d        = ((grid_d + 1) · S_d − 1) / 2                                  (input voxel coordinate)
//   trilinear  = Σ_corners w_c · in[c], w from torch's float32 formulas, corners outside contribute 0.
// Every float operation keeps torch's float32 order so results agree bit-for-bit in the common case.
#include "augment/kernels/cpu_spatial.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "augment/kernels/cpu_half.h"

namespace augmentd::kernels {

int64_t NumOut(const GridSpec& g) {
  int64_t n = 1;
  for (int d = 0; d < g.ndim; ++d) n *= g.out_shape[d];
  return n;
}
int64_t NumIn(const GridSpec& g) {
  int64_t n = 1;
  for (int d = 0; d < g.ndim; ++d) n *= g.in_shape[d];
  return n;
}

void ComputeSamplingGrid(const GridSpec& g, const float* offsets, bool subtract_mean, float* grid) {
  const int nd = g.ndim;
  const int64_t n = NumOut(g);
  int64_t idx[3] = {0, 0, 0};
  float lin0[3];
  for (int d = 0; d < nd; ++d) lin0[d] = (1.0f - static_cast<float>(g.out_shape[d])) / 2.0f;
  for (int64_t v = 0; v < n; ++v) {
    float p[3] = {0, 0, 0};
    for (int d = 0; d < nd; ++d) {
      // torch.linspace((1-s)/2, (s-1)/2, s): half-integers, exact in float32.
      p[d] = lin0[d] + static_cast<float>(idx[d]);
      if (offsets != nullptr) p[d] = p[d] + offsets[v * nd + d];
    }
    float* out = grid + v * nd;
    if (g.has_affine) {
      for (int r = 0; r < nd; ++r) {
        float acc = p[0] * g.affine[r][0];
        for (int k = 1; k < nd; ++k) acc = acc + p[k] * g.affine[r][k];
        out[r] = acc;
      }
    } else {
      for (int d = 0; d < nd; ++d) out[d] = p[d];
    }
    for (int d = nd - 1; d >= 0; --d) {  // advance the C-order index
      if (++idx[d] < g.out_shape[d]) break;
      idx[d] = 0;
    }
  }
  float mean[3] = {0, 0, 0};
  if (subtract_mean) {
    for (int d = 0; d < nd; ++d) {
      double s = 0;
      for (int64_t v = 0; v < n; ++v) s += grid[v * nd + d];
      mean[d] = static_cast<float>(s / static_cast<double>(n));
    }
  }
  for (int d = 0; d < nd; ++d) {
    const float add = g.shift[d] - mean[d];
    const float half = static_cast<float>(static_cast<double>(g.in_shape[d]) / 2.0);
    for (int64_t v = 0; v < n; ++v) {
      float& x = grid[v * nd + d];
      x = (x + add) / half;
    }
  }
}

bool OutOfBounds(const GridSpec& g, const float* gv) {
  // bgv2: size = [S_0..S_{n-1}] (array order), compared with the flipped grid (axis n-1 first).
  const int nd = g.ndim;
  for (int k = 0; k < nd; ++k) {
    const float c = gv[nd - 1 - k];
    const float inv = 1.0f / static_cast<float>(g.in_shape[k]);
    const float lo = -1.0f + inv;
    const float hi = 1.0f - inv;
    if (c < lo || c > hi) return true;
  }
  return false;
}

namespace {

// floor() of a sampling coordinate as an integer without a libm call (baseline x86-64 has no roundss).
// Coordinates beyond ±2^30 (or NaN) map to a far-outside index, i.e. every corner is out of bounds, as in torch.
inline int64_t FloorIndex(float x) {
  if (!(x > -1073741824.0f && x < 1073741824.0f)) return -(int64_t{1} << 40);
  const int64_t i = static_cast<int64_t>(x);
  return static_cast<float>(i) > x ? i - 1 : i;
}

inline float Unnormalize(float coord, int64_t size) {
  return ((coord + 1.0f) * static_cast<float>(size) - 1.0f) / 2.0f;
}

// The 8 (3D) / 4 (2D) corners of one sampling point with torch's float32 weights, in torch's accumulation order.
struct Corners {
  int n = 0;
  int64_t offset[8] = {};  // linear input offset (valid only if inb)
  bool inb[8] = {};
  float w[8] = {};
};

inline void LinearCorners3D(const GridSpec& g, const float* gv, Corners& c) {
  const int64_t D = g.in_shape[0], H = g.in_shape[1], W = g.in_shape[2];
  const float ix = Unnormalize(gv[2], W), iy = Unnormalize(gv[1], H), iz = Unnormalize(gv[0], D);
  const int64_t x0 = FloorIndex(ix), y0 = FloorIndex(iy), z0 = FloorIndex(iz);
  const int64_t x1 = x0 + 1, y1 = y0 + 1, z1 = z0 + 1;
  const float wx1 = static_cast<float>(x1) - ix, wx0 = ix - static_cast<float>(x0);  // (x_bse - x), (x - x_tnw)
  const float wy1 = static_cast<float>(y1) - iy, wy0 = iy - static_cast<float>(y0);
  const float wz1 = static_cast<float>(z1) - iz, wz0 = iz - static_cast<float>(z0);
  // torch order: tnw tne tsw tse bnw bne bsw bse (t/b: z, n/s: y, w/e: x).
  const int64_t zs[2] = {z0, z1}, ys[2] = {y0, y1}, xs[2] = {x0, x1};
  const float wz[2] = {wz1, wz0}, wy[2] = {wy1, wy0}, wx[2] = {wx1, wx0};
  c.n = 8;
  int k = 0;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b)
      for (int e = 0; e < 2; ++e, ++k) {
        c.w[k] = wx[e] * wy[b] * wz[a];
        const int64_t z = zs[a], y = ys[b], x = xs[e];
        c.inb[k] = z >= 0 && z < D && y >= 0 && y < H && x >= 0 && x < W;
        c.offset[k] = c.inb[k] ? (z * H + y) * W + x : 0;
      }
}

// 2D: torch's vectorised CPU kernel (GridSamplerKernel.cpp, built with FMA contraction):
// x = fma(g + 1, S/2, −0.5), w = x − floor(x), e = 1 − w, weights nw = s·e, ne = s·w, sw = n·e, se = n·w
// (n/s along y = axis 0, w/e along x = axis 1); the value is an fma chain over nw, ne, sw, se. Verified
// bit-exact against torch 2.11 on CPU.
inline void LinearCorners2D(const GridSpec& g, const float* gv, Corners& c) {
  const int64_t H = g.in_shape[0], W = g.in_shape[1];
  const float ix = std::fma(gv[1] + 1.0f, static_cast<float>(W) / 2.0f, -0.5f);
  const float iy = std::fma(gv[0] + 1.0f, static_cast<float>(H) / 2.0f, -0.5f);
  const int64_t x0 = FloorIndex(ix), y0 = FloorIndex(iy);
  const float fx = static_cast<float>(x0), fy = static_cast<float>(y0);
  const float w = ix - fx, e = 1.0f - w, n = iy - fy, s = 1.0f - n;
  const int64_t ys[2] = {y0, y0 + 1}, xs[2] = {x0, x0 + 1};
  const float wy[2] = {s, n}, wx[2] = {e, w};
  c.n = 4;
  int k = 0;
  for (int b = 0; b < 2; ++b)
    for (int a = 0; a < 2; ++a, ++k) {
      c.w[k] = wy[b] * wx[a];
      const int64_t y = ys[b], x = xs[a];
      c.inb[k] = y >= 0 && y < H && x >= 0 && x < W;
      c.offset[k] = c.inb[k] ? y * W + x : 0;
    }
}

inline void LinearCorners(const GridSpec& g, const float* gv, Corners& c) {
  if (g.ndim == 3) {
    LinearCorners3D(g, gv, c);
  } else {
    LinearCorners2D(g, gv, c);
  }
}

// Nearest neighbour (torch: nearbyint = round half to even of the unnormalised coordinate). -1 if outside.
inline int64_t NearestOffset(const GridSpec& g, const float* gv) {
  int64_t off = 0;
  for (int d = 0; d < g.ndim; ++d) {
    float x;
    if (g.ndim == 3) {
      x = Unnormalize(gv[d], g.in_shape[d]);
    } else {
      x = std::fma(gv[d] + 1.0f, static_cast<float>(g.in_shape[d]) / 2.0f, -0.5f);
    }
    const int64_t i = static_cast<int64_t>(std::nearbyint(x));
    if (i < 0 || i >= g.in_shape[d]) return -1;
    off = off * g.in_shape[d] + i;
  }
  return off;
}

}  // namespace

namespace {

// The label of one output voxel from its linear corners (see SampleLabels in the header).
inline int16_t DecideLabel(const Corners& c, int nd, const int16_t* in, int16_t lowest_label, int64_t num_labels,
                           const LabelSampleOptions& opt) {
  if (!opt.bg_style) {
    // Fast path: every corner inside and carrying the same label u. Then score(u) ≈ 1000 > 0 and every other
    // label scores 0, so the running max ends at u (u == lowest_label gives u too).
    bool uniform = true;
    const int16_t first = c.inb[0] ? in[c.offset[0]] : 0;
    for (int k = 0; k < c.n && uniform; ++k) uniform = c.inb[k] && in[c.offset[k]] == first;
    if (uniform) return first;
  }
  // Distinct corner labels (ascending) with their summed weights, accumulated in torch's corner order.
  int16_t labels[8];
  float score[8];
  int nl = 0;
  const float scale = opt.bg_style ? 1.0f : 1000.0f;
  for (int k = 0; k < c.n; ++k) {
    if (!c.inb[k]) continue;
    const int16_t lab = in[c.offset[k]];
    int i = 0;
    while (i < nl && labels[i] != lab) ++i;
    if (i == nl) {
      labels[nl] = lab;
      score[nl] = 0.0f;
      ++nl;
    }
    if (nd == 3) {
      score[i] += scale * c.w[k];
    } else {
      score[i] = std::fma(scale, c.w[k], score[i]);  // 2D: fma chain (0·w terms leave the sum unchanged)
    }
  }
  for (int i = 1; i < nl; ++i)  // insertion sort by label (nl <= 8)
    for (int j = i; j > 0 && labels[j] < labels[j - 1]; --j) {
      std::swap(labels[j], labels[j - 1]);
      std::swap(score[j], score[j - 1]);
    }
  if (!opt.bg_style) {
    // Running fp16 max, strict '>' keeps the lowest label on ties; the lowest label of the channel starts it.
    int16_t best_label = lowest_label;
    float best = 0.0f;
    int i0 = 0;
    if (nl > 0 && labels[0] == lowest_label) {
      best = RoundToHalf(score[0]);
      i0 = 1;
    }
    for (int i = i0; i < nl; ++i) {
      const float sc = RoundToHalf(score[i]);
      if (sc > best) {
        best = sc;
        best_label = labels[i];
      }
    }
    return best_label;
  }
  // bgv2 bg_style_seg_sampling: result starts at 0; with exactly 2 labels: labels[1] where score >= 0.5, else
  // labels[0]; otherwise every label u (skipping a 0 background) in ascending order overwrites where score >= 0.5.
  int16_t r = 0;
  if (num_labels == 2) {
    bool hit = false;
    for (int i = 0; i < nl; ++i)
      if (labels[i] != lowest_label && score[i] >= 0.5f) {
        r = labels[i];
        hit = true;
      }
    if (!hit) r = lowest_label;
  } else {
    for (int i = 0; i < nl; ++i) {
      if (labels[i] == 0 && lowest_label == 0) continue;
      if (score[i] >= 0.5f) r = labels[i];
    }
  }
  return r;
}

// bgv2 0.3.6: the label of the nearest neighbour in the padded segmentation (`pad` outside).
inline int16_t NearestPaddedLabel(const GridSpec& g, const float* gv, const int16_t* in, int16_t pad) {
  const int64_t off = NearestOffset(g, gv);
  return off < 0 ? pad : in[off];
}

// bgv2 0.3.6's vote (LabelSampleOptions::pad_first, kLinear) for one output voxel from its corners.
inline int16_t DecideLabelPadFirst(const GridSpec& g, const float* gv, const Corners& c, const int16_t* in,
                                   int16_t lowest_label, int64_t num_labels, const LabelSampleOptions& opt) {
  if (num_labels <= 1) return lowest_label;  // bgv2 fills a single-label channel with it
  const int nd = g.ndim;
  // Fast path: every corner inside with label u. u scores ~1000, every other label (the padding label too:
  // 1000 − ~1000) ~0, so u wins under every tie-break and is its own nearest neighbour.
  bool uniform = true;
  const int16_t first = c.inb[0] ? in[c.offset[0]] : 0;
  for (int k = 0; k < c.n && uniform; ++k) uniform = c.inb[k] && in[c.offset[k]] == first;
  if (uniform) return first;
  int16_t labels[9];
  float score[9];
  int nl = 0;
  float others = 0.0f;  // Σ 1000·w over in-bounds corners not labelled pad_label, in corner order
  for (int k = 0; k < c.n; ++k) {
    if (!c.inb[k]) continue;
    const int16_t lab = in[c.offset[k]];
    int i = 0;
    while (i < nl && labels[i] != lab) ++i;
    if (i == nl) {
      labels[nl] = lab;
      score[nl] = 0.0f;
      ++nl;
    }
    if (nd == 3) {
      score[i] += 1000.0f * c.w[k];
      if (lab != opt.pad_label) others += 1000.0f * c.w[k];
    } else {
      score[i] = std::fma(1000.0f, c.w[k], score[i]);
      if (lab != opt.pad_label) others = std::fma(1000.0f, c.w[k], others);
    }
  }
  if (opt.pad_votes) {
    // grid_sample((ind − 1)·1000) = −others (sign-symmetric rounding), then + 1000.
    int i = 0;
    while (i < nl && labels[i] != opt.pad_label) ++i;
    if (i == nl) {
      labels[nl] = opt.pad_label;
      ++nl;
    }
    score[i] = -others + 1000.0f;
  }
  for (int i = 1; i < nl; ++i)  // insertion sort by label (nl <= 9)
    for (int j = i; j > 0 && labels[j] < labels[j - 1]; --j) {
      std::swap(labels[j], labels[j - 1]);
      std::swap(score[j], score[j - 1]);
    }
  for (int i = 0; i < nl; ++i) score[i] = RoundToHalf(score[i]);
  if (num_labels == 2) {
    // bgv2's two-label shortcut: one grid_sample of the higher label L1, compared with half of 1000.
    float hi = 0.0f;
    int16_t l1 = lowest_label;
    for (int i = 0; i < nl; ++i)
      if (labels[i] != lowest_label) {
        hi = score[i];
        l1 = labels[i];
      }
    if (opt.tiebreak == SegTiebreak::kNearest && hi == 500.0f) return NearestPaddedLabel(g, gv, in, opt.pad_label);
    const bool better = opt.tiebreak == SegTiebreak::kHighest ? hi >= 500.0f : hi > 500.0f;
    return better ? l1 : lowest_label;
  }
  float top = 0.0f;  // labels of the channel absent from the corners score 0
  for (int i = 0; i < nl; ++i) top = std::max(top, score[i]);
  if (!(top > 0.0f)) return lowest_label;
  if (opt.tiebreak == SegTiebreak::kNearest) {
    const int16_t nn = NearestPaddedLabel(g, gv, in, opt.pad_label);
    for (int i = 0; i < nl; ++i)
      if (labels[i] == nn && score[i] == top) return nn;
  }
  if (opt.tiebreak == SegTiebreak::kHighest) {
    for (int i = nl - 1; i >= 0; --i)
      if (score[i] == top) return labels[i];
  }
  for (int i = 0; i < nl; ++i)
    if (score[i] == top) return labels[i];
  return lowest_label;
}

// The label of one output voxel under either version's rule.
inline int16_t VoteLabel(const GridSpec& g, const float* gv, const Corners& c, const int16_t* in,
                         int16_t lowest_label, int64_t num_labels, const LabelSampleOptions& opt) {
  if (opt.pad_first) return DecideLabelPadFirst(g, gv, c, in, lowest_label, num_labels, opt);
  return DecideLabel(c, g.ndim, in, lowest_label, num_labels, opt);
}

inline float InterpolateLinear(const Corners& c, int nd, const float* src) {
  float acc = 0.0f;
  if (nd == 3) {
    for (int k = 0; k < 8; ++k)
      if (c.inb[k]) acc += src[c.offset[k]] * c.w[k];
  } else {
    // vectorised 2D kernel: masked loads give 0 for outside corners; fma chain in corner order.
    acc = (c.inb[0] ? src[c.offset[0]] : 0.0f) * c.w[0];
    for (int k = 1; k < 4; ++k) acc = std::fma(c.inb[k] ? src[c.offset[k]] : 0.0f, c.w[k], acc);
  }
  return acc;
}

}  // namespace

void SampleImage(const GridSpec& g, const float* in, int64_t channels, const float* grid, InterpMode mode,
                 bool fill_out_of_bounds, float fill_value, float* out) {
  const int64_t n_out = NumOut(g), n_in = NumIn(g);
  const int nd = g.ndim;
  Corners c;
  for (int64_t v = 0; v < n_out; ++v) {
    const float* gv = grid + v * nd;
    if (fill_out_of_bounds && OutOfBounds(g, gv)) {
      for (int64_t ch = 0; ch < channels; ++ch) out[ch * n_out + v] = fill_value;
      continue;
    }
    if (mode == InterpMode::kNearest) {
      const int64_t off = NearestOffset(g, gv);
      for (int64_t ch = 0; ch < channels; ++ch) out[ch * n_out + v] = off < 0 ? 0.0f : in[ch * n_in + off];
      continue;
    }
    LinearCorners(g, gv, c);
    for (int64_t ch = 0; ch < channels; ++ch) out[ch * n_out + v] = InterpolateLinear(c, nd, in + ch * n_in);
  }
}

void SampleImageShifted(const GridSpec& g, const float* in, int64_t channels, const float* grid, InterpMode mode,
                        float shift, float* out) {
  const int64_t n_out = NumOut(g), n_in = NumIn(g);
  const int nd = g.ndim;
  Corners c;
  for (int64_t v = 0; v < n_out; ++v) {
    const float* gv = grid + v * nd;
    if (mode == InterpMode::kNearest) {
      const int64_t off = NearestOffset(g, gv);
      for (int64_t ch = 0; ch < channels; ++ch)
        out[ch * n_out + v] = off < 0 ? shift : (in[ch * n_in + off] - shift) + shift;
      continue;
    }
    LinearCorners(g, gv, c);
    for (int64_t ch = 0; ch < channels; ++ch) {
      const float* src = in + ch * n_in;
      float acc = 0.0f;
      if (nd == 3) {
        for (int k = 0; k < 8; ++k)
          if (c.inb[k]) acc += (src[c.offset[k]] - shift) * c.w[k];
      } else {
        acc = (c.inb[0] ? src[c.offset[0]] - shift : 0.0f) * c.w[0];
        for (int k = 1; k < 4; ++k) acc = std::fma(c.inb[k] ? src[c.offset[k]] - shift : 0.0f, c.w[k], acc);
      }
      out[ch * n_out + v] = acc + shift;
    }
  }
}

bool MayReachOutside(const GridSpec& g, const float* grid) {
  double bound = 1.0;
  for (int d = 0; d < g.ndim; ++d) bound = std::min(bound, 1.0 - 1.0 / static_cast<double>(g.in_shape[d]));
  const int64_t n = NumOut(g) * g.ndim;
  if (n == 0) return false;
  float lo = grid[0], hi = grid[0];
  for (int64_t i = 0; i < n; ++i) {
    const float x = grid[i];
    if (std::isnan(x)) return true;  // torch.aminmax propagates NaN; every comparison with it fails
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  return !(-static_cast<double>(lo) <= bound && static_cast<double>(hi) <= bound);
}

bool MayReachOutsideAffine(const GridSpec& g) {
  GridSpec box = g;  // the box corners as a 2 x 2 (x 2) "patch": same linspace ends, same arithmetic
  const int nd = g.ndim;
  float grid[8 * 3];
  int n = 0;
  for (int m = 0; m < (1 << nd); ++m) {
    float p[3];
    for (int d = 0; d < nd; ++d) {
      const float lin0 = (1.0f - static_cast<float>(g.out_shape[d])) / 2.0f;
      p[d] = lin0 + static_cast<float>((m >> d) & 1 ? g.out_shape[d] - 1 : 0);
    }
    for (int r = 0; r < nd; ++r) {
      float acc = p[r];
      if (g.has_affine) {
        acc = p[0] * g.affine[r][0];
        for (int k = 1; k < nd; ++k) acc = acc + p[k] * g.affine[r][k];
      }
      const float half = static_cast<float>(static_cast<double>(g.in_shape[r]) / 2.0);
      grid[n++] = (acc + (g.shift[r] - 0.0f)) / half;
    }
  }
  for (int d = 0; d < nd; ++d) box.out_shape[d] = 1;
  box.out_shape[0] = 1 << nd;
  return MayReachOutside(box, grid);
}

void SampleLabels(const GridSpec& g, const int16_t* in, const float* grid, int16_t lowest_label, int64_t num_labels,
                  const LabelSampleOptions& opt, int16_t* out) {
  const int64_t n_out = NumOut(g);
  const int nd = g.ndim;
  Corners c;
  for (int64_t v = 0; v < n_out; ++v) {
    const float* gv = grid + v * nd;
    if (opt.fill_out_of_bounds && OutOfBounds(g, gv)) {
      out[v] = opt.fill_value;
      continue;
    }
    if (opt.mode == InterpMode::kNearest) {
      out[v] = NearestPaddedLabel(g, gv, in, opt.pad_first ? opt.pad_label : int16_t{0});
      continue;
    }
    LinearCorners(g, gv, c);
    out[v] = VoteLabel(g, gv, c, in, lowest_label, num_labels, opt);
  }
}

void SampleImageAndLabels(const GridSpec& g, const float* image, int64_t channels, const int16_t* seg,
                          int64_t seg_channels, const int16_t* lowest_label, const int64_t* num_labels,
                          const float* grid, const LabelSampleOptions& opt, float* image_out, int16_t* seg_out) {
  const int64_t n_out = NumOut(g), n_in = NumIn(g);
  const int nd = g.ndim;
  Corners c;
  for (int64_t v = 0; v < n_out; ++v) {
    const float* gv = grid + v * nd;
    LinearCorners(g, gv, c);
    for (int64_t ch = 0; ch < channels; ++ch) image_out[ch * n_out + v] = InterpolateLinear(c, nd, image + ch * n_in);
    const bool fill = opt.fill_out_of_bounds && OutOfBounds(g, gv);
    for (int64_t ch = 0; ch < seg_channels; ++ch) {
      seg_out[ch * n_out + v] =
          fill ? opt.fill_value : VoteLabel(g, gv, c, seg + ch * n_in, lowest_label[ch], num_labels[ch], opt);
    }
  }
}

namespace {
template <typename T>
void CropImpl(const T* in, int64_t channels, const int64_t* in_shape, const int64_t* out_shape, const int64_t* start,
              int ndim, T pad, T* out) {
  int64_t n_in = 1, n_out = 1;
  for (int d = 0; d < ndim; ++d) {
    n_in *= in_shape[d];
    n_out *= out_shape[d];
  }
  // Treat 2D as 3D with a leading unit axis.
  int64_t is[3] = {1, 1, 1}, os[3] = {1, 1, 1}, st[3] = {0, 0, 0};
  for (int d = 0; d < ndim; ++d) {
    is[3 - ndim + d] = in_shape[d];
    os[3 - ndim + d] = out_shape[d];
    st[3 - ndim + d] = start[d];
  }
  for (int64_t ch = 0; ch < channels; ++ch) {
    const T* src = in + ch * n_in;
    T* dst = out + ch * n_out;
    for (int64_t a = 0; a < os[0]; ++a) {
      const int64_t ia = st[0] + a;
      for (int64_t b = 0; b < os[1]; ++b) {
        const int64_t ib = st[1] + b;
        T* row = dst + (a * os[1] + b) * os[2];
        if (ia < 0 || ia >= is[0] || ib < 0 || ib >= is[1]) {
          std::fill(row, row + os[2], pad);
          continue;
        }
        const T* srow = src + (ia * is[1] + ib) * is[2];
        for (int64_t c = 0; c < os[2]; ++c) {
          const int64_t ic = st[2] + c;
          row[c] = (ic < 0 || ic >= is[2]) ? pad : srow[ic];
        }
      }
    }
  }
}
}  // namespace

void CropImage(const float* in, int64_t channels, const int64_t* in_shape, const int64_t* out_shape,
               const int64_t* start, int ndim, float pad, float* out) {
  CropImpl(in, channels, in_shape, out_shape, start, ndim, pad, out);
}
void CropLabels(const int16_t* in, int64_t channels, const int64_t* in_shape, const int64_t* out_shape,
                const int64_t* start, int ndim, int16_t pad, int16_t* out) {
  CropImpl(in, channels, in_shape, out_shape, start, ndim, pad, out);
}

void SmoothElasticComponent(float* field, const int64_t* shape, int ndim, double sigma, double magnitude) {
  // fourier_gaussian multiplies the DFT by exp(-2π²σ²(k/n)²) per axis (k the signed frequency index); that is a
  // circular convolution with the periodic kernel K(m) = (1/n) Σ_k exp(-2π²σ²(k/n)²) cos(2π k m / n).
  int64_t total = 1;
  for (int d = 0; d < ndim; ++d) total *= shape[d];
  std::vector<double> buf(field, field + total);
  std::vector<double> line, res;
  for (int axis = 0; axis < ndim; ++axis) {
    const int64_t n = shape[axis];
    std::vector<double> kernel(n, 0.0);
    for (int64_t m = 0; m < n; ++m) {
      double s = 0;
      for (int64_t k = 0; k < n; ++k) {
        const double kk = static_cast<double>(k < (n + 1) / 2 ? k : k - n) / static_cast<double>(n);
        s += std::exp(-2.0 * M_PI * M_PI * sigma * sigma * kk * kk) *
             std::cos(2.0 * M_PI * static_cast<double>(k * m % n) / static_cast<double>(n));
      }
      kernel[m] = s / static_cast<double>(n);
    }
    int64_t inner = 1;
    for (int d = axis + 1; d < ndim; ++d) inner *= shape[d];
    const int64_t outer = total / (inner * n);
    line.resize(n);
    res.resize(n);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        double* base = buf.data() + o * n * inner + i;
        for (int64_t m = 0; m < n; ++m) line[m] = base[m * inner];
        for (int64_t m = 0; m < n; ++m) {
          double s = 0;
          for (int64_t q = 0; q < n; ++q) s += kernel[(m - q + n) % n] * line[q];
          res[m] = s;
        }
        for (int64_t m = 0; m < n; ++m) base[m * inner] = res[m];
      }
  }
  float mx = 0.0f;
  for (int64_t i = 0; i < total; ++i) {
    field[i] = static_cast<float>(buf[i]);
    mx = std::max(mx, std::fabs(field[i]));
  }
  const float div = mx / static_cast<float>(std::max(magnitude, 1e-8));
  for (int64_t i = 0; i < total; ++i) field[i] = field[i] / div;
}

}  // namespace augmentd::kernels
