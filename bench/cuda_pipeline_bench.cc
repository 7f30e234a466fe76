// bench/cuda_pipeline_bench.cc — times augmentd's CUDA kernel layer (augment/kernels/cuda) on one GPU.
//
//   cuda_pipeline_bench [--json out.jsonl] [--iters N] [--modes all-on,default-p,...] [--only MODE:B:C:SHAPE,...]
//                       [--bgv2 0.3.5|0.3.6] [--channels 1,4] [--profile-set K] [--seg-block 8] [--seg-labels 4]
//                       [--digests 0|1] [--streams N] [--split 0|1|2] [--help]
// Every option takes a value; an unknown option, a missing value, a bad number, or a --modes / --only selection that
// would run nothing (CheckSelection: an unknown mode, a row outside the matrix or not written as the bench names it,
// an --only row whose mode --modes leaves out, an empty list) exits 2 with the reason, before the device is touched.
//
// --bgv2 picks the label vote of the spatial kernel: 0.3.5 (default: argmax with lowest-label ties and the −1 mask,
// the kernel's historical figures) or 0.3.6 (pad-first vote, seg_tiebreak 'nearest', and the padding label voting
// in every rotated/scaled sample: its most expensive form).
//
// For B in {2, 8}, C in {1, 4}, patches 128³ (from 205³) and 80×160×160 (from 175×257×210, the
// initial_patch_size formula of reference §2.2), and modes
//   all-on      every transform applied to every sample and channel (rotation + scaling, noise, blur,
//               brightness, contrast, low-res, both gammas, mirroring on all axes, DS targets)
//   default-p   nnU-Net's default probabilities (16 parameter batches, rotated)
//   spatial     rotation + scaling only (the floor set by the spatial kernel; C = 1 and 4)
//   all-on+elastic  all-on plus elastic deformation (fields generated on the device, bgv2's default σ/magnitude)
//   only-X      rotation + scaling + transform X on every sample and channel (B=2, C=1; only-noise also C=4):
//               X's cost = time − spatial
//   crops, crops-noise  centre crops alone (no rotation or scaling: the spatial kernel's build without the resampling
//               path), and with noise on every sample (B=2, C=1; crops-noise also C=4): the noise's cost there
//   spatial-bw  the spatial kernel alone (rotation + scaling, no DS targets, parameters already on the device), B=2
//               C=1 128³ from 205³, against a device-to-device copy of the same byte count measured in the same run
//               (alternating, CUDA events): prints spatial_bandwidth_fraction (definition at RunSpatialBandwidth)
// it reports the median over iterations of CUDA-event times: eager launches (parameter upload from pinned
// memory included) and CUDA-graph replay (one graph per stage mask, buffer pointers and parameters uploaded together
// and read on the device as CudaAugmenter does); samples/s; bytes (input read once + outputs written once) over
// time against a measured device-to-device copy; device memory held (inputs, outputs, workspace). The JSON rows
// also give each parameter set's median (sets_ms_eager, sets_ms_graph) and stage mask (set_stages): a mode's median
// is one set's cost, so a change that moves a few sets moves it by a whole set's difference.
// Inputs are random (never zeros); all buffers are allocated once before timing. The seg is blocks of --seg-block³
// voxels of --seg-labels random labels (default 8 and 4: the label vote's worst case; 32 and 3 are nearer real masks).
// --profile-set K (0..15; profiling runs): every batch, warm-up included, runs parameter set K of each mode, so that a
// profiler skipping a fixed number of launches lands on that set whatever the number of kernels a batch launches
// (with the sets in turn it lands on another set when a change adds or removes a kernel; NOTES.md s23). The
// per-set medians are then all set K's, and the JSON's first line says "profile_set": K (-1: the sets in turn). The
// spatial-bw row keeps its own rotation of sets.
// --digests 1 (A/B runs of a kernel change meant to keep every bit): after the eager timing, each of a row's 16
// parameter sets runs once more, in order, and its outputs (image, seg, DS targets) are hashed, 64 bits over all 16
// (printed, and "digest" in the JSON row). Two builds whose kernels compute the same bits give the same digest for
// the same row and seg; bench/ab_table.py compares them across sides and rounds. The parity tests compare with the
// CPU within a tolerance, so they cannot tell a changed last bit; this can.
// --streams N (2..8; 1, the default, is off): each row also runs its batches on N streams at once, the server's regime
// (one stream per GPU worker, gpu_workers = 2 by default), against the same batches back to back on one stream, and
// checks that every lane computed what the same batch computes alone (see StreamsRun).
// --split 1 (rows of even B): each batch also as two halves on two streams, as CudaAugmenter can run it (cuda/engine.h
// "Two parts"), timed against whole batches and compared with them (see SplitRun); with --streams N also N lanes of
// such batches. --split 2: two halves only where their stage masks differ (CudaSplitPolicy::kWhenMasksDiffer, not the
// engine's default), whole batches elsewhere; the JSON row's split_mode says which, and split_sets how many of the 16
// sets ran in two parts.
// --block-clocks FILE (a build with -DAUGMENTD_BLOCK_CLOCKS=1 in CMAKE_CUDA_FLAGS; others exit 2): after the eager
// timing, each row runs kClockBatches more batches (its sets in turn, or --profile-set's), one at a time as the timing
// does, with every block of the chain's kernels recording its entry, wait, trigger and exit (block_clocks.h), and
// appends one CSV line per block to FILE; bench/block_clocks.py reads it (NOTES.md s47). The recording's own cost
// (a few instructions, a barrier, a shared atomic a warp and a global one a block) is in those batches, so time a build
// without it beside them; the row's other runs record nothing.
// Note: the bench's all-on draws blur and low-res on every channel, so its halves' masks are always equal; nnU-Net's
// spec draws them per channel with p 0.5.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "augment/kernels/cuda/block_clocks.h"
#include "augment/kernels/cuda/pipeline_cuda.h"
#include "bench/bench_args.h"

namespace {

bool g_bgv2_036 = false;  // --bgv2 0.3.6
int g_profile_set = -1;   // --profile-set K: every batch runs parameter set K
int g_seg_block = 8;      // --seg-block N: the seg's label blocks are N³ voxels
int g_seg_labels = 4;     // --seg-labels L: each block draws one of labels 0 … L−1
bool g_digests = false;   // --digests 1: hash every parameter set's outputs (see the header)
FILE* g_clocks = nullptr;  // --block-clocks FILE: the CSV of every recorded block (see the header)
constexpr int kClockBatches = 8;

// FNV-1a over 8-byte words (then the tail bytes), continuing from h: equal bytes give equal hashes.
uint64_t HashBytes(const std::vector<char>& bytes, uint64_t h) {
  constexpr uint64_t kPrime = 0x100000001b3ULL;
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    h = (h ^ w) * kPrime;
  }
  for (; i < bytes.size(); ++i) h = (h ^ static_cast<unsigned char>(bytes[i])) * kPrime;
  return h;
}

// The input seg of B samples of S: blocks of g_seg_block³ voxels, each one of g_seg_labels random labels, and a −1
// slab (z < 2). The default (8³ blocks, 4 labels) is the vote's worst case: a lane of 44 % of the warp steps needs the
// triangular vote, against 2 % with 32³ blocks of 3 labels (bench/vote_divergence.py), which is nearer real masks.
std::vector<int16_t> MakeSeg(int B, const int* S, std::mt19937_64& g) {
  const size_t in_n = size_t(S[0]) * S[1] * S[2];
  const int k = g_seg_block;
  std::vector<int16_t> seg(size_t(B) * in_n);
  std::uniform_int_distribution<int> ld(0, g_seg_labels - 1);
  const int cz = (S[0] + k - 1) / k, cy = (S[1] + k - 1) / k, cx = (S[2] + k - 1) / k;
  std::vector<int16_t> coarse(size_t(B) * cz * cy * cx);
  for (auto& v : coarse) v = static_cast<int16_t>(ld(g));
  for (int b = 0; b < B; ++b)
    for (int z = 0; z < S[0]; ++z)
      for (int y = 0; y < S[1]; ++y)
        for (int x = 0; x < S[2]; ++x)
          seg[b * in_n + (size_t(z) * S[1] + y) * S[2] + x] =
              z < 2 ? -1 : coarse[((size_t(b) * cz + z / k) * cy + y / k) * cx + x / k];
  return seg;
}

using augmentd::cuda::BatchShape;
using augmentd::cuda::ChannelParams;
using augmentd::cuda::SampleParams;

#define CHECK_CUDA(expr)                                                                         \
  do {                                                                                           \
    const cudaError_t e_ = (expr);                                                               \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

// --block-clocks: runs `batches` batches through launch(i) one at a time, recording, and appends their blocks to
// g_clocks as "config,batch,set,batch_ms,sms,kernel,block,smid,entry_ns,waited_ns,triggered_ns,exit_ns,waited_cyc,
// triggered_cyc,exit_cyc" (sms: the device's multiprocessors): times from the batch's first entry (ns, %globaltimer)
// and from the block's own entry (cycles, clock64), empty where the block did not pass the mark; then stops
// recording.
template <typename Launch, typename SetOf>
void RecordBlockClocks(const std::string& config, int batches, cudaStream_t st, const Launch& launch,
                       const SetOf& set_of) {
  using augmentd::cuda::BlockClock;
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  int dev = 0, sms = 0;
  CHECK_CUDA(cudaGetDevice(&dev));
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CHECK_CUDA(augmentd::cuda::BlockClocksStart(size_t{1} << 17));
  for (int i = 0; i < batches; ++i) {
    CHECK_CUDA(cudaEventRecord(e0, st));
    launch(i);
    CHECK_CUDA(cudaEventRecord(e1, st));
    CHECK_CUDA(cudaEventSynchronize(e1));
    float ms = 0.f;
    CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    std::vector<BlockClock> recs;
    uint64_t dropped = 0;
    CHECK_CUDA(augmentd::cuda::BlockClocksTake(&recs, &dropped));
    if (dropped != 0) {
      std::fprintf(stderr, "--block-clocks: %s batch %d: %llu blocks past the log's capacity\n", config.c_str(), i,
                   static_cast<unsigned long long>(dropped));
    }
    uint64_t t0 = UINT64_MAX;
    for (const BlockClock& r : recs) t0 = std::min(t0, r.ns[augmentd::cuda::kMarkEntry]);
    for (const BlockClock& r : recs) {
      std::fprintf(g_clocks, "%s,%d,%d,%.4f,%d,%s,%u,%u", config.c_str(), i, set_of(i), ms, sms,
                   augmentd::cuda::BlockClockKernelName(r.kernel), r.block, r.smid);
      for (int m = 0; m < augmentd::cuda::kNumMarks; ++m) {
        if (r.ns[m] == 0) std::fprintf(g_clocks, ",");
        else std::fprintf(g_clocks, ",%llu", static_cast<unsigned long long>(r.ns[m] - t0));
      }
      for (int m = 1; m < augmentd::cuda::kNumMarks; ++m) {
        if (r.cycles[m] == 0) std::fprintf(g_clocks, ",");
        else std::fprintf(g_clocks, ",%lld", r.cycles[m] - r.cycles[augmentd::cuda::kMarkEntry]);
      }
      std::fprintf(g_clocks, "\n");
    }
  }
  std::fflush(g_clocks);
  CHECK_CUDA(augmentd::cuda::BlockClocksStop());  // the row's later runs and the next rows record nothing
  CHECK_CUDA(cudaEventDestroy(e0));
  CHECK_CUDA(cudaEventDestroy(e1));
}

double Median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Median time of each parameter set: iteration i ran set i % sets.
std::vector<double> SetMedians(const std::vector<float>& t, int sets) {
  std::vector<std::vector<float>> by(sets);
  for (size_t i = 0; i < t.size(); ++i) by[i % sets].push_back(t[i]);
  std::vector<double> m;
  for (const auto& v : by) m.push_back(Median(v));
  return m;
}

// A JSON array of numbers, each printed with `fmt`.
template <typename T>
std::string JsonArray(const std::vector<T>& v, const char* fmt) {
  std::string s = "[";
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof(buf), fmt, v[i]);
    s += (i ? "," : "") + std::string(buf);
  }
  return s + "]";
}

double BGContrast(std::mt19937_64& g, double lo, double hi) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  if (u(g) < 0.5 && lo < 1.0) return lo + (1.0 - lo) * u(g);
  const double a = std::max(lo, 1.0);
  return a + (hi - a) * u(g);
}

struct Probs {
  double rot, scale, noise, blur, blur_ch, bright, contrast, lowres, lowres_ch, g0, g1, mirror;
  double elastic = 0;  // elastic deformation (σ = U(0, 0.2)·P, magnitude U(0, 0.2): bgv2's defaults)
};
constexpr Probs kDefault{0.2, 0.2, 0.1, 0.2, 0.5, 0.15, 0.15, 0.25, 0.5, 0.1, 0.3, 0.5};
constexpr Probs kAllOn{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
constexpr Probs kAllOnElastic{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
constexpr Probs kSpatial{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
// Per-transform costs (issue 10): rotation + scaling plus one transform on every sample and channel; the
// transform's cost is the difference to "spatial".
constexpr Probs kOnlyElastic{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
constexpr Probs kOnlyNoise{1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
constexpr Probs kOnlyBlur{1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0};
constexpr Probs kOnlyBright{1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0};
constexpr Probs kOnlyContrast{1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0};
constexpr Probs kOnlyLowRes{1, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0};
constexpr Probs kOnlyGamma{1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0};
constexpr Probs kOnlyMirror{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
// Batches of centre crops (the spatial kernel's kCrops build, s21), alone and with noise on every sample: the
// noise's cost in the crops build (s22).
constexpr Probs kCrops{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
constexpr Probs kCropsNoise{0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};

// The modes, in the order the bench runs them.
struct Mode {
  const char* name;
  Probs probs;
};
constexpr Mode kModes[] = {{"all-on", kAllOn},           {"default-p", kDefault},          {"spatial", kSpatial},
                           {"all-on+elastic", kAllOnElastic}, {"only-elastic", kOnlyElastic}, {"only-noise", kOnlyNoise},
                           {"only-blur", kOnlyBlur},     {"only-brightness", kOnlyBright}, {"only-contrast", kOnlyContrast},
                           {"only-lowres", kOnlyLowRes}, {"only-gamma", kOnlyGamma},       {"only-mirror", kOnlyMirror},
                           {"crops", kCrops},            {"crops-noise", kCropsNoise}};

bool KnownMode(const std::string& m) {
  return m == "spatial-bw" ||
         std::any_of(std::begin(kModes), std::end(kModes), [&](const Mode& k) { return m == k.name; });
}

// Whether the bench's matrix has row (mode, B, C) for B in {2, 8} and C among --channels: the per-transform modes
// (only-X, crops*) run B = 2 only, and C = 4 only for the noise (the per-channel costs of the fused spatial kernel,
// issue 27).
bool InMatrix(const std::string& m, int B, int C) {
  const bool per_transform = m.rfind("only-", 0) == 0 || m.rfind("crops", 0) == 0;
  if (per_transform && C == 4 && m != "only-noise" && m != "crops-noise") return false;
  return !(per_transform && B == 8);
}

// Whether `item` is one of a comma list as main keeps it (",a,b,").
bool Listed(const std::string& list, const std::string& item) {
  return list.find("," + item + ",") != std::string::npos;
}

// A row's name, as --only lists it: MODE:B:C:SHAPE.
std::string RowKey(const std::string& m, int B, int C, int shape) {
  return m + ":" + std::to_string(B) + ":" + std::to_string(C) + ":" + std::to_string(shape);
}

// The items of a comma list (",a,b," as main keeps them, or "a,b").
std::vector<std::string> Items(const std::string& list) {
  std::vector<std::string> out;
  std::string cur;
  for (const char ch : list + ",") {
    if (ch != ',') {
      cur += ch;
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  return out;
}

// Refuses --modes and --only selections that would run nothing: an empty list, an unknown mode or a typo, a mode
// with no row for these --channels, an --only row outside the matrix, one whose mode --modes leaves out, or one not
// written as the bench names its rows (main matches the text "MODE:B:C:SHAPE", so "all-on:02:1:0" would match
// nothing). The bench used to drop such entries without a word, and an A/B run then lacked a row it was meant to
// time (NOTES.md s32). Returns the reason, empty when every entry runs. `modes` / `only` as main keeps them: ",a,b,"
// or empty when the option was not given.
std::string CheckSelection(const std::string& modes, const std::string& only, const std::vector<int>& channels) {
  if (!modes.empty() && Items(modes).empty()) return "--modes: an empty list";
  if (!only.empty() && Items(only).empty()) return "--only: an empty list";
  for (const std::string& m : Items(modes)) {
    if (!KnownMode(m)) return "--modes: unknown mode '" + m + "'";
    bool any = m == "spatial-bw";
    for (const int B : {2, 8})
      for (const int C : channels) any |= InMatrix(m, B, C);
    if (!any) return "--modes: mode " + m + " has no row with these --channels (per-transform modes: not C=4)";
  }
  for (const std::string& e : Items(only)) {
    if (e == "spatial-bw") continue;
    char mode[64];
    int B = 0, C = 0, shape = 0, used = 0;
    if (e.size() >= sizeof mode ||
        std::sscanf(e.c_str(), "%63[^:]:%d:%d:%d%n", mode, &B, &C, &shape, &used) != 4 ||
        used != static_cast<int>(e.size()))
      return "--only: '" + e + "' is not MODE:B:C:SHAPE or spatial-bw";
    const std::string m(mode);
    if (RowKey(m, B, C, shape) != e)
      return "--only: '" + e + "' is not written as the bench names its rows (plain decimals, no spaces, e.g. "
             "all-on:2:1:0)";
    if (m == "spatial-bw") return "--only: spatial-bw takes no B:C:SHAPE ('" + e + "')";
    if (!KnownMode(m)) return "--only: unknown mode '" + m + "' in '" + e + "'";
    if (!modes.empty() && !Listed(modes, m))
      return "--only: '" + e + "' names mode " + m + ", which --modes leaves out";
    if ((B != 2 && B != 8) || (shape != 0 && shape != 1))
      return "--only: '" + e + "': B is 2 or 8 and SHAPE 0 (128^3) or 1 (80x160x160)";
    if (std::find(channels.begin(), channels.end(), C) == channels.end())
      return "--only: '" + e + "': C=" + std::to_string(C) + " is not among --channels";
    if (!InMatrix(m, B, C))
      return "--only: '" + e + "' is not a row of the bench (per-transform modes run B=2 only, and C=4 only for "
             "only-noise and crops-noise)";
  }
  return {};
}

SampleParams Draw(std::mt19937_64& g, const Probs& pr, const BatchShape& sh, uint64_t index) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  SampleParams p;
  const bool rot = u(g) < pr.rot, scl = u(g) < pr.scale;
  double a[3] = {0, 0, 0}, s = 1.0;
  if (rot)
    for (double& x : a) x = -0.5236 + 1.0472 * u(g);
  if (scl) s = 0.7 + 0.7 * u(g);
  const double c0 = std::cos(a[0]), s0 = std::sin(a[0]), c1 = std::cos(a[1]), s1 = std::sin(a[1]), c2 = std::cos(a[2]),
               s2 = std::sin(a[2]);
  // A = Rz(a2) Ry(a1) Rx(a0) s
  const double rz[9] = {c2, -s2, 0, s2, c2, 0, 0, 0, 1}, ry[9] = {c1, 0, s1, 0, 1, 0, -s1, 0, c1},
               rx[9] = {1, 0, 0, 0, c0, -s0, 0, s0, c0};
  double t[9], m[9];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      t[3 * i + j] = rz[3 * i] * ry[j] + rz[3 * i + 1] * ry[3 + j] + rz[3 * i + 2] * ry[6 + j];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) m[3 * i + j] = t[3 * i] * rx[j] + t[3 * i + 1] * rx[3 + j] + t[3 * i + 2] * rx[6 + j];
  for (int i = 0; i < 9; ++i) p.matrix[i] = static_cast<float>(m[i] * s);
  p.use_crop = !(rot || scl);
  if (g_bgv2_036) {
    p.pad_votes = p.use_crop ? 0 : 1;
    p.seg_tiebreak = 1;  // 'nearest'
  }
  p.mirror_mask = 0;
  for (int d = 0; d < 3; ++d)
    if (u(g) < pr.mirror) p.mirror_mask |= 1 << d;
  if (pr.mirror >= 1.0) p.mirror_mask = 7;
  p.seed = 12345;
  p.sample_index = index;
  p.noise_transform_index = 3;
  if (u(g) < pr.noise) p.noise_sigma = static_cast<float>(0.1 * u(g) + 1e-3);
  if (u(g) < pr.elastic) {
    p.elastic = 1;
    p.use_crop = 0;
    p.elastic_seed = 99;
    p.elastic_sample_index = index;
    p.elastic_transform_index = 0;
    for (int d = 0; d < 3; ++d) {
      p.elastic_sigma[d] = 0.2 * u(g) * sh.out[d];
      p.elastic_magnitude[d] = static_cast<float>(std::max(0.2 * u(g), 1e-8));
    }
  }
  const bool blur = u(g) < pr.blur, bright = u(g) < pr.bright, contrast = u(g) < pr.contrast, lowres = u(g) < pr.lowres,
             g0 = u(g) < pr.g0, g1 = u(g) < pr.g1;
  for (int c = 0; c < sh.channels; ++c) {
    ChannelParams& cp = p.ch[c];
    if (blur && u(g) < pr.blur_ch)
      for (float& x : cp.blur_sigma) x = static_cast<float>(0.5 + 0.5 * u(g));
    if (bright) cp.brightness = static_cast<float>(BGContrast(g, 0.75, 1.25));
    if (contrast) cp.contrast = static_cast<float>(BGContrast(g, 0.75, 1.25));
    if (lowres && u(g) < pr.lowres_ch) {
      const double f = 0.5 + 0.5 * u(g);
      for (int d = 0; d < 3; ++d) cp.lowres_shape[d] = std::max(1, augmentd::cuda::RoundHalfEven(sh.out[d] * f));
    }
    if (g0) {
      cp.gamma[0] = static_cast<float>(BGContrast(g, 0.7, 1.5));
      cp.gamma_invert[0] = 1;
    }
    if (g1) cp.gamma[1] = static_cast<float>(BGContrast(g, 0.7, 1.5));
  }
  return p;
}

// --split 1: each batch of B (even) as two batches of B/2 on two streams forked from and joined to the batch's stream,
// each half with its own workspace and stage mask (ActiveStages of its samples), timed against the whole batch,
// interleaved (see RunOne). seg_mismatch / image_max_diff: the halves' outputs against the whole batch's, over the 16
// sets (the statistics' partial sums may be cut differently, kStageSliceIdle; labels should not move).
int g_split = 0;  // --split: 1 two parts always (the engine's default), 2 where the halves' stage masks differ
struct SplitRun {
  bool ran = false;
  int mode = 0;        // --split's value
  int sets_split = 0;  // of the 16 sets, those run in two parts (all with --split 1)
  double ms_whole = 0, ms_split = 0;
  int64_t seg_mismatch = 0;
  double image_max_diff = 0;
};

// --streams N: one configuration's throughput (see TimeLanes).
struct StreamsRun {
  int n;                // lanes (streams) in flight
  double ms_per_batch;  // median over the repeats of (elapsed / batches)
  double ms_min, ms_max;
  bool split = false;   // each lane's batches in two parts (--split 1)
};

struct Result {
  std::string mode;
  int B, C;
  std::string shape;
  double ms_eager, ms_graph, bytes, mem_mb, ws_mb;
  // Per parameter set (a median batch is one of 16 sets' costs: which sets moved shows where a change acts).
  std::vector<double> sets_eager, sets_graph;
  std::vector<uint32_t> set_stages;
  std::string digest;  // --digests 1: hex of the outputs' hash over the 16 sets; empty otherwise
  std::vector<StreamsRun> streams;  // --streams N: 1 lane (back to back), then N lanes; empty otherwise
  SplitRun split;                   // --split 1 (B even): the batch as two halves on two streams
};

double MeasureCopyGBps(cudaStream_t st) {
  const size_t n = size_t{1} << 30;
  void *a, *b;
  CHECK_CUDA(cudaMalloc(&a, n));
  CHECK_CUDA(cudaMalloc(&b, n));
  CHECK_CUDA(cudaMemsetAsync(a, 1, n, st));
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  std::vector<float> t;
  for (int i = 0; i < 25; ++i) {
    CHECK_CUDA(cudaEventRecord(e0, st));
    CHECK_CUDA(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, st));
    CHECK_CUDA(cudaEventRecord(e1, st));
    CHECK_CUDA(cudaEventSynchronize(e1));
    float ms;
    CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    if (i >= 5) t.push_back(ms);
  }
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  return 2.0 * n / (Median(t) * 1e-3) / 1e9;
}

// --streams N (the service's regime): the same row's batches spread over N streams at once, as the server's GPU
// workers run them (server/options.h gpu_workers, default 2: one CudaAugmenter, workspace and stream per worker, and
// a worker's batch on its stream while the other's runs). One host thread enqueues every batch without waiting (eager
// launches with the parameter upload, RunOne's `launch`), batch i on lane i mod n running parameter set i mod 16, and
// the time from the first launch to the last lane's end, over iters·N batches, gives the time per batch (a mean over
// the sets, not a median: a throughput). n = 1 is the same batches back to back on one stream, measured in the same
// run as the baseline: what overlapping the lanes buys is the ratio of the two, not a difference against the
// single-batch figure (that one waits for each batch's end). After the N-lane run, CheckLanesAgree compares each lane's
// last outputs with the same parameter set run alone: the lanes must not disturb each other (exit 1 otherwise).
int g_streams = 1;  // --streams N

// One stream's buffers: outputs (image, seg, DS targets, in that order in `bufs`), workspace and parameters.
struct Lane {
  cudaStream_t st = nullptr;
  augmentd::cuda::PipelineIO io;
  void* ws = nullptr;
  void* params = nullptr;
  std::vector<void*> bufs;
  // --split: the two-part form of the lane's batches (AddSplit): a second stream, the fork / join events, each half's
  // workspace and buffers (the lane's, advanced by the samples before the half).
  cudaStream_t st2 = nullptr;
  cudaEvent_t fork = nullptr, join = nullptr;
  void* hws[2] = {nullptr, nullptr};
  augmentd::cuda::PipelineIO hio[2];
};

void AddSplit(Lane& l, const BatchShape& hs, int C, size_t in_n, size_t out_n) {
  CHECK_CUDA(cudaStreamCreateWithFlags(&l.st2, cudaStreamNonBlocking));
  CHECK_CUDA(cudaEventCreateWithFlags(&l.fork, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&l.join, cudaEventDisableTiming));
  for (int h = 0; h < 2; ++h) {
    CHECK_CUDA(cudaMalloc(&l.hws[h], augmentd::cuda::WorkspaceBytes(hs)));
    CHECK_CUDA(augmentd::cuda::InitWorkspace(hs, l.hws[h], l.st));
    const size_t o = size_t(h) * hs.batch;
    augmentd::cuda::PipelineIO& io = l.hio[h];
    io.image = l.io.image + o * C * in_n;
    io.seg = l.io.seg + o * in_n;
    io.out_image = static_cast<float*>(l.io.out_image) + o * C * out_n;
    io.out_seg = l.io.out_seg + o * out_n;
    for (int d = 0; d < hs.num_ds; ++d)
      io.out_ds[d] = l.io.out_ds[d] + o * size_t(hs.ds[d][0]) * hs.ds[d][1] * hs.ds[d][2];
  }
}

void FreeSplit(Lane& l) {
  if (l.st2 == nullptr) return;
  CHECK_CUDA(cudaStreamSynchronize(l.st));
  CHECK_CUDA(cudaStreamSynchronize(l.st2));
  for (void* p : l.hws) CHECK_CUDA(cudaFree(p));
  CHECK_CUDA(cudaEventDestroy(l.fork));
  CHECK_CUDA(cudaEventDestroy(l.join));
  CHECK_CUDA(cudaStreamDestroy(l.st2));
  l.st2 = nullptr;
}

// Bytes of a lane's output buffers, in Lane::bufs' order.
std::vector<size_t> LaneBufferBytes(const BatchShape& sh) {
  const size_t out_n = size_t(sh.out[0]) * sh.out[1] * sh.out[2];
  std::vector<size_t> sizes = {size_t(sh.batch) * sh.channels * out_n * 4, size_t(sh.batch) * out_n * 2};
  for (int l = 0; l < sh.num_ds; ++l) sizes.push_back(size_t(sh.batch) * sh.ds[l][0] * sh.ds[l][1] * sh.ds[l][2] * 2);
  return sizes;
}

Lane MakeLane(const BatchShape& sh, const augmentd::cuda::PipelineIO& inputs, const std::vector<size_t>& sizes,
              size_t ws_bytes) {
  Lane l;
  CHECK_CUDA(cudaStreamCreateWithFlags(&l.st, cudaStreamNonBlocking));
  for (const size_t n : sizes) {
    void* p;
    CHECK_CUDA(cudaMalloc(&p, n));
    l.bufs.push_back(p);
  }
  CHECK_CUDA(cudaMalloc(&l.ws, ws_bytes));
  CHECK_CUDA(cudaMalloc(&l.params, sizeof(SampleParams) * sh.batch));
  CHECK_CUDA(augmentd::cuda::InitWorkspace(sh, l.ws, l.st));
  l.io.image = inputs.image;  // shared, read-only
  l.io.seg = inputs.seg;
  l.io.out_image = l.bufs[0];
  l.io.out_seg = static_cast<int16_t*>(l.bufs[1]);
  for (int d = 0; d < sh.num_ds; ++d) l.io.out_ds[d] = static_cast<int16_t*>(l.bufs[2 + d]);
  return l;
}

void FreeLane(Lane& l) {
  CHECK_CUDA(cudaStreamSynchronize(l.st));
  for (void* p : l.bufs) CHECK_CUDA(cudaFree(p));
  CHECK_CUDA(cudaFree(l.ws));
  CHECK_CUDA(cudaFree(l.params));
  CHECK_CUDA(cudaStreamDestroy(l.st));
}

// A lane's outputs on the host, Lane::bufs' buffers one after the other (waits for the lane's stream first: the copies
// run on the legacy stream, which a non-blocking stream's work does not order before them).
std::vector<char> ReadLane(const Lane& l, const std::vector<size_t>& sizes) {
  CHECK_CUDA(cudaStreamSynchronize(l.st));
  std::vector<char> host;
  for (size_t j = 0; j < sizes.size(); ++j) {
    const size_t at = host.size();
    host.resize(at + sizes[j]);
    CHECK_CUDA(cudaMemcpy(host.data() + at, l.bufs[j], sizes[j], cudaMemcpyDeviceToHost));
  }
  return host;
}

// iters·N batches (N = --streams) over the first n lanes; five timed repeats after a warm-up.
template <typename Launch, typename SetOf>
StreamsRun TimeLanes(const std::vector<Lane>& lanes, int n, int iters, int sets, const Launch& launch_on,
                     const SetOf& set_of) {
  const int total = iters * g_streams;
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  std::vector<cudaEvent_t> done(n);
  for (cudaEvent_t& e : done) CHECK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  const auto run = [&](int batches, bool timed) {
    CHECK_CUDA(cudaEventRecord(e0, lanes[0].st));
    for (int k = 1; k < n; ++k) CHECK_CUDA(cudaStreamWaitEvent(lanes[k].st, e0, 0));
    for (int i = 0; i < batches; ++i) launch_on(lanes[i % n], set_of(i));
    for (int k = 1; k < n; ++k) {
      CHECK_CUDA(cudaEventRecord(done[k], lanes[k].st));
      CHECK_CUDA(cudaStreamWaitEvent(lanes[0].st, done[k], 0));
    }
    CHECK_CUDA(cudaEventRecord(e1, lanes[0].st));
    CHECK_CUDA(cudaEventSynchronize(e1));
    float ms = 0;
    if (timed) CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    return ms / batches;
  };
  run(std::max(2 * n, sets), false);
  std::vector<float> per_batch;
  for (int r = 0; r < 5; ++r) per_batch.push_back(run(total, true));
  for (cudaEvent_t e : done) CHECK_CUDA(cudaEventDestroy(e));
  CHECK_CUDA(cudaEventDestroy(e0));
  CHECK_CUDA(cudaEventDestroy(e1));
  const auto [lo, hi] = std::minmax_element(per_batch.begin(), per_batch.end());
  return StreamsRun{n, Median(per_batch), *lo, *hi};
}

// After TimeLanes over all lanes: lane k's outputs are those of its last batch (index total − N + k). Each is compared,
// byte for byte, with the same parameter set run again on lane 0 alone; a difference exits 1.
template <typename Launch, typename SetOf>
void CheckLanesAgree(const std::vector<Lane>& lanes, const std::vector<size_t>& sizes, int iters, const Launch& launch_on,
                     const SetOf& set_of) {
  const int n = static_cast<int>(lanes.size()), total = iters * g_streams;
  for (const Lane& l : lanes) CHECK_CUDA(cudaStreamSynchronize(l.st));
  std::vector<std::vector<char>> got;
  for (const Lane& l : lanes) got.push_back(ReadLane(l, sizes));
  for (int k = 0; k < n; ++k) {
    launch_on(lanes[0], set_of(total - n + k));
    if (ReadLane(lanes[0], sizes) != got[k]) {
      std::fprintf(stderr, "--streams: lane %d's outputs differ from the same batch run alone\n", k);
      std::exit(1);
    }
  }
}

Result RunOne(const std::string& mode, const Probs& pr, int B, int C, const int* S, const int* P, int iters,
              cudaStream_t st) {
  BatchShape sh;
  sh.batch = B;
  sh.channels = C;
  for (int d = 0; d < 3; ++d) {
    sh.in[d] = S[d];
    sh.out[d] = P[d];
  }
  sh.elastic = pr.elastic > 0 ? 1 : 0;
  sh.seg_pad_first = g_bgv2_036 ? 1 : 0;
  for (double s : {0.5, 0.25, 0.125, 0.0625}) {
    for (int d = 0; d < 3; ++d) sh.ds[sh.num_ds][d] = std::max(1, augmentd::cuda::RoundHalfEven(P[d] * s));
    ++sh.num_ds;
  }
  size_t free0, total;
  CHECK_CUDA(cudaMemGetInfo(&free0, &total));
  const size_t in_n = size_t(S[0]) * S[1] * S[2], out_n = size_t(P[0]) * P[1] * P[2];
  // Host inputs: N(0.3,1) image, blobby seg with a -1 slab (MakeSeg).
  std::mt19937_64 g(42);
  std::normal_distribution<float> nd(0.3f, 1.0f);
  std::vector<float> h_img(size_t(B) * C * in_n);
  for (float& v : h_img) v = nd(g);
  const std::vector<int16_t> h_seg = MakeSeg(B, S, g);
  void *d_img, *d_seg, *d_out, *d_oseg, *d_ws, *d_params;
  std::vector<void*> d_ds(sh.num_ds);
  const size_t ws_bytes = augmentd::cuda::WorkspaceBytes(sh);
  CHECK_CUDA(cudaMalloc(&d_img, h_img.size() * 4));
  CHECK_CUDA(cudaMalloc(&d_seg, h_seg.size() * 2));
  CHECK_CUDA(cudaMalloc(&d_out, size_t(B) * C * out_n * 4));
  CHECK_CUDA(cudaMalloc(&d_oseg, size_t(B) * out_n * 2));
  CHECK_CUDA(cudaMalloc(&d_ws, ws_bytes));
  CHECK_CUDA(cudaMalloc(&d_params, sizeof(SampleParams) * B));
  augmentd::cuda::PipelineIO io;
  io.image = static_cast<const float*>(d_img);
  io.seg = static_cast<const int16_t*>(d_seg);
  io.out_image = d_out;
  io.out_seg = static_cast<int16_t*>(d_oseg);
  double bytes = double(B) * C * in_n * 4 + double(B) * in_n * 2 + double(B) * C * out_n * 4 + double(B) * out_n * 2;
  for (int l = 0; l < sh.num_ds; ++l) {
    const size_t q = size_t(sh.ds[l][0]) * sh.ds[l][1] * sh.ds[l][2];
    CHECK_CUDA(cudaMalloc(&d_ds[l], B * q * 2));
    io.out_ds[l] = static_cast<int16_t*>(d_ds[l]);
    bytes += double(B) * q * 2;
  }
  size_t free1;
  CHECK_CUDA(cudaMemGetInfo(&free1, &total));
  CHECK_CUDA(cudaMemcpy(d_img, h_img.data(), h_img.size() * 4, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_seg, h_seg.data(), h_seg.size() * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(augmentd::cuda::InitWorkspace(sh, d_ws, st));

  // Parameter batches in pinned memory, each with its own stage mask.
  const int kSets = 16;
  const auto set_of = [&](int i) { return g_profile_set >= 0 ? g_profile_set : i % kSets; };
  SampleParams* h_params;
  CHECK_CUDA(cudaMallocHost(&h_params, sizeof(SampleParams) * B * kSets));
  std::mt19937_64 pg(7);
  std::vector<uint32_t> set_stages(kSets);
  for (int s = 0; s < kSets; ++s) {
    for (int b = 0; b < B; ++b) h_params[s * B + b] = Draw(pg, pr, sh, uint64_t(s) * B + b);
    set_stages[s] = augmentd::cuda::ActiveStages(h_params + s * B, sh);
  }
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  auto launch = [&](int s, uint32_t stg) {
    CHECK_CUDA(cudaMemcpyAsync(d_params, h_params + s * B, sizeof(SampleParams) * B, cudaMemcpyHostToDevice, st));
    CHECK_CUDA(augmentd::cuda::RunPipeline(sh, static_cast<const SampleParams*>(d_params), stg, io, d_ws, st));
  };
  for (int i = 0; i < 20; ++i) launch(set_of(i), set_stages[set_of(i)]);
  CHECK_CUDA(cudaStreamSynchronize(st));
  std::vector<float> t;
  for (int i = 0; i < iters; ++i) {
    CHECK_CUDA(cudaEventRecord(e0, st));
    launch(set_of(i), set_stages[set_of(i)]);
    CHECK_CUDA(cudaEventRecord(e1, st));
    CHECK_CUDA(cudaEventSynchronize(e1));
    float ms;
    CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms);
  }
  const double ms_eager = Median(t);
  const std::vector<double> sets_eager = SetMedians(t, kSets);
  if (g_clocks != nullptr) {
    char config[96];
    std::snprintf(config, sizeof config, "%s:%d:%d:%dx%dx%d", mode.c_str(), B, C, P[0], P[1], P[2]);
    RecordBlockClocks(
        config, kClockBatches, st, [&](int i) { launch(set_of(i), set_stages[set_of(i)]); }, set_of);
  }
  std::string digest;
  if (g_digests) {
    uint64_t h = 0xcbf29ce484222325ULL;
    std::vector<char> host;
    auto fold = [&](const void* d, size_t n) {
      host.resize(n);
      CHECK_CUDA(cudaMemcpy(host.data(), d, n, cudaMemcpyDeviceToHost));
      h = HashBytes(host, h);
    };
    for (int s = 0; s < kSets; ++s) {  // every set in order, whatever --profile-set says
      launch(s, set_stages[s]);
      CHECK_CUDA(cudaStreamSynchronize(st));
      fold(d_out, size_t(B) * C * out_n * 4);
      fold(d_oseg, size_t(B) * out_n * 2);
      for (int l = 0; l < sh.num_ds; ++l) fold(d_ds[l], size_t(B) * sh.ds[l][0] * sh.ds[l][1] * sh.ds[l][2] * 2);
    }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    digest = hex;
  }
  // Graphs: one per distinct stage mask (what a service reusing one workspace per stream would keep), each
  // captured with the parameter upload from a fixed pinned staging buffer; every iteration copies the next
  // parameter set into the staging buffer on the host (outside the timed region) and replays its mask's graph.
  // The staging block is what CudaAugmenter uploads (cuda/engine.cc): the batch's PipelineIO, then its parameters;
  // the kernels read the buffer pointers from the device copy (RunPipelineFromDevice), as in the service.
  constexpr size_t kIo = (sizeof(augmentd::cuda::PipelineIO) + 255) & ~size_t{255};
  const size_t upload = kIo + sizeof(SampleParams) * B;
  char *h_stage, *d_upload;
  CHECK_CUDA(cudaMallocHost(&h_stage, upload));
  CHECK_CUDA(cudaMalloc(&d_upload, upload));
  std::memcpy(h_stage, &io, sizeof(io));
  const auto* d_io = reinterpret_cast<const augmentd::cuda::PipelineIO*>(d_upload);
  const auto* d_gparams = reinterpret_cast<const SampleParams*>(d_upload + kIo);
  std::vector<std::pair<uint32_t, cudaGraphExec_t>> graphs;
  auto graph_for = [&](uint32_t stg) {
    for (auto& g : graphs)
      if (g.first == stg) return g.second;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    CHECK_CUDA(cudaMemcpyAsync(d_upload, h_stage, upload, cudaMemcpyHostToDevice, st));
    CHECK_CUDA(augmentd::cuda::RunPipelineFromDevice(sh, d_gparams, stg, io, d_io, d_ws, st));
    CHECK_CUDA(cudaStreamEndCapture(st, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    CHECK_CUDA(cudaGraphDestroy(graph));
    graphs.emplace_back(stg, exec);
    return exec;
  };
  auto replay = [&](int s) {
    std::memcpy(h_stage + kIo, h_params + s * B, sizeof(SampleParams) * B);
    return graph_for(set_stages[s]);
  };
  for (int i = 0; i < 20; ++i) {
    CHECK_CUDA(cudaGraphLaunch(replay(set_of(i)), st));
    CHECK_CUDA(cudaStreamSynchronize(st));
  }
  t.clear();
  for (int i = 0; i < iters; ++i) {
    const cudaGraphExec_t exec = replay(set_of(i));
    CHECK_CUDA(cudaEventRecord(e0, st));
    CHECK_CUDA(cudaGraphLaunch(exec, st));
    CHECK_CUDA(cudaEventRecord(e1, st));
    CHECK_CUDA(cudaEventSynchronize(e1));
    float ms;
    CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms);
  }
  const double ms_graph = Median(t);
  const std::vector<double> sets_graph = SetMedians(t, kSets);
  // Lane 0: the buffers above on `st`. --streams N adds lanes 1 .. N-1 with their own outputs, workspace and
  // parameters on streams of their own (the inputs are read-only and shared); --split 1 gives every lane the two-part
  // form of its batches (AddSplit).
  std::vector<Lane> lanes(1);
  lanes[0].st = st;
  lanes[0].io = io;
  lanes[0].ws = d_ws;
  lanes[0].params = d_params;
  lanes[0].bufs = {d_out, d_oseg};
  lanes[0].bufs.insert(lanes[0].bufs.end(), d_ds.begin(), d_ds.end());
  const std::vector<size_t> sizes = LaneBufferBytes(sh);
  for (int k = 1; k < g_streams; ++k) lanes.push_back(MakeLane(sh, io, sizes, ws_bytes));
  const bool split_rows = g_split && B % 2 == 0;
  BatchShape hs = sh;  // a half's shape
  hs.batch = B / 2;
  std::vector<uint32_t> half_stages(2 * kSets);  // set t's halves' stage masks
  if (split_rows) {
    for (int t = 0; t < kSets; ++t)
      for (int h = 0; h < 2; ++h) half_stages[2 * t + h] = augmentd::cuda::ActiveStages(h_params + t * B + h * hs.batch, hs);
    for (Lane& l : lanes) AddSplit(l, hs, C, in_n, out_n);
  }
  const auto launch_on = [&](const Lane& l, int set) {
    CHECK_CUDA(cudaMemcpyAsync(l.params, h_params + set * B, sizeof(SampleParams) * B, cudaMemcpyHostToDevice, l.st));
    CHECK_CUDA(augmentd::cuda::RunPipeline(sh, static_cast<const SampleParams*>(l.params), set_stages[set], l.io, l.ws,
                                           l.st));
  };
  // The batch as two halves: the second on the lane's second stream, forked after the upload and joined back.
  const auto launch_split_on = [&](const Lane& l, int set) {
    if (g_split == 2 && half_stages[2 * set] == half_stages[2 * set + 1]) return launch_on(l, set);
    CHECK_CUDA(cudaMemcpyAsync(l.params, h_params + set * B, sizeof(SampleParams) * B, cudaMemcpyHostToDevice, l.st));
    CHECK_CUDA(cudaEventRecord(l.fork, l.st));
    CHECK_CUDA(cudaStreamWaitEvent(l.st2, l.fork, 0));
    for (int h = 1; h >= 0; --h)
      CHECK_CUDA(augmentd::cuda::RunPipeline(hs, static_cast<const SampleParams*>(l.params) + h * hs.batch,
                                             half_stages[2 * set + h], l.hio[h], l.hws[h], h == 0 ? l.st : l.st2));
    CHECK_CUDA(cudaEventRecord(l.join, l.st2));
    CHECK_CUDA(cudaStreamWaitEvent(l.st, l.join, 0));
  };
  SplitRun split;
  if (split_rows) {
    // The outputs of each set, whole then split.
    for (int t = 0; t < kSets; ++t) {
      launch(t, set_stages[t]);
      const std::vector<char> whole_b = ReadLane(lanes[0], sizes);
      launch_split_on(lanes[0], t);
      const std::vector<char> split_b = ReadLane(lanes[0], sizes);
      const size_t img_bytes = sizes[0];
      for (size_t i = 0; i < img_bytes / 4; ++i) {
        float a, b2;
        std::memcpy(&a, whole_b.data() + 4 * i, 4);
        std::memcpy(&b2, split_b.data() + 4 * i, 4);
        split.image_max_diff = std::max(split.image_max_diff, double(std::fabs(a - b2)));
      }
      for (size_t i = img_bytes; i + 1 < whole_b.size(); i += 2)
        split.seg_mismatch += std::memcmp(whole_b.data() + i, split_b.data() + i, 2) != 0;
    }
    for (int i = 0; i < 20; ++i) launch_split_on(lanes[0], set_of(i));
    CHECK_CUDA(cudaStreamSynchronize(st));
    std::vector<float> tw, ts;
    for (int i = 0; i < iters; ++i)
      for (int which = 0; which < 2; ++which) {
        CHECK_CUDA(cudaEventRecord(e0, st));
        if (which == 0) {
          launch(set_of(i), set_stages[set_of(i)]);
        } else {
          launch_split_on(lanes[0], set_of(i));
        }
        CHECK_CUDA(cudaEventRecord(e1, st));
        CHECK_CUDA(cudaEventSynchronize(e1));
        float ms;
        CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
        (which == 0 ? tw : ts).push_back(ms);
      }
    split.ran = true;
    split.mode = g_split;
    for (int t = 0; t < kSets; ++t) split.sets_split += g_split == 1 || half_stages[2 * t] != half_stages[2 * t + 1];
    split.ms_whole = Median(tw);
    split.ms_split = Median(ts);
  }
  // --streams N (the service's regime, see StreamsRun): one lane back to back, N lanes, and with --split N lanes of
  // two-part batches (as the engine runs them in each GPU worker).
  std::vector<StreamsRun> streams;
  if (g_streams > 1) {
    for (const int n : {1, g_streams}) streams.push_back(TimeLanes(lanes, n, iters, kSets, launch_on, set_of));
    CheckLanesAgree(lanes, sizes, iters, launch_on, set_of);
    if (split_rows) {
      streams.push_back(TimeLanes(lanes, g_streams, iters, kSets, launch_split_on, set_of));
      streams.back().split = true;
      CheckLanesAgree(lanes, sizes, iters, launch_split_on, set_of);
    }
  }
  for (Lane& l : lanes) FreeSplit(l);
  for (size_t k = 1; k < lanes.size(); ++k) FreeLane(lanes[k]);
  for (auto& g : graphs) CHECK_CUDA(cudaGraphExecDestroy(g.second));
  CHECK_CUDA(cudaFreeHost(h_stage));
  CHECK_CUDA(cudaFree(d_upload));
  CHECK_CUDA(cudaEventDestroy(e0));
  CHECK_CUDA(cudaEventDestroy(e1));
  CHECK_CUDA(cudaFreeHost(h_params));
  for (void* p : {d_img, d_seg, d_out, d_oseg, d_ws, d_params}) CHECK_CUDA(cudaFree(p));
  for (void* p : d_ds) CHECK_CUDA(cudaFree(p));
  char shape[64];
  std::snprintf(shape, sizeof(shape), "%dx%dx%d<-%dx%dx%d", P[0], P[1], P[2], S[0], S[1], S[2]);
  return Result{mode, B, C, shape, ms_eager, ms_graph, bytes, (free0 - free1) / 1048576.0,
                ws_bytes / 1048576.0, sets_eager, sets_graph, set_stages, digest, streams, split};
}

// spatial_bandwidth_fraction (issue 27): the spatial stage's bytes over its time, as a fraction of the bandwidth of a
// cudaMemcpyAsync device-to-device copy of the same bytes timed in the same run. Bytes of the spatial stage, counted
// as input-crop-read + output-written:
//   N = B·P·(4·C + 2)          one output-sized crop of the float32 image and int16 seg (what an integer crop reads;
//                              the rotated/scaled gather touches a footprint of about that size, scale 0.7–1.4)
//   bytes = N (read) + N (written: float32 image + int16 seg at P, no DS targets, no mask)
// The copy moves the same 2·N bytes (N read + N written), so the fraction is t_copy(N) / t_spatial. Both are
// medians over `iters` alternating iterations (spatial, then copy, each between its own pair of events). The
// spatial launch is RunPipeline with the spatial stage only (direct path: one kernel) and the sample parameters
// uploaded before the timed region (16 parameter sets, rotation + scaling on every sample). A 2·N-byte copy (≈ 50 MB
// at B=2 C=1 128³) is partly L2-resident on an H200 (50 MB L2), so it can beat the 1 GiB copy of the device line:
// the row also prints the fraction against that one (spatial GB/s / 1 GiB copy GB/s), the "% of copy" basis.
struct BandwidthResult {
  int B, C;
  std::string shape;
  double ms_spatial, ms_copy, bytes;
};

BandwidthResult RunSpatialBandwidth(int B, int C, const int* S, const int* P, int iters, cudaStream_t st) {
  BatchShape sh;
  sh.batch = B;
  sh.channels = C;
  for (int d = 0; d < 3; ++d) {
    sh.in[d] = S[d];
    sh.out[d] = P[d];
  }
  sh.seg_pad_first = g_bgv2_036 ? 1 : 0;
  sh.num_ds = 0;  // the spatial stage only (the DS picks are their own launch)
  const size_t in_n = size_t(S[0]) * S[1] * S[2], out_n = size_t(P[0]) * P[1] * P[2];
  std::mt19937_64 g(42);
  std::normal_distribution<float> nd(0.3f, 1.0f);
  std::vector<float> h_img(size_t(B) * C * in_n);
  for (float& v : h_img) v = nd(g);
  const std::vector<int16_t> h_seg = MakeSeg(B, S, g);  // the same seg as RunOne
  const size_t n_bytes = size_t(B) * out_n * (4 * size_t(C) + 2);  // N above
  void *d_img, *d_seg, *d_out, *d_oseg, *d_ws, *d_params, *d_src, *d_dst;
  const size_t ws_bytes = augmentd::cuda::WorkspaceBytes(sh);
  if (ws_bytes == 0) {
    std::fprintf(stderr, "spatial-bw: invalid shape\n");
    std::exit(1);
  }
  const int kSets = 16;
  CHECK_CUDA(cudaMalloc(&d_img, h_img.size() * 4));
  CHECK_CUDA(cudaMalloc(&d_seg, h_seg.size() * 2));
  CHECK_CUDA(cudaMalloc(&d_out, size_t(B) * C * out_n * 4));
  CHECK_CUDA(cudaMalloc(&d_oseg, size_t(B) * out_n * 2));
  CHECK_CUDA(cudaMalloc(&d_ws, ws_bytes));
  CHECK_CUDA(cudaMalloc(&d_params, sizeof(SampleParams) * B * kSets));
  CHECK_CUDA(cudaMalloc(&d_src, n_bytes));
  CHECK_CUDA(cudaMalloc(&d_dst, n_bytes));
  CHECK_CUDA(cudaMemcpy(d_img, h_img.data(), h_img.size() * 4, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_seg, h_seg.data(), h_seg.size() * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemsetAsync(d_src, 1, n_bytes, st));
  CHECK_CUDA(augmentd::cuda::InitWorkspace(sh, d_ws, st));
  augmentd::cuda::PipelineIO io;
  io.image = static_cast<const float*>(d_img);
  io.seg = static_cast<const int16_t*>(d_seg);
  io.out_image = d_out;
  io.out_seg = static_cast<int16_t*>(d_oseg);
  std::vector<SampleParams> h_params(size_t(B) * kSets);
  std::vector<uint32_t> set_stages(kSets);
  std::mt19937_64 pg(7);
  for (int s = 0; s < kSets; ++s) {
    for (int b = 0; b < B; ++b) h_params[s * B + b] = Draw(pg, kSpatial, sh, uint64_t(s) * B + b);
    set_stages[s] = augmentd::cuda::ActiveStages(h_params.data() + s * B, sh);
  }
  CHECK_CUDA(cudaMemcpy(d_params, h_params.data(), sizeof(SampleParams) * h_params.size(), cudaMemcpyHostToDevice));
  const auto* params = static_cast<const SampleParams*>(d_params);
  auto spatial = [&](int s) {
    CHECK_CUDA(augmentd::cuda::RunPipeline(sh, params + s * B, set_stages[s], io, d_ws, st));
  };
  auto copy = [&] { CHECK_CUDA(cudaMemcpyAsync(d_dst, d_src, n_bytes, cudaMemcpyDeviceToDevice, st)); };
  for (int i = 0; i < 20; ++i) {
    spatial(i % kSets);
    copy();
  }
  CHECK_CUDA(cudaStreamSynchronize(st));
  cudaEvent_t e0, e1, e2;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  CHECK_CUDA(cudaEventCreate(&e2));
  std::vector<float> ts, tc;
  for (int i = 0; i < iters; ++i) {
    CHECK_CUDA(cudaEventRecord(e0, st));
    spatial(i % kSets);
    CHECK_CUDA(cudaEventRecord(e1, st));
    copy();
    CHECK_CUDA(cudaEventRecord(e2, st));
    CHECK_CUDA(cudaEventSynchronize(e2));
    float a, b;
    CHECK_CUDA(cudaEventElapsedTime(&a, e0, e1));
    CHECK_CUDA(cudaEventElapsedTime(&b, e1, e2));
    ts.push_back(a);
    tc.push_back(b);
  }
  for (cudaEvent_t e : {e0, e1, e2}) CHECK_CUDA(cudaEventDestroy(e));
  for (void* p : {d_img, d_seg, d_out, d_oseg, d_ws, d_params, d_src, d_dst}) CHECK_CUDA(cudaFree(p));
  char shape[64];
  std::snprintf(shape, sizeof(shape), "%dx%dx%d<-%dx%dx%d", P[0], P[1], P[2], S[0], S[1], S[2]);
  return BandwidthResult{B, C, shape, Median(ts), Median(tc), 2.0 * double(n_bytes)};
}

}  // namespace

int main(int argc, char** argv) {
  // --only MODE:B:C:SHAPE[,...] (e.g. all-on:2:1:0,spatial-bw) runs only those configurations (profiling, A/B runs);
  // --modes a,b,c limits the modes.
  std::string json, only, modes;
  std::vector<int> channels = {1, 4};  // --channels 1,2,4: the channel counts of the mode rows
  int iters = 200;
  const auto usage = [](FILE* f) {
    std::fprintf(f,
                 "usage: cuda_pipeline_bench [--json FILE] [--iters N] [--modes all-on,default-p,...]\n"
                 "                           [--only MODE:B:C:SHAPE,...] [--bgv2 0.3.5|0.3.6] [--channels 1,4]\n"
                 "                           [--profile-set K] [--seg-block 8] [--seg-labels 4] [--digests 0|1]\n"
                 "                           [--streams N] [--split 0|1|2] [--block-clocks FILE]\n"
                 "Times the CUDA kernel layer on device 0; the modes and columns are described at the top of\n"
                 "bench/cuda_pipeline_bench.cc.\n");
  };
  // Numbers: the whole value, in range, or exit 2 naming the flag (bench/bench_args.h).
  using augmentd::bench::ParseInteger;
  using augmentd::bench::ParseIntegerList;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    }
    if (a.rfind("--", 0) != 0 || i + 1 >= argc) {
      const char* what = a.rfind("--", 0) != 0 ? "unexpected argument" : "no value after";
      std::fprintf(stderr, "cuda_pipeline_bench: %s %s\n", what, a.c_str());
      usage(stderr);
      return 2;
    }
    const char* v = argv[++i];  // every option takes a value
    if (a == "--json") {
      json = v;
    } else if (a == "--iters") {
      if (!ParseInteger("--iters", v, 1, 1000000, iters)) return 2;
    } else if (a == "--only") {
      only = "," + std::string(v) + ",";
    } else if (a == "--modes") {
      modes = "," + std::string(v) + ",";
    } else if (a == "--channels") {
      if (!ParseIntegerList("--channels", v, 1, augmentd::cuda::kMaxChannels, channels)) return 2;
    } else if (a == "--profile-set") {
      if (!ParseInteger("--profile-set", v, 0, 15, g_profile_set)) return 2;
    } else if (a == "--split") {
      if (!ParseInteger("--split", v, 0, 2, g_split)) return 2;
    } else if (a == "--streams") {
      if (!ParseInteger("--streams", v, 1, 8, g_streams)) return 2;
    } else if (a == "--seg-block") {
      if (!ParseInteger("--seg-block", v, 1, 1024, g_seg_block)) return 2;
    } else if (a == "--digests") {
      int on = 0;
      if (!ParseInteger("--digests", v, 0, 1, on)) return 2;
      g_digests = on != 0;
    } else if (a == "--block-clocks") {
      if (!augmentd::cuda::BlockClocksBuilt()) {
        std::fprintf(stderr,
                     "cuda_pipeline_bench: --block-clocks needs a build with -DAUGMENTD_BLOCK_CLOCKS=1 in "
                     "CMAKE_CUDA_FLAGS\n");
        return 2;
      }
      g_clocks = std::fopen(v, "w");
      if (g_clocks == nullptr) {
        std::fprintf(stderr, "cuda_pipeline_bench: --block-clocks: cannot write %s\n", v);
        return 2;
      }
      std::fprintf(g_clocks,
                   "config,batch,set,batch_ms,sms,kernel,block,smid,entry_ns,waited_ns,triggered_ns,exit_ns,waited_cyc,"
                   "triggered_cyc,exit_cyc\n");
    } else if (a == "--seg-labels") {  // below kVoteOutOfBounds (32768), the vote's out-of-bounds label
      if (!ParseInteger("--seg-labels", v, 1, 32767, g_seg_labels)) return 2;
    } else if (a == "--bgv2") {
      if (std::strcmp(v, "0.3.5") != 0 && std::strcmp(v, "0.3.6") != 0) {
        std::fprintf(stderr, "--bgv2: 0.3.5 or 0.3.6, got %s\n", v);
        return 2;
      }
      g_bgv2_036 = std::strcmp(v, "0.3.6") == 0;
    } else {
      std::fprintf(stderr, "cuda_pipeline_bench: unknown option %s\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  // Checked before the device is touched, so a bad selection exits 2 on any machine.
  if (const std::string bad = CheckSelection(modes, only, channels); !bad.empty()) {
    std::fprintf(stderr, "cuda_pipeline_bench: %s\n", bad.c_str());
    usage(stderr);
    return 2;
  }
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("no CUDA device\n");
    return 0;
  }
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t st;
  CHECK_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  // The 1 GiB copy (the "% of copy" column) is skipped when --only names one configuration (a profiling run).
  const bool one_config = !only.empty() && std::count(only.begin(), only.end(), ',') == 2;
  const double copy_gbps = one_config ? 0.0 : MeasureCopyGBps(st);
  char copy_text[64] = "not measured (one configuration)";
  if (copy_gbps > 0) std::snprintf(copy_text, sizeof copy_text, "%.0f GB/s (read+write)", copy_gbps);
  std::printf("device %s, %d SMs, L2 %d MiB; device-to-device copy %s; label vote bgv2 %s; seg %d^3 blocks of %d "
              "labels\n",
              prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20, copy_text, g_bgv2_036 ? "0.3.6" : "0.3.5",
              g_seg_block, g_seg_labels);
  const int S1[3] = {205, 205, 205}, P1[3] = {128, 128, 128};
  const int S2[3] = {175, 257, 210}, P2[3] = {80, 160, 160};
  std::vector<Result> res;
  std::vector<BandwidthResult> bw;
  if ((modes.empty() && only.empty()) || Listed(modes, "spatial-bw") || Listed(only, "spatial-bw")) {
    bw.push_back(RunSpatialBandwidth(2, 1, S1, P1, iters, st));
    const BandwidthResult& r = bw.back();
    const double gbps = r.bytes / (r.ms_spatial * 1e-3) / 1e9, copy_same = r.bytes / (r.ms_copy * 1e-3) / 1e9;
    std::printf(
        "| mode | B | C | shape | spatial ms | bytes (crop read + written) | spatial GB/s | copy of the same bytes ms "
        "| copy GB/s | spatial_bandwidth_fraction | vs the 1 GiB copy |\n");
    std::printf("| spatial-bw | %d | %d | %s | %.4f | %.1f MB | %.0f | %.4f | %.0f | %.3f | %.3f |\n", r.B, r.C,
                r.shape.c_str(), r.ms_spatial, r.bytes / 1e6, gbps, r.ms_copy, copy_same, r.ms_copy / r.ms_spatial,
                copy_gbps > 0 ? gbps / copy_gbps : 0.0);
    std::printf(
        "{\"metric\":\"spatial_bandwidth_fraction\",\"value\":%.4f,\"B\":%d,\"C\":%d,\"shape\":\"%s\","
        "\"spatial_ms\":%.5f,\"copy_ms\":%.5f,\"bytes\":%.0f,\"spatial_gbps\":%.1f,\"copy_gbps_same_bytes\":%.1f,"
        "\"copy_gbps_1gib\":%.1f,\"bgv2\":\"%s\"}\n",
        r.ms_copy / r.ms_spatial, r.B, r.C, r.shape.c_str(), r.ms_spatial, r.ms_copy, r.bytes, gbps, copy_same,
        copy_gbps, g_bgv2_036 ? "0.3.6" : "0.3.5");
    std::fflush(stdout);
  }
  for (const auto& [mode, pr] : kModes) {
    const std::string m(mode);
    if (!modes.empty() && !Listed(modes, m)) continue;
    for (int shape = 0; shape < 2; ++shape)
      for (int B : {2, 8})
        for (int C : channels) {
          if (!InMatrix(m, B, C)) continue;
          if (!only.empty() && !Listed(only, RowKey(m, B, C, shape))) continue;
          res.push_back(RunOne(mode, pr, B, C, shape ? S2 : S1, shape ? P2 : P1, iters, st));
          const Result& r = res.back();
          const double ms = std::min(r.ms_eager, r.ms_graph), gbps = r.bytes / (ms * 1e-3) / 1e9;
          char of_copy[32] = "copy not measured";
          if (copy_gbps > 0) std::snprintf(of_copy, sizeof of_copy, "%.0f%% of copy", 100.0 * gbps / copy_gbps);
          std::printf(
              "%-15s B=%d C=%d %-22s eager %.4f ms  graph %.4f ms  %.0f samples/s  %.0f GB/s (%s)"
              "  mem %.0f MiB (workspace %.0f)%s%s\n",
              r.mode.c_str(), r.B, r.C, r.shape.c_str(), r.ms_eager, r.ms_graph,
              r.B / (ms * 1e-3), gbps, of_copy, r.mem_mb, r.ws_mb, r.digest.empty() ? "" : "  digest ",
              r.digest.c_str());
          if (r.split.ran)
            std::printf("%-15s B=%d C=%d %-22s split %d (%d of 16 sets in two parts): whole %.4f ms, two halves on "
                        "two streams %.4f ms (%.2fx); halves vs whole over 16 sets: %lld seg voxels differ, image max "
                        "|diff| %.3g\n",
                        r.mode.c_str(), r.B, r.C, r.shape.c_str(), r.split.mode, r.split.sets_split,
                        r.split.ms_whole, r.split.ms_split, r.split.ms_whole / r.split.ms_split,
                        static_cast<long long>(r.split.seg_mismatch), r.split.image_max_diff);
          if (!r.streams.empty()) {
            const StreamsRun& one = r.streams[0];
            std::printf("%-15s B=%d C=%d %-22s streams: 1 lane %.4f ms/batch (%.0f samples/s)", r.mode.c_str(), r.B,
                        r.C, r.shape.c_str(), one.ms_per_batch, r.B / (one.ms_per_batch * 1e-3));
            for (size_t q = 1; q < r.streams.size(); ++q) {
              const StreamsRun& many = r.streams[q];
              std::printf(", %d lanes%s %.4f ms/batch (%.0f samples/s; repeats %.4f-%.4f), %.2fx", many.n,
                          many.split ? " of two-part batches" : "", many.ms_per_batch,
                          r.B / (many.ms_per_batch * 1e-3), many.ms_min, many.ms_max,
                          one.ms_per_batch / many.ms_per_batch);
            }
            std::printf("; lanes' outputs equal run alone\n");
          }
          std::fflush(stdout);
        }
  }
  if (!json.empty()) {
    FILE* f = std::fopen(json.c_str(), "w");
    if (!f) return 1;
    std::fprintf(f,
                 "{\"impl\":\"device\",\"name\":\"%s\",\"copy_gbps\":%.1f,\"bgv2\":\"%s\",\"profile_set\":%d,"
                 "\"seg_block\":%d,\"seg_labels\":%d}\n",
                 prop.name, copy_gbps, g_bgv2_036 ? "0.3.6" : "0.3.5", g_profile_set, g_seg_block, g_seg_labels);
    // Its own impl: readers of the "augmentd" rows (bench/cuda_coverage_table.py) expect ms_eager / ms_graph.
    for (const BandwidthResult& r : bw)
      std::fprintf(f,
                   "{\"impl\":\"augmentd-spatial-bw\",\"mode\":\"spatial-bw\",\"B\":%d,\"C\":%d,\"shape\":\"%s\","
                   "\"spatial_ms\":%.5f,\"copy_ms\":%.5f,\"bytes\":%.0f,\"spatial_bandwidth_fraction\":%.4f}\n",
                   r.B, r.C, r.shape.c_str(), r.ms_spatial, r.ms_copy, r.bytes, r.ms_copy / r.ms_spatial);
    for (const Result& r : res) {
      std::string lanes;
      for (const StreamsRun& q : r.streams) {
        char buf[160];
        std::snprintf(buf, sizeof buf,
                      "%s{\"n\":%d,\"split\":%s,\"ms_per_batch\":%.5f,\"ms_min\":%.5f,\"ms_max\":%.5f}",
                      lanes.empty() ? "" : ",", q.n, q.split ? "true" : "false", q.ms_per_batch, q.ms_min, q.ms_max);
        lanes += buf;
      }
      if (!lanes.empty()) lanes = ",\"streams\":[" + lanes + "]";
      if (r.split.ran) {
        char buf[200];
        std::snprintf(buf, sizeof buf,
                      ",\"split\":{\"split_mode\":%d,\"split_sets\":%d,\"ms_whole\":%.5f,\"ms_two_parts\":%.5f,"
                      "\"seg_mismatch\":%lld,\"image_max_diff\":%.3g}",
                      r.split.mode, r.split.sets_split, r.split.ms_whole, r.split.ms_split,
                      static_cast<long long>(r.split.seg_mismatch), r.split.image_max_diff);
        lanes += buf;
      }
      std::fprintf(f,
                   "{\"impl\":\"augmentd\",\"mode\":\"%s\",\"B\":%d,\"C\":%d,\"shape\":\"%s\",\"ms_eager\":%.5f,"
                   "\"ms_graph\":%.5f,\"bytes\":%.0f,\"mem_mb\":%.1f,\"ws_mb\":%.1f,\"sets_ms_eager\":%s,"
                   "\"sets_ms_graph\":%s,\"set_stages\":%s%s%s%s%s}\n",
                   r.mode.c_str(), r.B, r.C, r.shape.c_str(), r.ms_eager, r.ms_graph, r.bytes, r.mem_mb, r.ws_mb,
                   JsonArray(r.sets_eager, "%.5f").c_str(), JsonArray(r.sets_graph, "%.5f").c_str(),
                   JsonArray(r.set_stages, "%u").c_str(), r.digest.empty() ? "" : ",\"digest\":\"",
                   r.digest.c_str(), r.digest.empty() ? "" : "\"", lanes.c_str());
    }
    std::fclose(f);
  }
  CHECK_CUDA(cudaStreamDestroy(st));
  return 0;
}
