// augment/kernels/cuda/spatial.cu — the fused spatial kernel: one launch per batch.
//
// For each patch voxel j of sample b (pre-mirroring frame), bgv2's SpatialTransform pulls from the
// enlarged input patch at
//     u = A·(j − (P−1)/2) + shift,   n = u / (S/2),   x = ((n + 1)·S − 1)/2     (grid_sample, zeros,
// align_corners=False), evaluated with the same float operations as bgv2 + PyTorch's CPU grid_sample
// (no FMA contraction), so image and seg match the oracle bit for bit where rounding allows.
//  * image: Σ over in-bounds corners of value·weight, corners in grid_sample's order;
//  * seg: value of label u = fp16(Σ over corners labelled u of 1000·weight) (one-hot ×1000 sampled per
//    label); the voxel takes the label with the largest value, ties to the lowest label, and the patch's
//    lowest label when every value is 0 (no in-bounds corner with weight); then, with the −1 border,
//    voxels whose normalised coordinate is outside [−1 + 1/size, 1 − 1/size] become −1, where bgv2
//    pairs the flipped grid (x=axis 2, …) with sizes in array order (S0, S1, S2): the swapped-threshold
//    quirk of axes 0 and 2; bgv2 0.3.6's vote (kPadFirst, PadFirstVote): one or two corner labels voted inline
//    (FewLabelVote036), the other voxels (three or more labels, ties under tiebreak 1, and with pad votes a padding
//    label outside two labels whose corners sum below 999) queued per warp and voted 32 voxels at a time, the
//    queues' rests by the whole block after the loop (kDeferVote);
//  * no rotation/scale drawn: integer crop starting at floor(S/2) − floor(P/2) (half-voxel quirk).
// Elastic deformation (elastic.cu fields): the centred patch coordinate gets the sample's displacement before A,
// and the grid mean is subtracted from the shift (bgv2 center_deformation).
// Channels: one block per (brick, sample) resamples every channel, or (from kSplitMinChannels channels, the kSplit
// build) one block per (brick, sample, channel) with the seg voted by channel 0's blocks.
// Epilogue: Gaussian noise (Philox, augment/rng.h), per-channel statistics for the contrast stage, the
// seg written at its mirrored position with −1 → 0 and its deep-supervision picks, the mask byte; when
// no later image stage runs, the image goes straight to the output (brightness, mirroring, mask, dtype).
#include <algorithm>
#include <cstdlib>
#include <string>

#include "augment/kernels/cuda/common.cuh"
#include "augment/kernels/cuda/kernels.h"
#include "augment/kernels/cuda/spatial_math.h"
#include "augment/rng.h"

#ifndef AUGMENTD_PLAIN035  // bench A/B only: -DAUGMENTD_PLAIN035=0 builds kPlainLoads' kernels as before it
#define AUGMENTD_PLAIN035 1
#endif
// bench A/B only: 0 = the crops build (kCrops) compiled but never launched, 1 = launched, without its prefetch
#ifndef AUGMENTD_CROPS_BUILD
#define AUGMENTD_CROPS_BUILD 2
#endif
// bench A/B only: 0 builds the bgv2 0.3.6 (kPadFirst) 1-channel builds as before session 34 (no kDeferVote, and neither
// kPlainLoads' loads nor kRunningBuild's offsets)
#ifndef AUGMENTD_PAD_FIRST_TUNED
#define AUGMENTD_PAD_FIRST_TUNED 1
#endif
// bench A/B only (written in session 34): 1 = the queued 0.3.6 vote as PadFirstVoteKeys (packed float16 keys, no branch
// per corner) instead of PadFirstVote. H100, session 35: −0.7 % with the vote inline (call A), +4.6 % in the call that
// VoteQueuedVoxel is (call B); so off.
#ifndef AUGMENTD_PF_PACKED_KEYS
#define AUGMENTD_PF_PACKED_KEYS 0
#endif
// bench A/B only (session 35): 0 = kDeferVote's builds queue every voxel whose corners hold more than one label, as in
// session 34, instead of voting one or two labels inline (kFewVote, FewLabelVote036)
#ifndef AUGMENTD_PF_FEW
#define AUGMENTD_PF_FEW 1
#endif
// bench A/B only (session 37): 1 = kFewVote also decides, with pad votes, one or two labels with some corners out of
// bounds (FewLabelVote036's pad_decide: queued still where the padding label is neither and the two labels' corners sum
// below 999); 0 queues them all, as in session 35. H100, session 37 (bench/results/2026-12-06-s37-h100-h200.md):
// the 0.3.6 vote's cost on every transform on B=2 C=1 +10.9 % → +5.6 %, B=8 +11.8 % → +7.2 %; the 0.3.5 rows unchanged.
#ifndef AUGMENTD_PF_FEW_OOB
#define AUGMENTD_PF_FEW_OOB 1
#endif
// bench A/B only (session 35): 0 = each warp votes the rest of its own queue after the loop, as in session 34
#ifndef AUGMENTD_PF_POOL
#define AUGMENTD_PF_POOL 1
#endif
// bench A/B (session 44): 0 builds the vote as in session 43, without kUniformVote (below: a warp whose voxels' 8
// corner labels are each one label votes them all with SoleLabelVote)
#ifndef AUGMENTD_UNIFORM_VOTE
#define AUGMENTD_UNIFORM_VOTE 1
#endif

namespace augmentd::cuda::internal {
namespace {

struct SpatialArgs {
  Dims d;
  const SampleParams* params;
  const float* image;
  const int16_t* seg;
  const int32_t* lowest;  // may be null: use params[b].lowest_label
  float* x1;              // scratch output (pre-mirror frame), null when direct
  void* out_image;        // direct output (final frame), null when scratch
  OutDType out_dtype;
  int16_t* out_seg;
  uint8_t* mask;  // null unless the mask stage runs
  int remove_minus_one;
  int want_stats;  // accumulate stats of channels that are not blurred (contrast input)
  StatsSlot slot;
  const float* field;          // (B, 3, P) elastic fields, null when no sample deforms
  const ElasticStat* estat;    // (B, 3)
  const PipelineIO* io_dev;    // non-null: image, seg, out_seg, out_image (when set) are read from here (graph replay)
  // Shape constants of the grid normalisation (host-computed, read from the parameter bank): S, S/2, RN(2/S), and
  // the −1-border thresholds of array axis d (bgv2 compares flipped-grid entry 2−d with size[2−d]).
  float sf[3], half_s[3], rcp_half_s[3], lo[3], hi[3];
  int nbx;               // bricks along axis 2: blockIdx.x = by·nbx + bx
  float rcp_nbx, rcp_c;  // RN(1 / nbx), RN(1 / d.c) (DivSmall: the brick's row; the split build's sample)
};

// Patch voxel (j0, j1, j2)'s index in the output, axis d mirrored where bit d of `mirror` is set.
__device__ __forceinline__ int MirroredOffset(int j0, int j1, int j2, const int P[3], int mirror) {
  const int o0 = (mirror & 1) ? P[0] - 1 - j0 : j0, o1 = (mirror & 2) ? P[1] - 1 - j1 : j1;
  const int o2 = (mirror & 4) ? P[2] - 1 - j2 : j2;
  return (o0 * P[1] + o1) * P[2] + o2;
}

// bgv2 0.3.6's vote in the form this build runs (AUGMENTD_PF_PACKED_KEYS; the same label either way).
__device__ __forceinline__ int Vote036(const int* lab, const float* x1000, int nn_m, int pad, bool votes, int tiebreak,
                                       int lowest) {
  if constexpr (AUGMENTD_PF_PACKED_KEYS != 0) {
    return PadFirstVoteKeys(lab, x1000, nn_m, pad, votes, tiebreak, lowest);
  } else {
    return PadFirstVote(lab, x1000, nn_m, pad, votes, tiebreak, lowest);
  }
}

// kDeferVote's vote of one queued voxel (q: its ix and, as bits, its output offset) on the corners CornersAt gives
// again, stored to its seg and mask and, where `zero_image` and the label is negative, a 0 to its image (the direct
// path's mask channel). A call (AUGMENTD_PF_FLUSH_NOINLINE, bench A/B, session 35; 0 inlines it), so that the vote's
// registers are not the sampling loop's: the 0.3.6 no-noise build spills nothing (inline: 8 bytes), every transform
// on 0.3.6 B=2 C=1 −0.5 %, rotation + scaling −4.2 % (H100, call B). With PadFirstVoteKeys in the call: +4.6 %.
#ifndef AUGMENTD_PF_FLUSH_NOINLINE
#define AUGMENTD_PF_FLUSH_NOINLINE 1
#endif
#if AUGMENTD_PF_FLUSH_NOINLINE
#define AUGMENTD_PF_FLUSH_INLINE __noinline__
#else
#define AUGMENTD_PF_FLUSH_INLINE __forceinline__
#endif
__device__ AUGMENTD_PF_FLUSH_INLINE void VoteQueuedVoxel(float4 q, int s0, int s1, int s2, const int16_t* seg_b,
                                                         int pad, bool votes, int tiebreak, int lowest,
                                                         bool remove_minus_one, int16_t* seg_out, uint8_t* mask_out,
                                                         bool zero_image, void* image, OutDType dtype,
                                                         int64_t image_base) {
  const float qix[3] = {q.x, q.y, q.z};
  const int S[3] = {s0, s1, s2};
  const int qo = __float_as_int(q.w);
  const TrilinearCorners qc = CornersAt(qix, S);
  int lab[8];
  float x1000[8];
#pragma unroll
  for (int m = 0; m < 8; ++m) {
    lab[m] = CornerInBounds(qc, m) ? static_cast<int>(__ldg(seg_b + qc.off[m])) : INT32_MIN;
    x1000[m] = __fmul_rn(1000.f, qc.w[m]);
  }
  const int l = Vote036(lab, x1000, NearestCorner(qix, qc), pad, votes, tiebreak, lowest);
  seg_out[qo] = static_cast<int16_t>((remove_minus_one && l == -1) ? 0 : l);
  if (mask_out != nullptr) mask_out[qo] = l < 0 ? 1 : 0;
  if (zero_image && l < 0) StoreOut(image, dtype, image_base + qo, 0.f);
}

// Component d (0, 1, 2) of v's x, y, z; d a compile-time constant after unrolling.
__device__ __forceinline__ float Axis(const float4& v, int d) { return d == 0 ? v.x : (d == 1 ? v.y : v.z); }

// The permuted build's staging of one brick in shared memory (kStagePermute): padded strides, so that a warp reading
// 8 or 16 voxels along any brick axis (the output's contiguous axis) hits distinct banks.
constexpr int kPermStride1 = kBrickX + 1, kPermStride0 = kBrickY * kPermStride1 + 1;
constexpr int kPermBrickVox = kBrickZ * kPermStride0;

// Stores a block's staged brick (origin org, extents ext ≤ the brick: partial at the patch's far faces) through the
// sample's signed permutation (SampleParams::out_axis, mirror bits): patch voxel j goes to o with
// o[axis[d]] = flip_d ? P_d − 1 − j_d : j_d. The brick maps onto a box of the output whose contiguous axis the
// threads walk, so the stores coalesce whatever axis the permutation moves there (a store per voxel from the
// sampling loop would scatter: the warp's 4 × 8 tile lies across it).
template <int kCT>
__device__ void StorePermutedBrick(const float* sh_img, const int16_t* sh_lab, const int org[3], const int P[3],
                                   const int axis[3], int mirror, int b, int C, int out_n, int16_t* out_seg,
                                   void* out_image, OutDType dtype) {
  const int bstride[3] = {kPermStride0, kPermStride1, 1};
  int oext[3], omin[3], ss[3];
  int base = 0;
#pragma unroll
  for (int d = 0; d < 3; ++d) {
    const int ext = min(d == 0 ? kBrickZ : (d == 1 ? kBrickY : kBrickX), P[d] - org[d]);
    const bool flip = (mirror >> d) & 1;
    const int e = axis[d];
    oext[e] = ext;
    // Output offset t along e: j_d = org_d + t unflipped; flipped, o_e = omin_e + t and j_d = P_d − 1 − o_e, i.e.
    // the brick's local coordinate ext − 1 − t.
    omin[e] = flip ? P[d] - org[d] - ext : org[d];
    ss[e] = flip ? -bstride[d] : bstride[d];
    if (flip) base += (ext - 1) * bstride[d];
  }
  const int cw = oext[2] <= 8 ? 8 : 16;  // threads along the output's contiguous axis
  const int col = threadIdx.x & (cw - 1), row = threadIdx.x / cw, rows_per_pass = kThreads / cw;
  const int rows = oext[0] * oext[1];
  int t0 = row / oext[1], t1 = row % oext[1];
  const int64_t seg_base = static_cast<int64_t>(b) * out_n;
  for (int r = row; r < rows; r += rows_per_pass) {
    if (col < oext[2]) {
      const int sidx = base + t0 * ss[0] + t1 * ss[1] + col * ss[2];
      const int o = ((omin[0] + t0) * P[1] + omin[1] + t1) * P[2] + omin[2] + col;
      out_seg[seg_base + o] = sh_lab[sidx];
#pragma unroll
      for (int c = 0; c < kCT; ++c) {
        if (c >= C) continue;
        StoreOut(out_image, dtype, (static_cast<int64_t>(b) * C + c) * out_n + o, sh_img[c * kPermBrickVox + sidx]);
      }
    }
    t1 += rows_per_pass;
    while (t1 >= oext[1]) {
      t1 -= oext[1];
      ++t0;
    }
  }
}

// The centre crop at output voxel (j0, j1, j2) (integer start floor(S/2) − floor(P/2)): channels c < C of img_b into
// val (0 outside the input), and the label (seg_block; outside the input −1 with border_m1, else 0; 0 in the other
// channels' blocks of a split launch).
template <int kCT>
__device__ __forceinline__ void CropGather(const float* img_b, const int16_t* seg_b, int64_t in_n, const int* S,
                                           const int* P, int j0, int j1, int j2, int C, bool seg_block, bool border_m1,
                                           float* val, int& label) {
  const int s0 = S[0] / 2 - P[0] / 2 + j0, s1 = S[1] / 2 - P[1] / 2 + j1, s2 = S[2] / 2 - P[2] / 2 + j2;
  const bool inb = s0 >= 0 && s0 < S[0] && s1 >= 0 && s1 < S[1] && s2 >= 0 && s2 < S[2];
  const int64_t off = inb ? (static_cast<int64_t>(s0) * S[1] + s1) * S[2] + s2 : 0;
#pragma unroll
  for (int c = 0; c < kCT; ++c) val[c] = (c < C && inb) ? __ldg(img_b + c * in_n + off) : 0.f;
  label = !seg_block ? 0 : (inb ? static_cast<int>(__ldg(seg_b + off)) : (border_m1 ? -1 : 0));
}

// kNoise = false: built without the noise epilogue (no sample of the batch draws noise: fewer registers).
// kPadFirst: BatchShape::seg_pad_first, the bgv2 0.3.6 vote (each build holds one vote: registers as the 0.3.5 one).
// kPermute: kStagePermute, direct path only — the outputs are staged per brick in shared memory and stored through
// the sample's signed permutation (StorePermutedBrick); the sampling itself is the same code.
// kSplit (kCT == 1, not kPermute; from kSplitMinChannels): one block per channel, grid.z = B·C; block (b, c)
// resamples channel c alone, and only channel 0's blocks vote the seg and write seg and mask.
// kCrops (no kStageResample: every sample of the batch is a centre crop, SampleParams::use_crop): the resampling path
// compiled out, and with it the coordinates' invariants and the vote (the crop path does not depend on kPadFirst).
template <int kCT, int kMinBlocks, bool kNoise, bool kPadFirst, bool kPermute = false, bool kSplit = false,
          bool kCrops = false>
__global__ void __launch_bounds__(kThreads, kMinBlocks) SpatialKernel(const SpatialArgs a) {
  static_assert(!kSplit || (kCT == 1 && !kPermute), "the channel split runs the plain 1-channel build");
  static_assert(!kCrops || !kPadFirst, "the crop path has no vote: one crops build serves both");
  const BlockClockScope clocks(kClockSpatial);  // block_clocks.cuh: a bench build's timeline, nothing otherwise
  ChainTrigger();  // several waves: the chain's next pass launches once the last one has started (common.cuh)
  // The grid is (nbx·nby, nbz, B or B·C) (LaunchSpatial): the brick's plane bz is blockIdx.y, its row and column
  // (by, bx) come from blockIdx.x by one DivSmall, and the sample (split: sample·C + channel) is blockIdx.z. The grid
  // (bricks, B or B·C) before session 52 cost every warp three signed 32-bit divisions for the brick's position (the
  // split build one more for the sample, the table warp two more): ≈ 90 of a warp's ≈ 340 instructions before its
  // first step. H100, NOTES.md s52, same call against that grid: the spatial kernel's warp instructions −1.95 %, every
  // transform on B=2 C=1 −1.1 %, C=4 −1.1 %, B=8 −1.0 %. The same bits: each brick's index (its statistics partial's
  // slot, reduced in index order) and the bricks' count are that grid's.
  const int zi = blockIdx.z;
  const int b = kSplit ? DivSmall(zi, a.d.c, a.rcp_c) : zi;
  const int c0 = kSplit ? zi - b * a.d.c : 0;
  const int by = DivSmall(blockIdx.x, a.nbx, a.rcp_nbx);
  const int bx = static_cast<int>(blockIdx.x) - by * a.nbx;
  const bool seg_block = c0 == 0;  // votes the seg, writes seg and mask
  const SampleParams& sp = a.params[b];
  const int Ct = a.d.c;          // channels of the batch; 0 in a seg-only launch (LaunchSpatial)
  const int C = kSplit ? 1 : Ct;  // channels this block resamples: c0 … c0 + C − 1
  const int P[3] = {a.d.out[0], a.d.out[1], a.d.out[2]};
  const int S[3] = {a.d.in[0], a.d.in[1], a.d.in[2]};
  const int64_t in_n = a.d.in_n;
  const int out_n = static_cast<int>(a.d.out_n);
  const bool crop = kCrops || sp.use_crop != 0;  // kCrops: the host's word (kStageResample absent)
  const int mirror = sp.mirror_mask;
  const bool border_m1 = sp.seg_border_minus_one != 0;
  const int lowest = a.lowest ? a.lowest[b] : sp.lowest_label;
  const float noise_sigma = kNoise ? sp.noise_sigma : 0.f;
  // Batch buffers: kernel arguments, or (graph replay) the PipelineIO in device memory.
  const float* image = a.image;
  const int16_t* seg = a.seg;
  int16_t* out_seg = a.out_seg;
  void* out_image = a.out_image;
  if (a.io_dev != nullptr) {
    image = a.io_dev->image;
    seg = a.io_dev->seg;
    out_seg = a.io_dev->out_seg;
    if (out_image != nullptr) out_image = a.io_dev->out_image;
  }
  // Per-sample constants live in shared memory (registers are the occupancy limit of this kernel).
  __shared__ float sh_shift[3];
  // Elastic: offset_e = field_e / div_e; u = A·(g + offset) + (shift − mean), mean = A·mean(offset) (the grid mean
  // of bgv2's center_deformation; the centred base grid has mean 0).
  __shared__ float sh_A[9], sh_div[3], sh_add[3];
  const bool elastic = !kCrops && a.field != nullptr && sp.elastic != 0;
  if (elastic && threadIdx.x < 3) {
    const int d = threadIdx.x;
    double mean = 0.0;
    for (int e = 0; e < 3; ++e) {
      const ElasticStat st = a.estat[b * 3 + e];
      const float div = __fdiv_rn(__uint_as_float(st.max_bits), sp.elastic_magnitude[e]);
      if (d == 0) sh_div[e] = div;
      sh_A[3 * d + e] = sp.matrix[3 * d + e];
      mean += static_cast<double>(sp.matrix[3 * d + e]) * (st.sum / static_cast<double>(div) /
                                                           static_cast<double>(a.d.out_n));
    }
    sh_add[d] = __fsub_rn(sp.shift[d], sp.elastic_center ? static_cast<float>(mean) : 0.f);
  }
  // kInvariantsShared: the loop invariants of the coordinates in shared memory, not registers: A[d][0] per sample and
  // the column terms A[d][1]·g1, A[d][2]·g2 (g1, g2 depend on j1, j2 alone: one entry per brick row / column), three
  // vector loads a voxel; also each thread's noise quads (nq below). At the 64-register cap of the 1-channel builds
  // this frees 9 registers (13 in the noise builds): spilled bytes 4-24 → 0-8 (ptxas -v), and the all-on build's 8
  // image gathers issued back to back again (one at a time before, NOTES.md s18; bench/sass_loads_in_flight.py counts
  // them). Chosen per build from a screen on the H200 (NOTES.md s19, same call, against session 18's kernels): faster
  // in the 0.3.5 noise build (all-on B=2 C=1 −4.7 %, B=8 −6.2 %), the 0.3.5 split builds (all-on C=4 −2.0 %, rotation +
  // scaling C=4 −6.5 %) and the 0.3.6 build without noise (rotation + scaling −9.5 %); slower in the 0.3.5 build
  // without noise (+5.6 %: its gathers stayed serial, the table loads came on top; since s20 it takes the tables with
  // kPlainLoads below) and the 0.3.6 noise build (all-on +2.1 %), which keeps the registers, as do the builds not
  // measured with it (2-8 channels, permuted, the 0.3.6 split). s19's tree, same call: all-on B=2 C=1 −4.9 %, B=8
  // −5.7 %, C=4 −1.8 %, rotation + scaling 0.3.6 −8.2 %.
  // kPlainLoads (kPlain035 before session 34; the 1-channel builds without noise, whole or split, for batches where
  // some sample resamples; the 0.3.6 ones since s34):
  // the tables below, the seg labels gathered before the image (kLabelsFirst) and the statistics staged in shared
  // memory (kStatsShared), so that both sets of 8 gathers are issued back to back (one image gather at a time before,
  // with the invariants in registers or in the tables alone; NOTES.md s20). H200, against the tree without it, same
  // calls: spatial-only bandwidth kernel −6.0 %, rotation + scaling B=2 C=1 −4.7 % (whole build), C=4 −10.8 % (split
  // build). Its crop path was slower (s21, default probabilities B=2 C=1, batches of crops alone +3 … +9 % against the
  // tree without it): those batches run the kCrops build instead (unless AUGMENTD_CROPS_BUILD=0). The 0.3.6 builds
  // take it with kRunningBuild and kDeferVote below (s34); their split ones without the tables (kInvariantsShared).
  constexpr bool kPlainLoads = AUGMENTD_PLAIN035 && !kCrops && kCT == 1 && kMinBlocks == 4 && !kNoise &&
                               (!kPadFirst || AUGMENTD_PAD_FIRST_TUNED) && !kPermute;
  constexpr bool kInvariantsShared =
      !kCrops && kCT == 1 && kMinBlocks == 4 && !kPermute &&
      (kPadFirst ? !kNoise && !kSplit : kNoise || kSplit || kPlainLoads);
  constexpr int kTableRows = kInvariantsShared ? kBrickY : 1, kTableCols = kInvariantsShared ? kBrickX : 1;
  static_assert(kThreads >= 32 + kBrickY + kBrickX, "threads 32 … 32 + kBrickY + kBrickX − 1 fill the tables");
  __shared__ float4 sh_a0, sh_col1[kTableRows], sh_col2[kTableCols];
  if (threadIdx.x < 3) {
    const int d = threadIdx.x;
    sh_shift[d] = sp.shift[d];
    if (kInvariantsShared) reinterpret_cast<float*>(&sh_a0)[d] = sp.matrix[3 * d];
  } else if (kInvariantsShared && threadIdx.x >= 32 && threadIdx.x < 32 + kBrickY + kBrickX) {
    const int t = threadIdx.x - 32, e = t < kBrickY ? 1 : 2;  // matrix column: 1 for rows (j1), 2 for columns (j2)
    const int jj = e == 1 ? by * kBrickY + t : bx * kBrickX + t - kBrickY;
    const float g = __fsub_rn(static_cast<float>(jj), 0.5f * static_cast<float>(P[e] - 1));
    float* col = reinterpret_cast<float*>(e == 1 ? &sh_col1[t] : &sh_col2[t - kBrickY]);
#pragma unroll
    for (int d = 0; d < 3; ++d) col[d] = __fmul_rn(sp.matrix[3 * d + e], g);
  }
  // The sample's input base pointers go through shared memory: opaque to the compiler, they stay one register pair
  // each and every gather is one wide multiply-add of its 32-bit offset (folding b·C·in_n into each gather's 64-bit
  // address cost ~5 instructions per gather).
  __shared__ const float* sh_img_b;
  __shared__ const int16_t* sh_seg_b;
  // kRunningBuild: the builds that keep their output bases in shared memory too (kOutBases; read at each store, so
  // that a store is one wide multiply-add of its 32-bit offset, not a 64-bit b·out_n + o a step) and advance the
  // step's offsets j and o by one plane a step (kRunningOffsets below). Together at the 64-register cap they save
  // more than either alone (two fewer 64-bit values to re-derive). Measured in these builds only, the 1-channel 0.3.5
  // ones with 4 blocks per SM (H100, same call against the tree without them, NOTES.md s32: every transform on B=2
  // C=1 −2.5 %, C=4 −1.3 %, B=8 −0.9 %, default probabilities C=4 −3.7 %, C=1 +0.7 %: within that row's rounds);
  // the multi-channel and permuted builds spill more with them (4 channels with noise 8 → 24 bytes, permuted 0 → 4;
  // NOTES.md s28) and keep theirs. The 0.3.6 1-channel builds take them since s34, with kPlainLoads and kDeferVote
  // (alone, s28: 0.3.6 without noise spilled 24 → 32 bytes); their figures are kDeferVote's.
  constexpr bool kRunningBuild =
      !kCrops && kCT == 1 && kMinBlocks == 4 && (!kPadFirst || AUGMENTD_PAD_FIRST_TUNED) && !kPermute;
  constexpr bool kOutBases = kRunningBuild;
  __shared__ int16_t* sh_out_seg_b;
  __shared__ uint8_t* sh_mask_b;
  __shared__ float* sh_x1_b;
  if (threadIdx.x == 0) {
    sh_img_b = image + (static_cast<int64_t>(b) * Ct + c0) * in_n;
    sh_seg_b = seg + static_cast<int64_t>(b) * in_n;
    if (kOutBases) {
      sh_out_seg_b = out_seg + static_cast<int64_t>(b) * out_n;
      sh_mask_b = a.mask != nullptr ? a.mask + static_cast<int64_t>(b) * out_n : nullptr;
      sh_x1_b = a.x1 != nullptr ? a.x1 + (static_cast<int64_t>(b) * Ct + c0) * out_n : nullptr;
    }
  }
  // The noise keys (substream 1 + c; 0 = parameter draws) are block-uniform. Builds for 4+ channels keep them in
  // shared memory (read where a Philox block is computed) instead of 4 registers per channel: that is what leaves the
  // 4-channel build room for the shared noise blocks below (ptxas -v, noise build: 20 spilled bytes with the keys in
  // registers, 0 / 4 in shared memory). The 1-2 channel builds keep them in registers (shared keys: +0…+24 spilled
  // bytes there).
  constexpr bool kKeysShared = kCT >= 4;
  __shared__ StreamKey sh_keys[kCT];
  if (threadIdx.x < kCT) {
    sh_keys[threadIdx.x] = MakeStreamKey(sp.seed, sp.sample_index, sp.noise_transform_index, 1u + c0 + threadIdx.x);
  }
  __syncthreads();
  const float* img_b = sh_img_b;
  const int16_t* seg_b = sh_seg_b;
  StreamKey reg_keys[kKeysShared ? 1 : kCT];
  float bright[kCT];
  bool stat_ch[kCT];
  bool mask_ch[kCT];
  // kStatsShared: each thread's voxel values wait in shared memory (8 KB a block) and are reduced after the loop, in
  // the loop's order (same partials), instead of holding the 6 registers of a Partial through the loop.
  constexpr bool kStatsShared = kPlainLoads;
  __shared__ float sh_stat[kStatsShared ? kVoxPerThread : 1][kStatsShared ? kThreads : 1];
  Partial part[kCT];
#pragma unroll
  for (int c = 0; c < kCT; ++c) {
    if (!kKeysShared) reg_keys[kKeysShared ? 0 : c] = sh_keys[c];
    bright[c] = c < C ? sp.ch[c0 + c].brightness : 1.f;
    stat_ch[c] = a.want_stats && c < C && sp.ch[c0 + c].blur_sigma[0] == 0.f;
    mask_ch[c] = c < C && sp.ch[c0 + c].mask != 0;
    part[c] = EmptyPartial();
  }

  // Brick of kBrickZ x kBrickY x kBrickX voxels; a warp covers 4 (axis 1) x 8 (axis 2) per step in axis 0.
  const int brick = blockIdx.x + gridDim.x * blockIdx.y;  // the brick's index among the sample's (statistics partials)
  const int nbricks = gridDim.x * gridDim.y;
  const int bz = blockIdx.y;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int j2 = bx * kBrickX + (warp & 1) * 8 + (lane & 7);
  const int j1 = by * kBrickY + (warp >> 1) * 4 + (lane >> 3);
  const int l1 = (warp >> 1) * 4 + (lane >> 3), l2 = (warp & 1) * 8 + (lane & 7);  // brick-local j1, j2 (tables)
  const int z_first = bz * kBrickZ;
  const bool col_ok = j1 < P[1] && j2 < P[2];
  // kPermute: this thread's slot in the staged brick (brick-local j1, j2; axis 0 is the loop step).
  __shared__ float sh_pimg[kPermute ? kCT * kPermBrickVox : 1];
  __shared__ int16_t sh_plab[kPermute ? kPermBrickVox : 2];
  const int pslot = ((warp >> 1) * 4 + (lane >> 3)) * kPermStride1 + (warp & 1) * 8 + (lane & 7);
  // Shared noise blocks (see the loop) for 1-4 channels when rows are whole Philox blocks; bit-identical to
  // NormalAt (rng.h: NormalAt(key, i) == NormalBlock(key, i / 4)[i % 4]). Per channel and voxel this is a quarter
  // of a Philox block + Box–Muller pair (≈ 71 instructions, NOTES.md s4) instead of a whole one (≈ 190 for one
  // normal out of four): the one per-channel cost of this kernel that was not amortised over the lanes of a quad.
  // 4 channels: 128 registers, 0 spilled bytes (0.3.5 vote) / 4 (0.3.6 vote) with the keys in shared memory; 8
  // channels keep NormalAt (nq would be 32 more registers at the 128-register cap). kInvariantsShared: each thread's
  // quads in shared memory (4 KB a block), the pick one load instead of two selects on the bits of r.
  constexpr bool kShareNoise = kNoise && kCT <= 4;
  constexpr bool kQuadsShared = kShareNoise && kInvariantsShared;
  const bool share_noise = noise_sigma != 0.f && (P[2] & 3) == 0;
  __shared__ float sh_nq[kQuadsShared ? 4 : 1][kQuadsShared ? kThreads : 1];
  float nq[kQuadsShared ? 1 : kCT][4];
  // !kInvariantsShared: the coordinates' loop invariants in registers, loaded once (stores in the loop could alias the
  // parameter array as far as the compiler knows).
  float col1[3], col2[3], a0[3];
  if constexpr (!kInvariantsShared && !kCrops) {
    const float g1 = __fsub_rn(static_cast<float>(j1), 0.5f * static_cast<float>(P[1] - 1));
    const float g2 = __fsub_rn(static_cast<float>(j2), 0.5f * static_cast<float>(P[2] - 1));
#pragma unroll
    for (int d = 0; d < 3; ++d) {
      col1[d] = __fmul_rn(sp.matrix[3 * d + 1], g1);
      col2[d] = __fmul_rn(sp.matrix[3 * d + 2], g2);
      a0[d] = sp.matrix[3 * d];
    }
  }
  // kCrops: every step's crop gathers issued before the loop (one predicated load each, nothing between them), all of
  // a thread's in flight at once; the loop is unrolled to read them from registers. Elsewhere a step's gathers wait
  // for the previous step's stores (the loop is not unrolled: registers).
  constexpr bool kPrefetch = kCrops && AUGMENTD_CROPS_BUILD >= 2;
  constexpr int kPre = kPrefetch ? kVoxPerThread : 1;
  float pre_val[kPre][kCT];
  int pre_label[kPre];
  if constexpr (kPrefetch) {
#pragma unroll
    for (int k = 0; k < kVoxPerThread; ++k) {
      const int j0 = z_first + k;
      if (j0 < P[0] && col_ok) {
        CropGather<kCT>(img_b, seg_b, in_n, S, P, j0, j1, j2, C, seg_block, border_m1, pre_val[k], pre_label[k]);
      }
    }
  }
  // kDeferVote (the 0.3.6 1-channel builds with 4 blocks an SM, not split): a voxel whose corners hold more than one
  // label (or, with pad votes, one out of bounds) is not voted where it is sampled, inside a warp whose other lanes
  // wait for it, but queued per warp (its coordinate ix and output offset, 16 bytes) and voted 32 at a time: at the
  // top of the step once 32 wait, and after the loop. The vote is Vote036 on the same corners (CornersAt); the queued
  // voxel's seg and mask are stored by the flush, and (direct path, mask channel) its image zeroed there when its label
  // is negative. Inline, the vote cost a whole warp PadFirstVote's triangular sums whenever one lane needed them, and
  // its registers the loop's (spills). H100, NOTES.md s34, 0.3.6 rows, digests unchanged. Against session 33's tree
  // (-DAUGMENTD_PAD_FIRST_TUNED=0), same call, best of 3 rounds, with kRunningBuild and kPlainLoads: every transform on
  // B=2 C=1 0.2557 → 0.2467 ms (−3.5 %), B=8 −1.9 %, rotation + scaling B=2 C=1 0.1497 → 0.1341 (−10.4 %). Without
  // those two it won nothing in the noise build (+0.3 %, call B). Not in the split builds: C=4 +1.4 % with it, −1.4 %
  // with the other two alone (call B). The fast check on raw labels (below) then, same call against the tree without
  // it: every transform on −1.9 %, B=8 −1.6 %, rotation + scaling −6.3 % (call D).
  // Session 35 (H100, NOTES.md s35, digests unchanged): one or two labels voted inline (kFewVote, below), so that
  // only about the voxels of three or more labels are queued: every transform on 0.3.6 B=2 C=1 0.2437 → 0.2351 ms
  // (−3.5 %), B=8 −5.5 % (call A); then the queues' rests pooled by the block after the loop, and the queued vote a
  // call (VoteQueuedVoxel, AUGMENTD_PF_FLUSH_NOINLINE): 0.2355 → 0.2321 ms, rotation + scaling −4.5 % (call B).
  constexpr bool kDeferVote =
      AUGMENTD_PAD_FIRST_TUNED && kPadFirst && kCT == 1 && kMinBlocks == 4 && !kPermute && !kCrops && !kSplit;
  // A flush leaves < 32 queued, a step adds ≤ 32. A ring of 256 that holds all a warp's voxels, so that nothing is
  // voted inside the loop, was slower (H100, session 37: +0.6 % on every transform on 0.3.6 B=2, +6.0 % on rotation +
  // scaling; 32 KB of shared memory a block) and its switch removed.
  constexpr int kVoteQueue = 64;
  constexpr bool kFlushInLoop = kVoteQueue < 32 * kVoxPerThread;
  static_assert(kVoteQueue >= 64 && (kVoteQueue & (kVoteQueue - 1)) == 0, "a power of two that a flush can leave");
  __shared__ float4 sh_vq[kDeferVote ? kThreads / 32 : 1][kDeferVote ? kVoteQueue : 1];
  __shared__ int2 sh_qrest[kDeferVote ? kThreads / 32 : 1];  // each warp's q_head, q_len after the loop
  // The lanes that sample (col_ok: the same every step) enqueue with one ballot; q_len is theirs, and every lane takes
  // the lead lane's at the flush, where all 32 meet.
  const unsigned q_ok = kDeferVote ? __ballot_sync(0xffffffffu, col_ok) : 0u;
  const int q_lead = q_ok != 0u ? __ffs(q_ok) - 1 : 0;
  int q_head = 0, q_len = 0;
  // Votes entry e of warp w's queue and stores its seg, mask and (direct path, mask channel, negative label) zeroed
  // image.
  const auto vote_queued = [&](int w, int e) {
    const int64_t base = static_cast<int64_t>(b) * out_n;
    VoteQueuedVoxel(sh_vq[w][e], S[0], S[1], S[2], seg_b, border_m1 ? -1 : 0, sp.pad_votes != 0, sp.seg_tiebreak,
                    lowest, a.remove_minus_one != 0, kOutBases ? sh_out_seg_b : out_seg + base,
                    a.mask == nullptr ? nullptr : (kOutBases ? sh_mask_b : a.mask + base),
                    a.x1 == nullptr && mask_ch[0], out_image, a.out_dtype, (static_cast<int64_t>(b) * Ct + c0) * out_n);
  };
  // kRunningOffsets (kRunningBuild's): j and o of step k, advanced by the loop (o runs backwards when axis 0 is
  // mirrored). Unsigned: the last step's advance may pass the volume's end (wraps, never used). The crops build's
  // unrolled loop computes them from constants (with them: 34 spilled bytes).
  constexpr bool kRunningOffsets = kRunningBuild;
  const unsigned plane_n = static_cast<unsigned>(P[1] * P[2]);
  const unsigned o_step = (mirror & 1) ? 0u - plane_n : plane_n;
  unsigned j_run = static_cast<unsigned>((z_first * P[1] + j1) * P[2] + j2);
  unsigned o_run = static_cast<unsigned>(
      (((mirror & 1) ? P[0] - 1 - z_first : z_first) * P[1] + ((mirror & 2) ? P[1] - 1 - j1 : j1)) * P[2] +
      ((mirror & 4) ? P[2] - 1 - j2 : j2));
#pragma unroll(kPrefetch ? kVoxPerThread : 1)
  for (int k = 0; k < kVoxPerThread; ++k, j_run += plane_n, o_run += o_step) {
    const int j0 = z_first + k;
    if (j0 >= P[0]) break;  // block-uniform
    if constexpr (kDeferVote && kFlushInLoop) {
      q_len = __shfl_sync(0xffffffffu, q_len, q_lead);
      if (q_len >= 32) {
        __syncwarp();  // the entries (and a queued voxel's image store) visible to every lane
        vote_queued(warp, (q_head + lane) & (kVoteQueue - 1));
        __syncwarp();  // read before the step's enqueues reuse the slots
        q_head = (q_head + 32) & (kVoteQueue - 1);
        q_len -= 32;
      }
    }
    if (kShareNoise && share_noise && (k & 3) == 0) {
      // Noise of the next 4 steps, one Philox block per lane: the 4 lanes of a quad (same j1, j2 = 4-aligned
      // quad, P2 % 4 == 0) need the 4 normals of block j >> 2 at each step; lane q computes the block of step
      // k + q and the quad transposes through 4 shuffles (round r: lane q receives element q of the block of
      // step k + ((q + r) & 3)). Out-of-range lanes compute and pass on values nobody uses.
      const int q = lane & 3;
      const int jq = ((z_first + k + q) * P[1] + j1) * P[2] + (j2 & ~3);
#pragma unroll
      for (int c = 0; c < kCT; ++c) {
        if (c >= C) continue;
        float nb[4];
        NormalBlock(kKeysShared ? sh_keys[c] : reg_keys[kKeysShared ? 0 : c], static_cast<uint64_t>(jq) >> 2, nb);
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int e = (q - r) & 3;
          const float send = e == 0 ? nb[0] : (e == 1 ? nb[1] : (e == 2 ? nb[2] : nb[3]));
          const float got = __shfl_sync(0xffffffffu, send, (lane & ~3) | ((q + r) & 3));
          if constexpr (kQuadsShared) {
            sh_nq[r][threadIdx.x] = got;  // read back by this thread only (c == 0: one channel)
          } else {
            nq[c][r] = got;
          }
        }
      }
    }
    if (!col_ok) continue;
    const int j = kRunningOffsets ? static_cast<int>(j_run) : (j0 * P[1] + j1) * P[2] + j2;
    float val[kCT];
    int label;
    bool deferred = false;  // kDeferVote: the label comes from the warp's queue (seg and mask stored there)
    if constexpr (kPrefetch) {
#pragma unroll
      for (int c = 0; c < kCT; ++c) val[c] = pre_val[k][c];
      label = pre_label[k];
    } else if (crop) {
      CropGather<kCT>(img_b, seg_b, in_n, S, P, j0, j1, j2, C, seg_block, border_m1, val, label);
    } else {
      const float g0 = __fsub_rn(static_cast<float>(j0), 0.5f * static_cast<float>(P[0] - 1));
      float ix[3], pe[3];
      bool oob = false;
      if (elastic) {
        // The CPU's order: p = g + offset; ((p0·A[d][0] + p1·A[d][1]) + p2·A[d][2]) + (shift − mean).
        const float* fb = a.field + static_cast<int64_t>(b) * 3 * out_n + j;
        pe[0] = __fadd_rn(g0, __fdiv_rn(__ldg(fb), sh_div[0]));
        pe[1] = __fadd_rn(__fsub_rn(static_cast<float>(j1), 0.5f * static_cast<float>(P[1] - 1)),
                          __fdiv_rn(__ldg(fb + out_n), sh_div[1]));
        pe[2] = __fadd_rn(__fsub_rn(static_cast<float>(j2), 0.5f * static_cast<float>(P[2] - 1)),
                          __fdiv_rn(__ldg(fb + 2 * out_n), sh_div[2]));
      }
      float4 a0v, c1v, c2v;  // kInvariantsShared: this voxel's invariants (x, y, z = axis d)
      if constexpr (kInvariantsShared) {
        a0v = sh_a0;
        c1v = sh_col1[l1];
        c2v = sh_col2[l2];
      }
#pragma unroll
      for (int d = 0; d < 3; ++d) {
        float u;
        if (elastic) {
          u = __fadd_rn(__fadd_rn(__fmul_rn(pe[0], sh_A[3 * d]), __fmul_rn(pe[1], sh_A[3 * d + 1])),
                        __fmul_rn(pe[2], sh_A[3 * d + 2]));
          u = __fadd_rn(u, sh_add[d]);
        } else {
          // ((A[d][0]·g0 + A[d][1]·g1) + A[d][2]·g2) + shift, in this order (column terms are per thread).
          float ad, c1d, c2d;
          if constexpr (kInvariantsShared) {
            ad = Axis(a0v, d);
            c1d = Axis(c1v, d);
            c2d = Axis(c2v, d);
          } else {
            ad = a0[d];
            c1d = col1[d];
            c2d = col2[d];
          }
          u = __fadd_rn(__fadd_rn(__fmul_rn(ad, g0), c1d), c2d);
          u = __fadd_rn(u, sh_shift[d]);
        }
        const float n = DivByReciprocal(u, a.half_s[d], a.rcp_half_s[d]);  // == u / (S/2), IEEE (spatial_math.h)
        oob |= (n < a.lo[d]) || (n > a.hi[d]);
        ix[d] = __fmul_rn(__fsub_rn(__fmul_rn(__fadd_rn(n, 1.f), a.sf[d]), 1.f), 0.5f);
      }
      // grid_sample: x = axis 2 (w), y = axis 1 (h), z = axis 0 (d).
      const TrilinearCorners cn = CornersAt(ix, S);
      const float* w = cn.w;
      const int* off = cn.off;
      constexpr bool kLabelsFirst = kPlainLoads;  // the corner labels loaded before the image gathers
      int raw_first[kLabelsFirst ? 8 : 1];
      if constexpr (kLabelsFirst) {
        if (seg_block) {
#pragma unroll
          for (int m = 0; m < 8; ++m) raw_first[m] = static_cast<int>(__ldg(seg_b + off[m]));
        }
      }
#pragma unroll
      for (int c = 0; c < kCT; ++c) {
        float acc = 0.f;
        if (c < C) {
          const float* src = img_b + c * in_n;
          float v[8];
#pragma unroll
          for (int m = 0; m < 8; ++m) v[m] = __ldg(src + off[m]);
#pragma unroll
          for (int m = 0; m < 8; ++m) acc = __fadd_rn(acc, __fmul_rn(v[m], w[m]));
        }
        val[c] = acc;
      }
      label = 0;
      if (seg_block) {  // block-uniform: the other channels' blocks of a split launch skip the vote
        // Label vote over the corner labels; an out-of-bounds corner (weight +0) carries the label each vote expects.
        // The branch-free 0.3.5 vote in the builds it was measured faster in: the 1-channel ones (all-on B=2 −2.4 %,
        // NOTES.md s18) and, since its image gathers are in flight again with kInvariantsShared, the split ones (s19:
        // all-on B=2 C=4 0.6831 → 0.6682 ms against the branching vote; in s18 it had cost +2.5 % with the gathers
        // one at a time). The multi-channel and permuted builds, not measured with it, keep the branching one.
        constexpr bool kBranchFreeVote = kCT == 1 && !kPadFirst && !kPermute;
        // kRawOutLabels: an out-of-bounds corner votes with the label at its clamped offset (weight +0), no select
        // (session 27, all-on B=2 C=1 −2.6 % alone, −5.8 % with the packed float16 keys of spatial_math.h).
        // Where every axis has an in-bounds corner index, clamping moves each out-of-bounds corner onto an in-bounds
        // one, so its label is already a candidate and its +0 changes no sum: the same vote. Where some axis has none
        // (all 8 corners out of bounds, every score 0), the −1 border fills the voxel (its coordinate is outside [lo,
        // hi]) and with the 0 border `lowest` is the sample's lowest label (LowestLabelKernel), never above a raw
        // label: the contract of LabelVote035BranchFree (spatial_math.h) holds. (NaN coordinates, from invalid
        // parameters only, are not covered; their labels were never meaningful.) kDeferVote's builds too: their inline
        // vote takes raw labels under its own contract (OneLabel, or kFewVote's FewLabelVote036: spatial_math.h), and
        // the queue's flush reads its own.
        constexpr bool kRawOutLabels = kBranchFreeVote || kDeferVote;
        // kUniformVote (the branch-free 0.3.5 vote of the whole 1-channel builds): where every lane of the warp that
        // votes this step has one label at all 8 corners (raw labels: lo == hi), the warp takes SoleLabelVote (the sum
        // of the 8 scores in corner order; the label where it rounds to a positive half, else `lowest`) instead of the
        // rest of the vote (the two-label test, masked sums and keys). It is LabelVote035BranchFree's own one-label
        // path, so each lane's label is the same for scores finite and >= +0 (host test
        // SpatialMath.UniformWarpVoteIsTheFullVoteOnOneLabel; NaN coordinates are outside the contract, as above). The
        // test is warp-wide (__all_sync) so that a warp never runs both paths. Lanes outside the patch left at the
        // step's `continue`; any subset of lanes voting together gets each lane's own label. H100, NOTES.md s44,
        // against the tree without it in the same call: on a seg of 32³ blocks of 3 labels (68 % of warp steps one
        // label a lane) every transform on B=2 C=1 −3.4 %, B=8 −3.5 %, default probabilities −2.0 %, the spatial
        // kernel −10.4 % warp instructions; on the benchmark's 8³ random seg (10 %) −0.3 / −0.8 / −0.8 %, the no-noise
        // kernel +0.9 %. Slower in the builds it is not in: the 0.3.6 ones (every transform on +4.6 %: ptxas split the
        // noise build's gathers) and the split ones (C=4 +2.2 %).
        constexpr bool kUniformVote = AUGMENTD_UNIFORM_VOTE != 0 && kBranchFreeVote && !kSplit;
        int lab[8];
#pragma unroll
        for (int m = 0; m < 8; ++m) {
          int raw;
          if constexpr (kLabelsFirst) {
            raw = raw_first[m];
          } else {
            raw = static_cast<int>(__ldg(seg_b + off[m]));
          }
          lab[m] = (kRawOutLabels || CornerInBounds(cn, m)) ? raw : INT32_MIN;
        }
        float x1000[8];  // one-hot x 1000 sampled: the weight each corner gives its label
#pragma unroll
        for (int m = 0; m < 8; ++m) x1000[m] = __fmul_rn(1000.f, w[m]);
        constexpr bool pad_first = kPadFirst;
        int best_l;
        if constexpr (pad_first) {
          // One label among the in-bounds corners: `one` (InBoundsLabelRange, spatial_math.h; the s9 loop over
          // `first` / `uniform` cost ≈ 70 instructions of predicate packing at the 64-register cap). kDeferVote with
          // -DAUGMENTD_PF_FEW=0 (raw labels): one label among all 8 (OneLabel). Where every axis has an in-bounds
          // corner index, clamping moves each out-of-bounds corner onto an in-bounds one, so the 8 raw labels are the
          // in-bounds corners' labels and the test is the same. Where some axis has none, no corner is in bounds and
          // every weight is 0: SoleLabelVote's sum is 0 and the voxel takes `lowest`, as PadFirstVote does without pad
          // votes (with them such a voxel is not all_in: queued).
          // kFewVote (kDeferVote's builds): one or two raw labels voted inline by FewLabelVote036 (with pad votes also
          // where some corners are out of bounds, unless the padding label is neither of the two and their corners sum
          // below 999; -DAUGMENTD_PF_FEW_OOB=0: only where every corner is in bounds, or none is), the rest queued.
          constexpr bool kFewVote = kDeferVote && AUGMENTD_PF_FEW;
          int sole;  // the one label, where `one`
          bool one;
          if constexpr (kFewVote) {  // unused
            sole = 0;
            one = false;
          } else if constexpr (kDeferVote) {
            one = OneLabel(lab);
            sole = lab[0];
          } else {
            int hi;
            InBoundsLabelRange(lab, sole, hi);
            one = sole == hi;
          }
          const bool votes = sp.pad_votes != 0;
          const bool all_in = AllCornersInBounds(cn);
          bool fast = one && (!votes || all_in);
          best_l = lowest;
          if constexpr (kFewVote) {
            fast = FewLabelVote036(lab, x1000, border_m1 ? -1 : 0, votes, AUGMENTD_PF_FEW_OOB || all_in,
                                   NoCornerInBounds(cn), sp.seg_tiebreak, lowest, best_l);
          } else {
            if (fast) best_l = SoleLabelVote(x1000, sole, lowest);  // most voxels
          }
          if constexpr (kDeferVote) {
            // Queued for the warp's next flush (the q_ok lanes are here together: crop, elastic and seg_block are
            // block-uniform): its coordinate and output offset, slots after the queue's last in lane order.
            const unsigned queued = __ballot_sync(q_ok, !fast);
            if (!fast) {
              const int slot = (q_head + q_len + __popc(queued & ((1u << lane) - 1u))) & (kVoteQueue - 1);
              sh_vq[warp][slot] = make_float4(ix[0], ix[1], ix[2], __int_as_float(
                  kRunningOffsets ? static_cast<int>(o_run) : MirroredOffset(j0, j1, j2, P, mirror)));
              deferred = true;
            }
            q_len += __popc(queued);
          } else if (!fast) {
            best_l = Vote036(lab, x1000, NearestCorner(ix, cn), border_m1 ? -1 : 0, votes, sp.seg_tiebreak, lowest);
          }
        } else {
          // 0.3.5 vote (spatial_math.h): one or two labels among the corners without the triangular vote, which is
          // kept for corners of three or more label regions; the labels of TriangularVote035 (the s9 kernel's vote),
          // in one branch-free path (kBranchFreeVote) or LabelVote035's two.
          if constexpr (kUniformVote) {
            int lo, hi;
            CornerLabelRange(lab, lo, hi);
            best_l = __all_sync(__activemask(), lo == hi) ? SoleLabelVote(x1000, lo, lowest)
                                                          : LabelVote035BranchFree(lab, x1000, lowest, lo, hi);
          } else {
            best_l = kBranchFreeVote ? LabelVote035BranchFree(lab, x1000, lowest) : LabelVote035(lab, x1000, lowest);
          }
        }
        label = (border_m1 && oob && !pad_first) ? -1 : best_l;  // 0.3.5's out-of-bounds fill
      }
    }
    // Noise epilogue (pre-mirror voxel index j).
    if (kNoise && noise_sigma != 0.f) {
      const int r = ((k & 3) - (lane & 3)) & 3;  // shuffle round that delivered step k's normal
#pragma unroll
      for (int c = 0; c < kCT; ++c) {
        if (c >= C) continue;
        float n;
        if (kShareNoise && share_noise) {
          if constexpr (kQuadsShared) {
            n = sh_nq[r][threadIdx.x];
          } else {
            // Two selects on the bits of r (r differs between lanes: a switch would diverge into up to 4 paths).
            const float n01 = (r & 1) ? nq[c][1] : nq[c][0], n23 = (r & 1) ? nq[c][3] : nq[c][2];
            n = (r & 2) ? n23 : n01;
          }
        } else {
          n = NormalAt(kKeysShared ? sh_keys[c] : reg_keys[kKeysShared ? 0 : c], static_cast<uint64_t>(j));
        }
        val[c] = __fadd_rn(val[c], __fmul_rn(noise_sigma, n));
      }
    }
    if constexpr (kPermute) {  // direct path: staged, stored through the permutation after the loop
      const int sl = k * kPermStride0 + pslot;
      sh_plab[sl] = static_cast<int16_t>((a.remove_minus_one && label == -1) ? 0 : label);
#pragma unroll
      for (int c = 0; c < kCT; ++c) {
        if (c >= C) continue;
        float v = __fmul_rn(val[c], bright[c]);
        if (mask_ch[c] && label < 0) v = 0.f;
        sh_pimg[c * kPermBrickVox + sl] = v;
      }
      continue;
    }
    // Seg, mask and DS at the mirrored position.
    const int o = kRunningOffsets ? static_cast<int>(o_run) : MirroredOffset(j0, j1, j2, P, mirror);
    const bool neg = kDeferVote ? !deferred && label < 0 : label < 0;  // a queued voxel's image: masked by the flush
    const int16_t out_label = static_cast<int16_t>((a.remove_minus_one && label == -1) ? 0 : label);
    if (seg_block && !deferred) {
      if constexpr (kOutBases) {
        sh_out_seg_b[o] = out_label;
        if (a.mask) sh_mask_b[o] = neg ? 1 : 0;
      } else {
        out_seg[static_cast<int64_t>(b) * out_n + o] = out_label;
        if (a.mask) a.mask[static_cast<int64_t>(b) * out_n + o] = neg ? 1 : 0;
      }
    }
      // Image.
#pragma unroll
    for (int c = 0; c < kCT; ++c) {
      if (c >= C) continue;
      const int64_t slice = static_cast<int64_t>(b) * Ct + c0 + c;
      if (a.x1) {
        if constexpr (kOutBases) {
          sh_x1_b[static_cast<int64_t>(c) * out_n + j] = val[c];
        } else {
          a.x1[slice * out_n + j] = val[c];
        }
        if constexpr (kStatsShared) {
          if (stat_ch[c]) sh_stat[k][threadIdx.x] = val[c];
        } else {
          if (stat_ch[c]) Accumulate(part[c], val[c]);
        }
      } else {
        float v = __fmul_rn(val[c], bright[c]);
        if (mask_ch[c] && neg) v = 0.f;
        StoreOut(out_image, a.out_dtype, slice * out_n + o, v);
      }
    }
  }
  if constexpr (kDeferVote) {
    // The queues' rests (< 64 voxels a warp), pooled: the block's threads take them in turn, warp by warp, so that
    // the few voxels a warp has left (kFewVote: those of three or more labels, a few a warp) fill whole warps' votes
    // instead of each warp running one vote for them (session 35). The barrier makes every ring and the main loop's
    // image stores visible to the block.
    q_len = __shfl_sync(0xffffffffu, q_len, q_lead);
    if constexpr (AUGMENTD_PF_POOL) {
      if (lane == 0) sh_qrest[warp] = make_int2(q_head, q_len);
      __syncthreads();
      int total = 0;
#pragma unroll
      for (int w = 0; w < kThreads / 32; ++w) total += sh_qrest[w].y;
      for (int e = threadIdx.x; e < total; e += kThreads) {
        int w = 0, r = e;
        while (r >= sh_qrest[w].y) r -= sh_qrest[w++].y;
        vote_queued(w, (sh_qrest[w].x + r) & (kVoteQueue - 1));
      }
    } else {
      __syncwarp();
      for (; q_len > 0; q_len -= 32, q_head = (q_head + 32) & (kVoteQueue - 1)) {
        if (lane < q_len) vote_queued(warp, (q_head + lane) & (kVoteQueue - 1));
      }
    }
  }
  if constexpr (kPermute) {
    __syncthreads();
    const int org[3] = {z_first, by * kBrickY, bx * kBrickX};
    const int axis[3] = {sp.out_axis[0], sp.out_axis[1], sp.out_axis[2]};
    StorePermutedBrick<kCT>(sh_pimg, sh_plab, org, P, axis, mirror, b, C, out_n, out_seg, out_image, a.out_dtype);
    return;
  }
  if constexpr (kStatsShared) {
    const int kend = min(kVoxPerThread, P[0] - z_first);
    if (stat_ch[0] && col_ok) {
      for (int i = 0; i < kend; ++i) Accumulate(part[0], sh_stat[i][threadIdx.x]);
    }
  }
  if (a.want_stats) {
#pragma unroll
    for (int c = 0; c < kCT; ++c) {
      if (c >= C) continue;
      if (sp.ch[c0 + c].blur_sigma[0] != 0.f) continue;  // block-uniform
      const Partial r = BlockReduce(part[c]);
      CommitPartial(a.slot, b * Ct + c0 + c, brick, nbricks, r, out_n);
    }
  }
}

// Deep-supervision targets: nearest-exact picks of the final seg, all levels in one launch (blockIdx.z = level).
// Used when no intensity stage runs; otherwise the final pass does the picks in extra blocks (intensity.cu).
__global__ void __launch_bounds__(kThreads) DsKernel(const DsArgs a) { DsPicks(a, blockIdx.z, blockIdx.y, blockIdx.x); }

__global__ void LowestLabelKernel(const int16_t* seg, const PipelineIO* io_dev, int64_t n, int32_t* lowest) {
  const int b = blockIdx.y;
  const int16_t* s = (io_dev != nullptr ? io_dev->seg : seg) + static_cast<int64_t>(b) * n;
  int m = INT32_MAX;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    m = min(m, static_cast<int>(__ldg(s + i)));
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) m = min(m, __shfl_down_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0) atomicMin(lowest + b, m);
}

__global__ void FillInt(int32_t* p, int n, int32_t v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v;
}

}  // namespace

namespace {
// Build of the spatial kernel (a tuning switch for the benchmark, read once from AUGMENTD_SPATIAL_VARIANT; not a
// feature): "" = 4 resident blocks per SM for 1 channel (64 registers, 0-52 spilled bytes by build), 3 for 2 channels
// (80), the noise epilogue only in batches that draw noise; "3" = the 3-block build for 1 channel too (80 registers,
// 0-8 spilled bytes; batches of crops alone then run it too, not the kCrops build); "v5" = the noise build for every
// batch; "nosplit" = the multi-channel builds at every channel count (session 15's kernels; the A/B of
// kSplitMinChannels); "split2" = the channel split from 2 channels. Measured on the H200 (NOTES.md, s4): the 4-block
// build −5 % spatial-only, −1 % all-on against the 3-block one; the noise split is neutral since the spills are gone.
enum class SpatialVariant { kDefault, kV5, kThreeBlocks, kNoSplit, kSplit2 };

SpatialVariant ReadSpatialVariant() {
  const char* v = std::getenv("AUGMENTD_SPATIAL_VARIANT");
  const std::string s = v != nullptr ? v : "";
  if (s == "v5") return SpatialVariant::kV5;
  if (s == "3") return SpatialVariant::kThreeBlocks;
  if (s == "nosplit") return SpatialVariant::kNoSplit;
  if (s == "split2") return SpatialVariant::kSplit2;
  return SpatialVariant::kDefault;
}

// Batches of at least this many channels run the 1-channel build with one block per (brick, sample, channel) (the
// kSplit build) instead of a multi-channel build: each channel's blocks recompute the coordinates and weights (392
// instructions a voxel per extra channel, s17 ncu) and only channel 0's blocks vote the seg, but every block runs at
// the 1-channel build's 64 registers and 4 blocks per SM, where the 4-channel build holds 128 registers at 2 (s13
// profile: 23 % occupancy, latency-bound). Not where the direct path's image stores need the label (a mask channel) or
// the outputs are permuted. Same values by construction: the same operations per channel, the same bricks in each
// slice's statistics (NOTES.md, s16-s17: on the H200 every transform on, B=2, 4 channels 0.712 → 0.666 ms). 3, not 2:
// default probabilities at 2 channels measured slower split (0.152 → 0.160 ms).
constexpr int kSplitMinChannels = 3;

template <int kCT, int kMinBlocks, bool kPadFirst, bool kPermute, bool kSplit, bool kCrops = false>
void LaunchSpatialBuild(bool noise, dim3 grid, cudaStream_t stream, const SpatialArgs& a) {
  if (noise) {
    SpatialKernel<kCT, kMinBlocks, true, kPadFirst, kPermute, kSplit, kCrops><<<grid, kThreads, 0, stream>>>(a);
  } else {
    SpatialKernel<kCT, kMinBlocks, false, kPadFirst, kPermute, kSplit, kCrops><<<grid, kThreads, 0, stream>>>(a);
  }
}

// Batches of centre crops alone (no kStageResample) run the crops build in the 1-channel configurations (whole and
// split, not permuted): kCrops above. The other configurations keep the resampling build for them (a crop is its
// runtime branch there).
template <int kCT, int kMinBlocks, bool kPermute = false, bool kSplit = false>
void LaunchSpatialBuild(bool noise, bool pad_first, bool crops, dim3 grid, cudaStream_t stream, const SpatialArgs& a) {
  if constexpr (kCT == 1 && kMinBlocks == 4 && !kPermute) {
    if (AUGMENTD_CROPS_BUILD && crops) {
      return LaunchSpatialBuild<kCT, kMinBlocks, false, kPermute, kSplit, true>(noise, grid, stream, a);
    }
  }
  if (pad_first) {
    LaunchSpatialBuild<kCT, kMinBlocks, true, kPermute, kSplit>(noise, grid, stream, a);
  } else {
    LaunchSpatialBuild<kCT, kMinBlocks, false, kPermute, kSplit>(noise, grid, stream, a);
  }
}
}  // namespace

cudaError_t LaunchSpatial(const BatchShape& shape, const SampleParams* d_params, const PipelineIO& io,
                          const PipelineIO* d_io, const Workspace& ws, const SpatialFlags& f, cudaStream_t stream) {
  const bool direct = f.direct;
  SpatialArgs a{};
  a.d = MakeDims(shape);
  a.params = d_params;
  a.image = io.image;
  a.seg = io.seg;
  a.lowest = f.use_lowest_buffer ? ws.lowest : nullptr;
  a.x1 = direct ? nullptr : ws.x1;
  a.out_image = direct ? io.out_image : nullptr;
  a.out_dtype = shape.out_dtype;
  a.out_seg = io.out_seg;
  a.mask = f.with_mask && !direct ? ws.mask : nullptr;
  a.remove_minus_one = shape.remove_minus_one;
  a.want_stats = f.want_stats && !direct;
  a.slot = ws.slot[kSlotV1];
  a.field = f.elastic ? ws.field : nullptr;
  a.estat = f.elastic ? ws.estat : nullptr;
  a.io_dev = d_io;
  // Seg only (io.image == nullptr, RunPipeline checked the direct path): no image channel is resampled, and the image
  // base pointer stays null + 0. The kernel's code is the same either way (channel loops bounded by d.c).
  if (io.image == nullptr) a.d.c = 0;
  for (int d = 0; d < 3; ++d) {
    a.sf[d] = static_cast<float>(shape.in[d]);
    a.half_s[d] = a.sf[d] * 0.5f;  // exact
    a.rcp_half_s[d] = 1.f / a.half_s[d];  // RN(1/(S/2)): IEEE float division on the host
    const double other = static_cast<double>(shape.in[2 - d]);
    a.lo[d] = static_cast<float>(-1.0 + 1.0 / other);
    a.hi[d] = static_cast<float>(1.0 - 1.0 / other);
  }
  // Registers bound the occupancy of this kernel: 1 channel is built for 4 resident blocks per SM (64 registers),
  // 2 channels for 3 (80), 3-8 channels for 2 (128); a split launch runs the 1-channel build.
  static const SpatialVariant variant = ReadSpatialVariant();
  const bool noise = f.noise || variant == SpatialVariant::kV5;
  const bool pad_first = shape.seg_pad_first != 0;
  const int split_min = variant == SpatialVariant::kSplit2 ? 2 : kSplitMinChannels;
  const bool split =
      variant != SpatialVariant::kNoSplit && a.d.c >= split_min && !f.permute && !(direct && f.with_mask);
  // The grid (nbx·nby, nbz, B or B·C) (the kernel's brick position; RunPipeline's ValidShape checked
  // SpatialGridFits, and a grid past CUDA's limits fails at the launch below).
  const BrickGrid bg = SpatialBrickGrid(shape);
  a.nbx = bg.nbx;
  a.rcp_nbx = 1.f / static_cast<float>(bg.nbx);
  a.rcp_c = 1.f / static_cast<float>(std::max(a.d.c, 1));
  const dim3 grid(bg.nbx * bg.nby, bg.nbz, shape.batch * (split ? a.d.c : 1));
  if (split) {
    LaunchSpatialBuild<1, 4, false, true>(noise, pad_first, f.crops_only, grid, stream, a);
  } else if (f.permute) {  // RunPipeline checked: direct path, ≤ kMaxPermutedChannels
    if (!direct || shape.channels > kMaxPermutedChannels) return cudaErrorInvalidValue;
    if (shape.channels <= 1) {
      LaunchSpatialBuild<1, 4, true>(noise, pad_first, f.crops_only, grid, stream, a);
    } else if (shape.channels <= 2) {
      LaunchSpatialBuild<2, 3, true>(noise, pad_first, f.crops_only, grid, stream, a);
    } else {
      LaunchSpatialBuild<4, 2, true>(noise, pad_first, f.crops_only, grid, stream, a);
    }
  } else if (shape.channels <= 1) {
    if (variant == SpatialVariant::kThreeBlocks) {
      LaunchSpatialBuild<1, 3>(noise, pad_first, f.crops_only, grid, stream, a);
    } else {
      LaunchSpatialBuild<1, 4>(noise, pad_first, f.crops_only, grid, stream, a);
    }
  } else if (shape.channels <= 2) {
    LaunchSpatialBuild<2, 3>(noise, pad_first, f.crops_only, grid, stream, a);
  } else if (shape.channels <= 4) {
    LaunchSpatialBuild<4, 2>(noise, pad_first, f.crops_only, grid, stream, a);
  } else {
    LaunchSpatialBuild<8, 2>(noise, pad_first, f.crops_only, grid, stream, a);
  }
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  if (shape.num_ds > 0 && direct) {
    const DsArgs da = MakeDsArgs(shape, io, d_io);
    DsKernel<<<dim3(DsChunks(shape), shape.batch, shape.num_ds), kThreads, 0, stream>>>(da);
    AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  }
  return cudaSuccess;
}

cudaError_t LaunchLowestLabels(const BatchShape& shape, const int16_t* seg, const PipelineIO* d_io, int32_t* d_lowest,
                               cudaStream_t stream) {
  FillInt<<<(shape.batch + 255) / 256, 256, 0, stream>>>(d_lowest, shape.batch, INT32_MAX);
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  const int64_t n = Prod(shape.in);
  const int blocks = static_cast<int>(std::min<int64_t>((n + 255) / 256, 1024));
  LowestLabelKernel<<<dim3(blocks, shape.batch), 256, 0, stream>>>(seg, d_io, n, d_lowest);
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  return cudaSuccess;
}

}  // namespace augmentd::cuda::internal
