// bench/cuda_chain_bench.cc — the generic CUDA chain on one GPU (issue 10): nnUNetTrainerDA5's pipeline per batch
// and the marginal cost of each of its transforms, device in / device out through CudaAugmenter (what the service
// runs for a CUDA session). bgv2's DA5 on all cores is the other column: bench/cuda_bgv2_16cores.py --modes da5.
//
//   cuda_chain_bench [--patch 128,128,128] [--batch 2] [--channels 1] [--iters 20] [--json out.jsonl]
//   cuda_chain_bench --default [...]   nnU-Net's default pipeline, fused kernels vs the generic chain (issue 21)
//   cuda_chain_bench --cascade [...]   nnU-Net's 3d_cascade_fullres pipeline vs the default one (issue 24)
//   cuda_chain_bench [--cascade] --stage-times [...]  also each DA5 (or cascade) row's GPU time per chain step (below)
//   cuda_chain_bench --kernel-times [...]   the cascade perturbations' kernels alone, per launch (below)
//   cuda_chain_bench --split-masks [...]    host only, no device: how often a batch's two halves draw different
//                                           stage masks under nnU-Net's default spec (below)
//   cuda_chain_bench --policies [--workers 2] [...]  nnU-Net's default spec under each CudaSplitPolicy, one batch at
//                                           a time and on --workers threads at once (below)
//
// Rows (B × C at the preset's initial patch size → patch):
//   da5          nnunet_da5 with DA5's probabilities (one-of groups included);
//   da5-all-on   every entry applied (p = 1; one-of groups still pick one member per sample);
//   base         [spatial, downsample_seg_for_ds] of the preset;
//   +<kind>#i    [spatial, entry i forced on (p = 1, out of its one-of group), downsample_seg_for_ds]; its cost is
//                reported as the difference to `base` (the marginal cost of that transform in the chain).
// With --default the rows are instead nnunet_default (B × C, every transform on / default probabilities) through
// CudaAugmenter (the fused kernels: what the service runs) and through CudaChain directly (the generic chain, whose
// spatial step is the fused spatial kernel): `chain − fused` is what retiring the fused intensity path would cost.
// With --cascade: nnU-Net's 3d_cascade_fullres training pipeline (foreground labels 1..3; 2 seg channels in: the
// labels and the previous stage's prediction) with its probabilities and all on, beside nnunet_default (fused) on the
// same patch: `cascade − default` is what the cascade's transforms (one-hot growth, binary operators, connected
// components on the chain) cost per batch.
// --stage-times: the da5 and da5-all-on rows (with --cascade: each cascade row) once more through CudaChain directly
// with a ChainStageTimer (augment/cuda/chain.h: one event per step of Run), a table of each step's median ms per
// row: where the time goes (the first step, "host: …", is the GPU's idle time while the host draws and packs the
// batch).
// --kernel-times: the binary operator's round (per operator, radius and channel) and the component removal's launch
// set (1 round per channel, 3 rounds) called directly on B samples of 4 channels at the patch: channel 0 N(0.3, 1);
// 1 "blobs": label 1 of labels 0..3 in 4³ blobs (the --cascade rows' data, 25 % dense, percolating, without the
// spatial resampling); 2 "balls": three balls of radius P/10…P/5 (a previous stage's prediction: a few compact
// objects); 3 "empty" (an absent label). Each kernel between two events (the launchers' kernel_marks), the image
// restored before every launch; median ms per kernel.
// --split-masks: for nnU-Net's default spec (its probabilities, and every entry applied) at --batch / --channels /
// --patch, --iters batches of fresh draws (seed 7, consecutive sample indices) are drawn and translated as
// CudaAugmenter does (DrawSampleParams, TranslateSample), and the stage masks of the batch's two parts (ceil(B/2),
// floor(B/2); cuda/engine.h "Two parts") compared with cuda::ActiveStages: how many batches' parts differ, how many
// differ in a pass after the spatial kernel, in having any such pass (one part on the direct path), only in
// kStageResample (one part all centre crops), and how often each bit differs. What CudaSplitPolicy::kWhenMasksDiffer
// would split, and which bits such a policy could key on. Runs without a GPU.
// --policies: nnU-Net's default spec (its probabilities, and every entry applied) through CudaAugmenter under each
// CudaSplitPolicy (whole, always, differ, direct; cuda/engine.h "Two parts"), two ways: one batch at a time (the
// median and p90 below), and --workers threads at once, each with its own augmenter, stream and outputs, --iters
// batches each after 3 warm-up batches, as the server's gpu_workers run sessions' batches (ms a batch = the wall time
// from the threads' common start to the last stream's end, over all their batches; host draws included). The share
// of batches run in two parts (and, with AUGMENTD_CUDA_GRAPHS=1, replayed from a graph) is from the augmenters'
// counters. Three rounds, the policies interleaved in each.
// Timing: CUDA events around CudaAugmenter::Run on one stream; median and p90 of --iters batches after 3 warm-up
// batches, each batch with fresh draws (first_sample_index advances). Inputs: N(0.3, 1) image, labels 0..3 in 4³
// blobs. Exit status 2 without a CUDA device (prints why), 1 on any engine error.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "augment/batch.h"
#include "augment/cuda/chain.h"
#include "augment/cuda/engine.h"
#include "augment/cuda/fused_params.h"
#include "augment/kernels/cuda/pipeline_cuda.h"
#include "augment/pipeline.h"
#include "augment/testing/cascade_pipeline.h"
#include "augment/testing/random_volume.h"
#include "augment/transforms/apply_random_binary_operator/apply_random_binary_operator.h"
#include "augment/transforms/apply_random_binary_operator/binop_cuda_types.h"
#include "augment/transforms/apply_random_binary_operator/binop_passes.h"
#include "augment/transforms/remove_random_connected_component/cc_cuda_types.h"
#include "bench/bench_args.h"

namespace {

using augmentd::PipelineSpec;
using augmentd::TransformKind;
using augmentd::TransformSpec;
using augmentd::bench::ParseInteger;
using augmentd::bench::ParseIntegerList;

struct Timing {
  double median_ms = 0, p90_ms = 0;
};

// Per-step times of the timed batches (--stage-times), steps in order of first appearance.
struct StageTimes {
  std::vector<std::string> names;
  std::vector<std::vector<double>> ms;
  void Add(const std::string& name, double v) {
    size_t i = std::find(names.begin(), names.end(), name) - names.begin();
    if (i == names.size()) {
      names.push_back(name);
      ms.emplace_back();
    }
    ms[i].push_back(v);
  }
  double Median(const std::string& name) const {
    size_t i = std::find(names.begin(), names.end(), name) - names.begin();
    if (i == names.size() || ms[i].empty()) return -1;
    std::vector<double> v = ms[i];
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
};

#define CHECK_CUDA(expr)                                                                   \
  do {                                                                                     \
    cudaError_t e_ = (expr);                                                               \
    if (e_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s: %s\n", #expr, cudaGetErrorString(e_));                     \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

// Device copies of one random input batch at `S`.
struct DeviceInput {
  float* image = nullptr;
  int16_t* seg = nullptr;
  DeviceInput(int64_t B, int64_t C, const std::vector<int64_t>& S, int64_t seg_channels = 1) {
    const int64_t n = S[0] * S[1] * S[2];
    std::mt19937_64 g(42);
    std::vector<float> img(B * C * n);
    augmentd::testing::FillNormal(g, img);
    std::vector<int16_t> lab(B * seg_channels * n);
    for (int64_t b = 0; b < B * seg_channels; ++b) augmentd::testing::FillBlobbyLabels(g, S, 4, lab.data() + b * n);
    CHECK_CUDA(cudaMalloc(&image, img.size() * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&seg, lab.size() * sizeof(int16_t)));
    CHECK_CUDA(cudaMemcpy(image, img.data(), img.size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(seg, lab.data(), lab.size() * sizeof(int16_t), cudaMemcpyHostToDevice));
  }
  ~DeviceInput() {
    cudaFree(image);
    cudaFree(seg);
  }
};

// Device outputs for `layout` (exits 1 on a layout error or a failed allocation); FreeOutputs releases them.
augmentd::CudaBatchOutput AllocOutputs(const absl::StatusOr<augmentd::CudaOutputLayout>& layout) {
  if (!layout.ok()) {
    std::fprintf(stderr, "OutputLayout: %s\n", layout.status().ToString().c_str());
    std::exit(1);
  }
  augmentd::CudaBatchOutput out;
  CHECK_CUDA(cudaMalloc(&out.image, layout->image_bytes));
  for (size_t bytes : layout->seg_bytes) {
    void* p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, bytes));
    out.seg.push_back(static_cast<int16_t*>(p));
  }
  return out;
}

void FreeOutputs(const augmentd::CudaBatchOutput& out) {
  cudaFree(out.image);
  for (int16_t* p : out.seg) cudaFree(p);
}

// Runs `spec` `iters` times (after 3 warm-up batches) on `in` through CudaAugmenter (the service's path), or with
// `chain_only` through CudaChain directly (the generic chain even where the fused kernels cover the spec), with
// `policy` under that split policy (else the augmenter's default); exits 1 on an engine error.
Timing TimeSpec(const PipelineSpec& spec, const DeviceInput& in, int64_t B, int64_t C, int iters,
                cudaStream_t stream, bool chain_only = false, int64_t seg_channels = 1,
                StageTimes* stage_times = nullptr, const augmentd::CudaSplitPolicy* policy = nullptr) {
  std::unique_ptr<augmentd::CudaAugmenter> aug;
  std::unique_ptr<augmentd::CudaChain> chain;
  augmentd::ChainStageTimer timer;
  absl::Status created;
  if (chain_only) {
    auto c = augmentd::CudaChain::Create(spec);
    if (c.ok()) chain = std::move(*c); else created = c.status();
    if (chain && stage_times != nullptr) chain->set_stage_timer(&timer);
  } else {
    auto a = augmentd::CudaAugmenter::Create(spec, 0);
    if (a.ok()) aug = std::move(*a); else created = a.status();
    if (aug && policy != nullptr) aug->set_split_policy(*policy);
  }
  if (!created.ok()) {
    std::fprintf(stderr, "Create: %s\n", created.ToString().c_str());
    std::exit(1);
  }
  const std::vector<int64_t>& S = spec.input_patch_size;
  augmentd::CudaBatchInput input{in.image, in.seg, {B, C, S[0], S[1], S[2]}, seg_channels};
  auto layout = chain ? chain->OutputLayout(input.image_shape, augmentd::DType::kFloat32, seg_channels)
                      : aug->OutputLayout(input.image_shape, augmentd::DType::kFloat32, seg_channels);
  augmentd::CudaBatchOutput out = AllocOutputs(layout);
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  augmentd::RunOptions opt;
  opt.seed = 7;
  std::vector<double> ms;
  for (int i = 0; i < iters + 3; ++i) {
    opt.first_sample_index = static_cast<uint64_t>(i) * B;
    CHECK_CUDA(cudaEventRecord(start, stream));
    std::vector<augmentd::SampleRecord> records;
    absl::Status st = chain ? chain->Run(input, out, opt, stream, records) : aug->Run(input, out, opt, stream);
    if (!st.ok()) {
      std::fprintf(stderr, "Run: %s\n", st.ToString().c_str());
      std::exit(1);
    }
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, start, stop));
    if (i >= 3) ms.push_back(t);
    if (chain && stage_times != nullptr) {
      auto steps = timer.Collect();
      if (!steps.ok()) {
        std::fprintf(stderr, "stage timer: %s\n", steps.status().ToString().c_str());
        std::exit(1);
      }
      // A step may occur several times in a batch (never in today's chains): summed.
      StageTimes batch;
      for (const auto& [name, v] : *steps) batch.Add(name, v);
      if (i >= 3)
        for (size_t k = 0; k < batch.names.size(); ++k) {
          double sum = 0;
          for (double v : batch.ms[k]) sum += v;
          stage_times->Add(batch.names[k], sum);
        }
    }
  }
  std::sort(ms.begin(), ms.end());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  FreeOutputs(out);
  return {ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 9 / 10)]};
}

// --policies' second form (see the header): `workers` threads, each with its own CudaAugmenter under `policy`, stream
// and outputs, `iters` batches each after 3 warm-up batches. Returns ms a batch and the shares run in two parts and
// replayed from a CUDA graph.
struct WorkersTiming {
  double ms_per_batch = 0, split_share = 0, replay_share = 0;  // replays: graphs on (AUGMENTD_CUDA_GRAPHS=1) only
};
WorkersTiming TimeWorkers(const PipelineSpec& spec, const DeviceInput& in, int64_t B, int64_t C, int iters,
                          int workers, augmentd::CudaSplitPolicy policy) {
  struct Worker {
    std::unique_ptr<augmentd::CudaAugmenter> aug;
    cudaStream_t stream = nullptr;
    augmentd::CudaBatchOutput out;
  };
  const std::vector<int64_t>& S = spec.input_patch_size;
  const augmentd::CudaBatchInput input{in.image, in.seg, {B, C, S[0], S[1], S[2]}, 1};
  std::vector<Worker> ws(workers);
  for (Worker& w : ws) {
    auto a = augmentd::CudaAugmenter::Create(spec, 0);
    if (!a.ok()) {
      std::fprintf(stderr, "Create: %s\n", a.status().ToString().c_str());
      std::exit(1);
    }
    w.aug = std::move(*a);
    w.aug->set_split_policy(policy);
    w.out = AllocOutputs(w.aug->OutputLayout(input.image_shape, augmentd::DType::kFloat32, 1));
    CHECK_CUDA(cudaStreamCreateWithFlags(&w.stream, cudaStreamNonBlocking));
  }
  // Worker w's batch i draws samples (w · (iters + 3) + i) · B onwards: every batch its own draws. A failure is kept
  // in the worker's status (the threads are joined before the process exits on the main thread).
  std::vector<absl::Status> failed(workers);
  const auto run = [&](int w, int first, int count) {
    augmentd::RunOptions opt;
    opt.seed = 7;
    for (int i = first; i < first + count && failed[w].ok(); ++i) {
      opt.first_sample_index = (static_cast<uint64_t>(w) * (iters + 3) + i) * B;
      failed[w] = ws[w].aug->Run(input, ws[w].out, opt, ws[w].stream);
    }
    const cudaError_t e = cudaStreamSynchronize(ws[w].stream);
    if (failed[w].ok() && e != cudaSuccess) failed[w] = absl::InternalError(cudaGetErrorString(e));
  };
  const auto exit_on_failure = [&] {
    for (const absl::Status& st : failed) {
      if (st.ok()) continue;
      std::fprintf(stderr, "worker Run: %s\n", st.ToString().c_str());
      std::exit(1);
    }
  };
  for (int w = 0; w < workers; ++w) run(w, 0, 3);
  exit_on_failure();
  int64_t split_before = 0, replays_before = 0;
  for (const Worker& w : ws) {
    split_before += w.aug->graph_counters().split;
    replays_before += w.aug->graph_counters().replays;
  }
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      ++ready;
      while (!go.load()) std::this_thread::yield();
      run(w, 3, iters);
    });
  }
  while (ready.load() < workers) std::this_thread::yield();
  const auto t0 = std::chrono::steady_clock::now();
  go = true;
  for (std::thread& t : threads) t.join();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  exit_on_failure();
  int64_t split = -split_before, replays = -replays_before;
  for (Worker& w : ws) {
    split += w.aug->graph_counters().split;
    replays += w.aug->graph_counters().replays;
    cudaStreamDestroy(w.stream);
    FreeOutputs(w.out);
  }
  const double batches = static_cast<double>(workers) * iters;
  return {ms / batches, static_cast<double>(split) / batches, static_cast<double>(replays) / batches};
}

// --stage-times: each row once more through CudaChain directly with per-step events; prints a table of each step's
// median ms per row (and writes "stage <row>: <step>" JSON lines to `out`).
void StageTimeTable(const std::vector<std::pair<std::string, const PipelineSpec*>>& rows, const DeviceInput& in,
                    int64_t B, int64_t C, int iters, cudaStream_t stream, int64_t seg_channels, FILE* out) {
  std::vector<StageTimes> st(rows.size());
  std::vector<Timing> whole(rows.size());
  std::vector<std::string> steps;
  for (size_t r = 0; r < rows.size(); ++r) {
    whole[r] = TimeSpec(*rows[r].second, in, B, C, iters, stream, /*chain_only=*/true, seg_channels, &st[r]);
    for (const std::string& s : st[r].names)
      if (std::find(steps.begin(), steps.end(), s) == steps.end()) steps.push_back(s);
  }
  std::printf("\n## per-step GPU time (CudaChain with a ChainStageTimer), median ms of %d batches\n\n| step |", iters);
  for (const auto& row : rows) std::printf(" %s |", row.first.c_str());
  std::printf("\n|---|");
  for (size_t r = 0; r < rows.size(); ++r) std::printf("---:|");
  std::printf("\n");
  for (const std::string& s : steps) {
    std::printf("| %s |", s.c_str());
    for (size_t r = 0; r < rows.size(); ++r) {
      const double m = st[r].Median(s);
      if (m < 0) std::printf(" – |"); else std::printf(" %.3f |", m);
      if (out != nullptr && m >= 0)
        std::fprintf(out, "{\"row\": \"stage %s: %s\", \"B\": %lld, \"C\": %lld, \"median_ms\": %.4f}\n",
                     rows[r].first.c_str(), s.c_str(), (long long)B, (long long)C, m);
    }
    std::printf("\n");
  }
  std::printf("| (whole batch, same runs) |");
  for (size_t r = 0; r < rows.size(); ++r) std::printf(" %.3f |", whole[r].median_ms);
  std::printf("\n");
}

// --kernel-times (header comment). Returns the exit status.
int KernelTimes(int64_t B, const std::vector<int64_t>& P, int iters, cudaStream_t stream, FILE* out) {
  namespace ch = augmentd::cuda::chain;
  const int64_t C = 4, n = P[0] * P[1] * P[2];
  const int32_t shape[3] = {static_cast<int32_t>(P[0]), static_cast<int32_t>(P[1]), static_cast<int32_t>(P[2])};
  std::mt19937_64 g(42);
  std::vector<float> img(B * C * n);
  std::vector<float> noise(n);
  std::vector<int16_t> lab(n);
  int64_t fg[4] = {0, 0, 0, 0};
  for (int64_t b = 0; b < B; ++b) {
    augmentd::testing::FillNormal(g, noise);
    augmentd::testing::FillBlobbyLabels(g, P, 4, lab.data());
    float* x = img.data() + b * C * n;
    std::copy(noise.begin(), noise.end(), x);
    std::uniform_real_distribution<double> u(0, 1);
    double ball[3][4];
    for (auto& bl : ball) {
      for (int d = 0; d < 3; ++d) bl[d] = P[d] * (0.25 + 0.5 * u(g));
      bl[3] = std::min({P[0], P[1], P[2]}) * (0.1 + 0.1 * u(g));
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c[3] = {i / (P[1] * P[2]), (i / P[2]) % P[1], i % P[2]};
      bool in = false;
      for (const auto& bl : ball) {
        double d2 = 0;
        for (int d = 0; d < 3; ++d) d2 += (c[d] - bl[d]) * (c[d] - bl[d]);
        in = in || d2 <= bl[3] * bl[3];
      }
      x[n + i] = lab[i] == 1 ? 1.0f : 0.0f;
      x[2 * n + i] = in ? 1.0f : 0.0f;
      x[3 * n + i] = 0.0f;
      fg[1] += lab[i] == 1;
      fg[2] += in;
    }
  }
  const char* const channel_name[4] = {"", "blobs", "balls", "empty"};
  const int64_t S = 3 * B;  // component slots: 3 rounds
  float *pristine = nullptr, *x = nullptr;
  uint8_t *m0 = nullptr, *ccmask = nullptr;
  uint16_t* pair = nullptr;
  int32_t *labels = nullptr, *ints = nullptr, *boxes = nullptr;
  CHECK_CUDA(cudaMalloc(&pristine, img.size() * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&x, img.size() * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(pristine, img.data(), img.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMalloc(&m0, 3 * B * n));
  CHECK_CUDA(cudaMalloc(&pair, sizeof(uint16_t) * B * n));
  CHECK_CUDA(cudaMalloc(&boxes, sizeof(int32_t) * 12 * B));
  CHECK_CUDA(cudaMalloc(&ccmask, S * n));
  CHECK_CUDA(cudaMalloc(&labels, sizeof(int32_t) * 2 * S * n));
  CHECK_CUDA(cudaMalloc(&ints, sizeof(int32_t) * (S + S * ch::CcTiles(n))));
  cudaEvent_t ev[8];
  for (cudaEvent_t& e : ev) CHECK_CUDA(cudaEventCreate(&e));
  std::printf("# kernel times — B=%lld, %lldx%lldx%lld, foreground: blobs %.1f %%, balls %.1f %%, empty 0 %%; median of "
              "%d\n\n", (long long)B, (long long)P[0], (long long)P[1], (long long)P[2], 100.0 * fg[1] / (B * n),
              100.0 * fg[2] / (B * n), iters);
  // Runs `launch` (recording ev[0 .. kernels]) iters + 2 times on a fresh image; medians per kernel and of the whole.
  const auto time = [&](int kernels, const auto& launch) {
    std::vector<std::vector<double>> ms(kernels + 1);
    for (int it = 0; it < iters + 2; ++it) {
      CHECK_CUDA(cudaMemcpyAsync(x, pristine, img.size() * sizeof(float), cudaMemcpyDeviceToDevice, stream));
      CHECK_CUDA(launch());
      CHECK_CUDA(cudaEventSynchronize(ev[kernels]));
      if (it < 2) continue;
      for (int k = 0; k <= kernels; ++k) {
        float t = 0;
        CHECK_CUDA(cudaEventElapsedTime(&t, ev[k < kernels ? k : 0], ev[k < kernels ? k + 1 : kernels]));
        ms[k].push_back(t);
      }
    }
    std::vector<double> med;
    for (auto& v : ms) {
      std::sort(v.begin(), v.end());
      med.push_back(v[v.size() / 2]);
    }
    return med;
  };
  std::printf("| binary operator round (B samples) | channel | r | k | box | row | column | plane | row 2 | column 2 |"
              " plane 2 | round |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  const std::pair<const char*, augmentd::BinaryOperator> ops[] = {{"dilation", augmentd::BinaryOperator::kDilation},
                                                                  {"erosion", augmentd::BinaryOperator::kErosion},
                                                                  {"opening", augmentd::BinaryOperator::kOpening},
                                                                  {"closing", augmentd::BinaryOperator::kClosing}};
  for (int32_t channel = 1; channel < C; ++channel) {
    for (const auto& [name, op] : ops) {
      for (double r : {1.0, 2.5, 4.0, 6.0, 8.0}) {
        const std::vector<double> h = augmentd::binary_operator_internal::AxisCosts(r, 3);
        std::vector<ch::BinopSample> recs(B);
        std::vector<double> costs;
        for (int64_t b = 0; b < B; ++b) {
          ch::BinopSample& s = recs[b];
          s.on = 1;
          s.channel = channel;
          s.others = uint64_t{14} & ~(uint64_t{1} << channel);  // the other one-hot channels
          const bool dil_first = op == augmentd::BinaryOperator::kDilation || op == augmentd::BinaryOperator::kClosing;
          s.pass1 = dil_first ? ch::kBinopDilate : ch::kBinopErode;
          s.pass2 = op == augmentd::BinaryOperator::kOpening   ? ch::kBinopDilate
                    : op == augmentd::BinaryOperator::kClosing ? ch::kBinopErode
                                                               : ch::kBinopNone;
          s.k = static_cast<int32_t>(h.size());
          s.ndim = 3;
          s.r2 = r * r;
          s.unimodal = ch::binop::BinopSplit(h.data(), s.k, &s.split) ? 1 : 0;
          s.costs_offset = static_cast<int32_t>(costs.size());
          costs.insert(costs.end(), h.begin(), h.end());
        }
        ch::BinopSample* d_recs = nullptr;
        double* d_costs = nullptr;
        CHECK_CUDA(cudaMalloc(&d_recs, sizeof(ch::BinopSample) * B));
        CHECK_CUDA(cudaMalloc(&d_costs, sizeof(double) * costs.size()));
        CHECK_CUDA(cudaMemcpy(d_recs, recs.data(), sizeof(ch::BinopSample) * B, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(d_costs, costs.data(), sizeof(double) * costs.size(), cudaMemcpyHostToDevice));
        const bool two = recs[0].pass2 != ch::kBinopNone;
        const int kernels = two ? 7 : 4;  // box (memset + box kernel), then row, column, plane per pass
        const std::vector<double> med = time(kernels, [&] {
          return ch::LaunchBinaryOperatorRound(static_cast<int32_t>(B), static_cast<int32_t>(C), shape, x, d_recs,
                                               d_costs, two, m0, m0 + B * n, m0 + 2 * B * n, pair, boxes, stream, ev);
        });
        std::printf("| %s | %s | %.1f | %zu |", name, channel_name[channel], r, h.size());
        for (int k = 0; k < 7; ++k) {
          if (k < kernels) std::printf(" %.3f |", med[k]); else std::printf(" – |");
        }
        std::printf(" %.3f |\n", med[kernels]);
        if (out != nullptr)
          std::fprintf(out, "{\"row\": \"kernel binop %s %s r=%.1f\", \"B\": %lld, \"median_ms\": %.4f}\n", name,
                       channel_name[channel], r, (long long)B, med[kernels]);
        cudaFree(d_recs);
        cudaFree(d_costs);
      }
    }
  }
  std::printf("\n| component removal launch set | local | border | compress | count | pick | apply | set |\n"
              "|---|---:|---:|---:|---:|---:|---:|---:|\n");
  // (rounds, first channel): one round on each channel, then the three channels as one set (the cascade's).
  const std::vector<std::pair<int32_t, int32_t>> sets = {{1, 1}, {1, 2}, {1, 3}, {3, 1}};
  for (const std::pair<int32_t, int32_t>& rf : sets) {
    const int32_t rounds = rf.first, first = rf.second;
    std::vector<ch::CcSample> recs(rounds * B);
    for (int32_t rd = 0; rd < rounds; ++rd)
      for (int64_t b = 0; b < B; ++b) {
        ch::CcSample& s = recs[rd * B + b];
        s.on = 1;
        s.channel = first + rd;
        s.limit = static_cast<double>(n) * 0.15;
        s.component_draw = 0.37;
        s.fill_channel = -1;
      }
    ch::CcSample* d_recs = nullptr;
    CHECK_CUDA(cudaMalloc(&d_recs, sizeof(ch::CcSample) * recs.size()));
    CHECK_CUDA(cudaMemcpy(d_recs, recs.data(), sizeof(ch::CcSample) * recs.size(), cudaMemcpyHostToDevice));
    const int64_t slots = rounds * B;
    const std::vector<double> med = time(6, [&] {
      return ch::LaunchRemoveComponentRound(static_cast<int32_t>(B), rounds, static_cast<int32_t>(C), shape, x,
                                            d_recs, ccmask, labels, labels + slots * n, ints, ints + slots, stream, ev);
    });
    if (rounds == 1) std::printf("| 1 round × B, %s |", channel_name[first]);
    else std::printf("| %d rounds × B (blobs, balls, empty) |", rounds);
    for (int k = 0; k <= 6; ++k) std::printf(" %.3f |", med[k]);
    std::printf("\n");
    if (out != nullptr)
      std::fprintf(out, "{\"row\": \"kernel components %d rounds from %s\", \"B\": %lld, \"median_ms\": %.4f}\n",
                   rounds, channel_name[first], (long long)B, med[6]);
    cudaFree(d_recs);
  }
  for (cudaEvent_t e : ev) cudaEventDestroy(e);
  cudaFree(pristine);
  cudaFree(x);
  cudaFree(m0);
  cudaFree(pair);
  cudaFree(boxes);
  cudaFree(ccmask);
  cudaFree(labels);
  cudaFree(ints);
  return 0;
}

PipelineSpec Subset(const PipelineSpec& full, const std::vector<size_t>& keep, size_t forced) {
  PipelineSpec s = full;
  s.transforms.clear();
  for (size_t i : keep) {
    TransformSpec t = full.transforms[i];
    if (i == forced) {
      t.apply_probability = 1.0;
      t.one_of_group = 0;
      t.one_of_index = 0;
      t.one_of_size = 1;
    }
    s.transforms.push_back(std::move(t));
  }
  return s;
}

// nnU-Net's default spec for `tc` and the same with every entry applied (apply_probability 1; the entries' own
// probabilities — rotation, p_per_channel — as nnU-Net sets them). False, with the reason on stderr, if it fails.
bool DefaultSpecs(const augmentd::TrainerConfig& tc, PipelineSpec& def, PipelineSpec& all_on) {
  auto d = augmentd::NnunetDefaultPipeline(tc);
  if (!d.ok()) {
    std::fprintf(stderr, "nnunet_default: %s\n", d.status().ToString().c_str());
    return false;
  }
  def = *d;
  all_on = *d;
  for (TransformSpec& t : all_on.transforms) t.apply_probability = 1.0;
  return true;
}

// --split-masks (see the header): host only.
int SplitMasks(const augmentd::TrainerConfig& tc, int64_t B, int64_t C, int batches) {
  namespace cu = augmentd::cuda;
  if (B < 2) {
    std::fprintf(stderr, "--split-masks: --batch must be at least 2 (two parts)\n");
    return 1;
  }
  PipelineSpec def, all_on;
  if (!DefaultSpecs(tc, def, all_on)) return 1;
  static const char* kBitNames[] = {"noise",    "blur",      "contrast", "lowres",        "gamma0",
                                    "gamma1",   "mask",      "lowest",   "elastic",       "permute",
                                    "gamma1-alone", "resample", "slice-idle"};
  std::printf("# split masks: nnunet_default, B=%lld C=%lld, patch %lldx%lldx%lld, %d batches each\n\n", (long long)B,
              (long long)C, (long long)tc.patch_size[0], (long long)tc.patch_size[1], (long long)tc.patch_size[2],
              batches);
  std::printf("| spec | parts differ | in a pass after the spatial kernel | one part direct | only in resample | "
              "bits that differ (share of batches) |\n|---|---:|---:|---:|---:|---|\n");
  for (const auto& [name, spec] : {std::pair<const char*, const PipelineSpec*>{"default probabilities", &def},
                                   std::pair<const char*, const PipelineSpec*>{"every entry applied", &all_on}}) {
    auto plan = augmentd::MakeCudaPlan(*spec);
    if (!plan.ok()) {
      std::fprintf(stderr, "MakeCudaPlan: %s\n", plan.status().ToString().c_str());
      return 1;
    }
    cu::BatchShape sh;
    sh.batch = static_cast<int32_t>(B);
    sh.channels = static_cast<int32_t>(C);
    for (int d = 0; d < 3; ++d) {
      sh.in[d] = static_cast<int32_t>(spec->input_patch_size[d]);
      sh.out[d] = static_cast<int32_t>(tc.patch_size[d]);
    }
    sh.remove_minus_one = plan->remove_minus_one ? 1 : 0;
    sh.elastic = plan->elastic ? 1 : 0;
    sh.seg_pad_first = plan->pad_first ? 1 : 0;
    cu::BatchShape part[2] = {sh, sh};
    part[0].batch = static_cast<int32_t>((B + 1) / 2);
    part[1].batch = static_cast<int32_t>(B / 2);
    const augmentd::SampleLayout layout{C, {sh.in[0], sh.in[1], sh.in[2]}, 1};
    int differ = 0, differ_pass = 0, one_direct = 0, only_resample = 0;
    int bit_differs[13] = {};
    std::vector<cu::SampleParams> params(B);
    for (int i = 0; i < batches; ++i) {
      for (int64_t b = 0; b < B; ++b) {
        augmentd::SampleRecord rec;
        const uint64_t index = static_cast<uint64_t>(i) * B + b;
        absl::Status st = augmentd::DrawSampleParams(*spec, 7, index, nullptr, layout, rec, static_cast<uint64_t>(i) * B);
        if (st.ok()) st = augmentd::TranslateSample(*spec, *plan, rec, sh, params[b]);
        if (!st.ok()) {
          std::fprintf(stderr, "draw / translate: %s\n", st.ToString().c_str());
          return 1;
        }
      }
      const uint32_t m0 = cu::ActiveStages(params.data(), part[0]);
      const uint32_t m1 = cu::ActiveStages(params.data() + part[0].batch, part[1]);
      const uint32_t x = m0 ^ m1;
      differ += x != 0;
      differ_pass += (x & cu::kStagesAfterSpatial) != 0;
      one_direct += ((m0 & cu::kStagesAfterSpatial) == 0) != ((m1 & cu::kStagesAfterSpatial) == 0);
      only_resample += x == cu::kStageResample;
      for (int k = 0; k < 13; ++k) bit_differs[k] += (x >> k) & 1;
    }
    std::string bits;
    for (int k = 0; k < 13; ++k) {
      if (bit_differs[k] == 0) continue;
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s%s %.0f %%", bits.empty() ? "" : ", ", kBitNames[k],
                    100.0 * bit_differs[k] / batches);
      bits += buf;
    }
    const auto pct = [&](int n) { return 100.0 * n / batches; };
    std::printf("| %s | %.1f %% | %.1f %% | %.1f %% | %.1f %% | %s |\n", name, pct(differ), pct(differ_pass),
                pct(one_direct), pct(only_resample), bits.empty() ? "none" : bits.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> patch = {128, 128, 128};
  int64_t B = 2, C = 1;
  int iters = 20;
  const char* json = nullptr;
  bool default_pipeline = false, cascade = false, stage_times = false, kernel_times = false, split_masks = false,
       policies = false, workers_given = false;
  int workers = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    // Numbers: the whole value, in range, or exit 1 naming the flag (bench/bench_args.h).
    if (a == "--patch" && has) {
      if (!ParseIntegerList("--patch", argv[++i], 1, 4096, patch)) return 1;
      if (patch.size() != 3) {
        std::fprintf(stderr, "--patch: three sizes (Z,Y,X), got %s\n", argv[i]);
        return 1;
      }
    } else if (a == "--batch" && has) {
      if (!ParseInteger("--batch", argv[++i], 1, 4096, B)) return 1;
    } else if (a == "--channels" && has) {  // SampleParams holds kMaxChannels channels
      if (!ParseInteger("--channels", argv[++i], 1, augmentd::cuda::kMaxChannels, C)) return 1;
    } else if (a == "--iters" && has) {
      if (!ParseInteger("--iters", argv[++i], 1, 1000000, iters)) return 1;
    } else if (a == "--json" && has) json = argv[++i];
    else if (a == "--default") default_pipeline = true;
    else if (a == "--cascade") cascade = true;
    else if (a == "--stage-times") stage_times = true;
    else if (a == "--kernel-times") kernel_times = true;
    else if (a == "--split-masks") split_masks = true;
    else if (a == "--policies") policies = true;
    else if (a == "--workers" && has) {
      if (!ParseInteger("--workers", argv[++i], 1, 64, workers)) return 1;
      workers_given = true;
    }
    else {
      std::fprintf(stderr,
                   "usage: %s [--default | [--cascade] [--stage-times] | --kernel-times | --split-masks | --policies "
                   "[--workers 2]] [--patch 128,128,128] [--batch 2] [--channels 1] [--iters 20] [--json f]\n",
                   argv[0]);
      return a == "--help" || a == "-h" ? 0 : 1;
    }
  }
  // The modes exclude each other and --stage-times only times the DA5 or --cascade rows: refuse what would be ignored.
  if (int{default_pipeline} + int{cascade} + int{kernel_times} + int{split_masks} + int{policies} > 1 ||
      (stage_times && (default_pipeline || kernel_times || split_masks || policies)) || (workers_given && !policies)) {
    std::fprintf(stderr, "%s: --default, --cascade, --kernel-times, --split-masks and --policies exclude each other; "
                 "--stage-times times the DA5 or --cascade rows; --workers goes with --policies\n", argv[0]);
    return 1;
  }
  if (split_masks) {  // host only
    augmentd::TrainerConfig tcm;
    tcm.patch_size = patch;
    tcm.num_input_channels = C;
    tcm.deep_supervision_scales = {{1, 1, 1}, {0.5, 0.5, 0.5}, {0.25, 0.25, 0.25}};
    return SplitMasks(tcm, B, C, iters);
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "cuda_chain_bench: no CUDA device\n");
    return 2;
  }
  augmentd::TrainerConfig tc;
  tc.patch_size = patch;
  tc.num_input_channels = C;
  tc.deep_supervision_scales = {{1, 1, 1}, {0.5, 0.5, 0.5}, {0.25, 0.25, 0.25}, {0.125, 0.125, 0.125},
                                {0.0625, 0.0625, 0.0625}};
  auto da5 = augmentd::NnunetDa5Pipeline(tc);
  if (!da5.ok()) {
    std::fprintf(stderr, "nnunet_da5: %s\n", da5.status().ToString().c_str());
    return 1;
  }
  const PipelineSpec& full = *da5;
  const size_t n = full.transforms.size();
  if (n < 2 || full.transforms.front().kind != TransformKind::kSpatial ||
      full.transforms.back().kind != TransformKind::kDownsampleSegForDs) {
    std::fprintf(stderr, "nnunet_da5: expected spatial first and downsample_seg_for_ds last\n");
    return 1;
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  const std::vector<int64_t>& S = full.input_patch_size;
  DeviceInput in(B, C, S);
  FILE* out = json != nullptr ? std::fopen(json, "w") : nullptr;
  std::printf("# cuda_chain_bench — %s, B=%lld C=%lld, input %lldx%lldx%lld -> patch %lldx%lldx%lld, %d iterations\n\n",
              prop.name, (long long)B, (long long)C, (long long)S[0], (long long)S[1], (long long)S[2],
              (long long)patch[0], (long long)patch[1], (long long)patch[2], iters);
  if (!policies)
    std::printf("| row | ms/batch median | p90 | samples/s | marginal ms vs base |\n|---|---:|---:|---:|---:|\n");
  auto report = [&](const std::string& row, const Timing& t, double base) {
    const double marginal = base >= 0 ? t.median_ms - base : 0;
    char diff[32] = "–";
    if (base >= 0) std::snprintf(diff, sizeof(diff), "%+.3f", marginal);
    std::printf("| %s | %.3f | %.3f | %.0f | %s |\n", row.c_str(), t.median_ms, t.p90_ms, B * 1e3 / t.median_ms, diff);
    if (out != nullptr) {
      std::fprintf(out, "{\"row\": \"%s\", \"B\": %lld, \"C\": %lld, \"median_ms\": %.4f, \"p90_ms\": %.4f, "
                        "\"marginal_ms\": %.4f}\n", row.c_str(), (long long)B, (long long)C, t.median_ms, t.p90_ms,
                   marginal);
    }
    std::fflush(stdout);
  };
  if (kernel_times) {
    const int rc = KernelTimes(B, patch, iters, stream, out);
    if (out != nullptr) std::fclose(out);
    cudaStreamDestroy(stream);
    return rc;
  }
  if (default_pipeline) {  // issue 21: the fused intensity path vs the generic chain, same pipeline, same run
    PipelineSpec def, all_on;  // the input is sized for this preset's initial patch
    if (!DefaultSpecs(tc, def, all_on)) return 1;
    const DeviceInput din(B, C, def.input_patch_size);
    for (int round = 0; round < 2; ++round) {  // interleaved, so that drift hits both paths alike
      report("default-all-on fused", TimeSpec(all_on, din, B, C, iters, stream), -1);
      report("default-all-on chain", TimeSpec(all_on, din, B, C, iters, stream, /*chain_only=*/true), -1);
      report("default fused", TimeSpec(def, din, B, C, iters, stream), -1);
      report("default chain", TimeSpec(def, din, B, C, iters, stream, /*chain_only=*/true), -1);
    }
    if (out != nullptr) std::fclose(out);
    cudaStreamDestroy(stream);
    return 0;
  }
  if (policies) {  // cuda/engine.h "Two parts": which batches to split, one batch at a time and under workers
    PipelineSpec def, all_on;
    if (!DefaultSpecs(tc, def, all_on)) return 1;
    const DeviceInput din(B, C, def.input_patch_size);
    using augmentd::CudaSplitPolicy;
    const std::pair<const char*, CudaSplitPolicy> kPolicies[] = {{"whole", CudaSplitPolicy::kWhole},
                                                                 {"always", CudaSplitPolicy::kAlways},
                                                                 {"differ", CudaSplitPolicy::kWhenMasksDiffer},
                                                                 {"direct", CudaSplitPolicy::kWhenOnePartDirect}};
    std::printf("\n| round | spec | policy | one batch median ms | p90 | %d workers ms a batch | split share | "
                "graph replays |\n|---:|---|---|---:|---:|---:|---:|---:|\n", workers);
    for (int round = 0; round < 3; ++round) {
      for (const auto& [spec_name, spec] : {std::pair<const char*, const PipelineSpec*>{"default", &def},
                                            std::pair<const char*, const PipelineSpec*>{"default-all-on", &all_on}}) {
        for (const auto& [name, policy] : kPolicies) {
          const Timing one = TimeSpec(*spec, din, B, C, iters, stream, false, 1, nullptr, &policy);
          const WorkersTiming many = TimeWorkers(*spec, din, B, C, iters, workers, policy);
          std::printf("| %d | %s | %s | %.4f | %.4f | %.4f | %.2f | %.2f |\n", round, spec_name, name, one.median_ms,
                      one.p90_ms, many.ms_per_batch, many.split_share, many.replay_share);
          std::fflush(stdout);
          if (out != nullptr) {
            std::fprintf(out, "{\"round\": %d, \"spec\": \"%s\", \"policy\": \"%s\", \"B\": %lld, \"C\": %lld, "
                              "\"median_ms\": %.4f, \"p90_ms\": %.4f, \"workers\": %d, \"workers_ms_per_batch\": "
                              "%.4f, \"split_share\": %.4f, \"replay_share\": %.4f}\n", round, spec_name, name,
                         (long long)B, (long long)C, one.median_ms, one.p90_ms, workers, many.ms_per_batch,
                         many.split_share, many.replay_share);
          }
        }
      }
    }
    if (out != nullptr) std::fclose(out);
    cudaStreamDestroy(stream);
    return 0;
  }
  if (cascade) {  // issue 24: the cascade's pipeline vs nnU-Net's default, same patch
    auto def = augmentd::NnunetDefaultPipeline(tc);
    auto cas = augmentd::testing::NnunetCascadePipeline(tc, {1, 2, 3});
    if (!def.ok() || !cas.ok()) {
      std::fprintf(stderr, "pipelines: %s %s\n", def.status().ToString().c_str(), cas.status().ToString().c_str());
      return 1;
    }
    PipelineSpec cas_on = *cas;
    for (TransformSpec& t : cas_on.transforms) t.apply_probability = 1.0;
    // Where the cascade's time goes: the same pipeline with both perturbations off (the default transforms on the
    // chain + the one-hot growth), with only the binary operator forced on, with only the component removal on.
    auto none = augmentd::testing::NnunetCascadePipeline(tc, {1, 2, 3}, 0.0, 0.0);
    auto binop = augmentd::testing::NnunetCascadePipeline(tc, {1, 2, 3}, 1.0, 0.0);
    auto comp = augmentd::testing::NnunetCascadePipeline(tc, {1, 2, 3}, 0.0, 1.0);
    if (!none.ok() || !binop.ok() || !comp.ok()) {
      std::fprintf(stderr, "pipelines: %s\n", none.status().ToString().c_str());
      return 1;
    }
    const DeviceInput d1(B, C, def->input_patch_size), d2(B, C, def->input_patch_size, 2);
    for (int round = 0; round < 2; ++round) {  // interleaved, so that drift hits every row alike
      report("default fused", TimeSpec(*def, d1, B, C, iters, stream), -1);
      report("default chain", TimeSpec(*def, d1, B, C, iters, stream, /*chain_only=*/true), -1);
      report("cascade", TimeSpec(*cas, d2, B, C, iters, stream, false, 2), -1);
      report("cascade-all-on", TimeSpec(cas_on, d2, B, C, iters, stream, false, 2), -1);
      report("cascade, perturbations off", TimeSpec(*none, d2, B, C, iters, stream, false, 2), -1);
      report("cascade, binary operator on", TimeSpec(*binop, d2, B, C, iters, stream, false, 2), -1);
      report("cascade, component removal on", TimeSpec(*comp, d2, B, C, iters, stream, false, 2), -1);
    }
    if (stage_times)
      StageTimeTable({{"cascade", &*cas}, {"all on", &cas_on}, {"perturbations off", &*none},
                      {"binary operator on", &*binop}, {"component removal on", &*comp}},
                     d2, B, C, iters, stream, 2, out);
    if (out != nullptr) std::fclose(out);
    cudaStreamDestroy(stream);
    return 0;
  }
  std::vector<size_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = i;
  report("da5", TimeSpec(full, in, B, C, iters, stream), -1);
  PipelineSpec on = full;
  for (TransformSpec& t : on.transforms) t.apply_probability = 1.0;
  report("da5-all-on", TimeSpec(on, in, B, C, iters, stream), -1);
  const Timing base = TimeSpec(Subset(full, {0, n - 1}, n), in, B, C, iters, stream);
  report("base", base, -1);
  for (size_t i = 1; i + 1 < n; ++i) {
    const std::string name = "+" + std::string(augmentd::TransformKindName(full.transforms[i].kind)) + "#" +
                             std::to_string(i);
    report(name, TimeSpec(Subset(full, {0, i, n - 1}, i), in, B, C, iters, stream), base.median_ms);
  }
  if (stage_times) StageTimeTable({{"da5", &full}, {"da5 all on", &on}}, in, B, C, iters, stream, 1, out);
  if (out != nullptr) std::fclose(out);
  cudaStreamDestroy(stream);
  return 0;
}
