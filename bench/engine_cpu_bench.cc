// bench/engine_cpu_bench.cc — CPU engine timings on one thread, engine-internal (no C ABI, no JSON on the clock).
//
//   engine_cpu_bench [--reps 7] [--samples 16] [--filter gamma]    # table (ms): CPU-time and wall medians
//   engine_cpu_bench --serve                                         # JSON lines on stdin/stdout (see below)
//
// Cases (nnU-Net 3D fullres geometry: patch 128³, input = initial_patch_size 205³; 1 image channel, int16 labels
// −1..3: a box of 1, a bar of 2, a small box of 3, the first four slices −1):
//   * one case per transform of the default pipeline, forced on (p = 1), timing Transform::Apply only: the input
//     copy is made before the clock starts (Apply works in place); spatial reads the caller's 205³ buffers like
//     the engine does (borrowed, no copy) and allocates its 128³ outputs on the clock; parameters drawn from the
//     sample's stream (or injected, --serve).
//   * the whole `nnunet_default` pipeline per sample: AugmentBatch with B = 1 and one thread per call (drawing,
//     every transform, the packed output tensors), averaged over --samples consecutive sample indices; with the
//     preset's probabilities and with every transform on (every apply_probability, spatial p_rotation/p_scaling
//     and every p_per_channel set to 1).
//
// --serve (used by bench/engine_cpu_vs_bgv2.py to interleave with bgv2 in one run): one JSON request per line,
// one JSON reply per line ({"error": "..."} on failure):
//   {"op": "setup", "patch_size": [128,128,128]}  -> {"initial_patch_size": [...], "preset": <PipelineSpec JSON>}
//   {"op": "transform", "kind": "gamma", "config": {...bgv2 args...}, "input": "patch"|"initial",
//    "params": {...bgv2 get_parameters() JSON...} | null, "seed": 1, "sample_index": 0}
//        -> {"ms": wall, "cpu_ms": process CPU time, "params": <the parameters applied, bgv2 format>}
//   {"op": "pipeline", "all_on": false, "samples": 16, "first_sample_index": 0, "seed": 1}
//        -> {"ms_per_sample": wall, "cpu_ms_per_sample": CPU time}
//   {"op": "quit"}
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "augment/engine.h"
#include "augment/pipeline.h"
#include "augment/registry.h"
#include "augment/transform.h"
#include "augment/types.h"
#include "bench/bench_args.h"
#include "nlohmann/json.hpp"

namespace {

using augmentd::SampleData;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// Wall time and the process's CPU time (user + system; one thread does the work). On a shared host the CPU time
// is the per-core cost without the time the scheduler gave to other processes.
struct Times {
  double wall_ms = 0, cpu_ms = 0;
};
double CpuMsNow() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}
class Stopwatch {
 public:
  Stopwatch() : wall_(Clock::now()), cpu_(CpuMsNow()) {}
  Times Elapsed() const {
    return Times{std::chrono::duration<double, std::milli>(Clock::now() - wall_).count(), CpuMsNow() - cpu_};
  }

 private:
  Clock::time_point wall_;
  double cpu_;
};

struct Volume {
  std::vector<int64_t> shape;
  std::vector<float> image;
  std::vector<int16_t> seg;
};

// Same recipe as bench/engine_cpu_vs_bgv2.py `make_volume` (values differ: different generators).
Volume MakeVolume(const std::vector<int64_t>& shape, uint32_t seed) {
  Volume v;
  v.shape = shape;
  const int64_t n = shape[0] * shape[1] * shape[2];
  v.image.resize(n);
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (float& x : v.image) x = nd(gen);
  v.seg.assign(n, 0);
  const int64_t c0 = shape[0] / 2, c1 = shape[1] / 2, c2 = shape[2] / 2;
  auto box = [&](int64_t a0, int64_t a1, int64_t b0, int64_t b1, int64_t z0, int64_t z1, int16_t label) {
    for (int64_t i = std::max<int64_t>(a0, 0); i < std::min(a1, shape[0]); ++i)
      for (int64_t j = std::max<int64_t>(b0, 0); j < std::min(b1, shape[1]); ++j)
        for (int64_t k = std::max<int64_t>(z0, 0); k < std::min(z1, shape[2]); ++k)
          v.seg[(i * shape[1] + j) * shape[2] + k] = label;
  };
  box(c0 - 30, c0 + 30, c1 - 40, c1 + 40, c2 - 35, c2 + 35, 1);
  box(c0 - 10, c0 + 10, c1 - 10, c1 + 10, 0, shape[2], 2);
  box(c0 + 12, c0 + 20, c1 + 15, c1 + 25, c2 - 5, c2 + 5, 3);
  box(0, 4, 0, shape[1], 0, shape[2], -1);
  return v;
}

augmentd::TensorView ImageView(const Volume& v, bool batched) {
  std::vector<int64_t> s = {1};
  s.insert(s.end(), v.shape.begin(), v.shape.end());
  if (batched) s.insert(s.begin(), 1);
  return augmentd::TensorView{const_cast<float*>(v.image.data()), s, augmentd::DType::kFloat32};
}
augmentd::TensorView SegView(const Volume& v, bool batched) {
  std::vector<int64_t> s = {1};
  s.insert(s.end(), v.shape.begin(), v.shape.end());
  if (batched) s.insert(s.begin(), 1);
  return augmentd::TensorView{const_cast<int16_t*>(v.seg.data()), s, augmentd::DType::kInt16};
}

class Bench {
 public:
  absl::Status Setup(const std::vector<int64_t>& patch) {
    augmentd::TrainerConfig tc;
    tc.patch_size = patch;
    tc.deep_supervision_scales = std::vector<std::vector<double>>{
        {1, 1, 1}, {0.5, 0.5, 0.5}, {0.25, 0.25, 0.25}, {0.125, 0.125, 0.125}, {0.0625, 0.0625, 0.0625}};
    auto spec = augmentd::NnunetDefaultPipeline(tc);
    if (!spec.ok()) return spec.status();
    preset_ = *spec;
    Json j = preset_.ToJson();
    for (Json& t : j["transforms"]) {
      t["apply_probability"] = 1.0;
      Json& c = t["config"];
      for (const char* k : {"p_rotation", "p_scaling", "p_per_channel"})
        if (c.contains(k)) c[k] = 1.0;
    }
    auto all = augmentd::PipelineSpec::FromJson(j);
    if (!all.ok()) return all.status();
    all_on_ = *all;
    initial_ = preset_.input_patch_size;
    patch_ = patch;
    big_ = MakeVolume(initial_, 1);
    small_ = MakeVolume(patch_, 2);
    return absl::OkStatus();
  }

  // Apply of one transform on a fresh copy of the input; returns its times and the parameters used.
  absl::StatusOr<std::pair<Times, Json>> TimeTransform(const std::string& kind, const Json& config,
                                                        const Json& params, bool initial_input, uint64_t seed,
                                                        uint64_t sample_index) {
    auto t = augmentd::TransformFromJson(kind, config);
    if (!t.ok()) return t.status();
    const Volume& v = initial_input ? big_ : small_;
    const bool spatial = (*t)->kind() == augmentd::TransformKind::kSpatial;
    auto s = augmentd::SampleFromViews(ImageView(v, false), SegView(v, false), /*borrow=*/spatial);
    if (!s.ok()) return s.status();
    augmentd::RandomStream rng(seed, sample_index, 0);
    augmentd::DrawContext ctx{rng, seed, sample_index, 0};
    std::unique_ptr<augmentd::TransformParams> p;
    if (params.is_null()) {
      auto d = (*t)->Draw(ctx, s->layout());
      if (!d.ok()) return d.status();
      p = std::move(*d);
    } else {
      auto d = (*t)->ParseParams(params, s->layout());
      if (!d.ok()) return d.status();
      p = std::move(*d);
      (*t)->CompleteInjected(*p, ctx);
    }
    const Stopwatch watch;
    const absl::Status st = (*t)->Apply(*p, *s);
    const Times times = watch.Elapsed();
    if (!st.ok()) return st;
    return std::make_pair(times, (*t)->ParamsToJson(*p));
  }

  // AugmentBatch(B = 1, one thread) for `samples` consecutive sample indices; times per sample.
  absl::StatusOr<Times> TimePipeline(bool all_on, int samples, uint64_t first, uint64_t seed) {
    const augmentd::PipelineSpec& spec = all_on ? all_on_ : preset_;
    augmentd::BatchInput in;
    in.image = ImageView(big_, true);
    in.seg = SegView(big_, true);
    augmentd::RunOptions opt;
    opt.seed = seed;
    opt.num_threads = 1;
    const Stopwatch watch;
    for (int i = 0; i < samples; ++i) {
      opt.first_sample_index = first + static_cast<uint64_t>(i);
      auto r = augmentd::AugmentBatch(spec, in, opt);
      if (!r.ok()) return r.status();
    }
    Times t = watch.Elapsed();
    t.wall_ms /= samples;
    t.cpu_ms /= samples;
    return t;
  }

  const std::vector<int64_t>& initial() const { return initial_; }
  const augmentd::PipelineSpec& preset() const { return preset_; }

 private:
  augmentd::PipelineSpec preset_, all_on_;
  std::vector<int64_t> initial_, patch_;
  Volume big_, small_;
};

// The per-transform cases: the configurations of nnU-Net's default pipeline (bgv2 argument names), forced on.
struct Case {
  const char* label;
  const char* kind;
  const char* config;
  bool initial_input;
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {"spatial (rotate+scale, labels -1..3)", "spatial",
       R"({"patch_size": [128,128,128], "patch_center_dist_from_border": 0, "random_crop": false,
           "p_elastic_deform": 0, "p_rotation": 1, "rotation": [-0.5235987755982988, 0.5235987755982988],
           "p_scaling": 1, "scaling": [0.7, 1.4], "p_synchronize_scaling_across_axes": 1,
           "bg_style_seg_sampling": false, "border_mode_seg": "constant", "padding_value_seg": -1})",
       true},
      {"gaussian_noise", "gaussian_noise", R"({"noise_variance": [0, 0.1], "p_per_channel": 1,
           "synchronize_channels": true})", false},
      {"gaussian_blur", "gaussian_blur", R"({"blur_sigma": [0.5, 1.0], "synchronize_channels": false,
           "synchronize_axes": false, "p_per_channel": 1, "benchmark": true})", false},
      {"multiplicative_brightness", "multiplicative_brightness",
       R"({"multiplier_range": {"bg_contrast": [0.75, 1.25]}, "synchronize_channels": false, "p_per_channel": 1})",
       false},
      {"contrast", "contrast", R"({"contrast_range": {"bg_contrast": [0.75, 1.25]}, "preserve_range": true,
           "synchronize_channels": false, "p_per_channel": 1})", false},
      {"simulate_low_resolution", "simulate_low_resolution",
       R"({"scale": [0.5, 1], "synchronize_channels": false, "synchronize_axes": true, "ignore_axes": null,
           "allowed_channels": null, "p_per_channel": 1})", false},
      {"gamma (retain stats)", "gamma", R"({"gamma": {"bg_contrast": [0.7, 1.5]}, "p_invert_image": 0,
           "synchronize_channels": false, "p_per_channel": 1, "p_retain_stats": 1})", false},
      {"gamma (inverted, retain stats)", "gamma", R"({"gamma": {"bg_contrast": [0.7, 1.5]}, "p_invert_image": 1,
           "synchronize_channels": false, "p_per_channel": 1, "p_retain_stats": 1})", false},
      {"mirror", "mirror", R"({"allowed_axes": [0, 1, 2]})", false},
      {"remove_label (-1 -> 0)", "remove_label", R"({"label_value": -1, "set_to": 0,
           "segmentation_channels": null})", false},
      {"downsample_seg_for_ds", "downsample_seg_for_ds",
       R"({"ds_scales": [[1,1,1],[0.5,0.5,0.5],[0.25,0.25,0.25],[0.125,0.125,0.125],[0.0625,0.0625,0.0625]]})",
       false},
  };
  return cases;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int Serve(Bench& bench) {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    Json reply;
    try {
      const Json req = Json::parse(line);
      const std::string op = req.value("op", "");
      if (op == "quit") break;
      if (op == "setup") {
        const absl::Status st = bench.Setup(req.value("patch_size", std::vector<int64_t>{128, 128, 128}));
        if (!st.ok()) throw std::runtime_error(std::string(st.message()));
        reply = {{"initial_patch_size", bench.initial()}, {"preset", bench.preset().ToJson()}};
      } else if (op == "transform") {
        const Json params = req.contains("params") ? req["params"] : Json();
        auto r = bench.TimeTransform(req.at("kind"), req.at("config"), params, req.value("input", "patch") == "initial",
                                     req.value("seed", uint64_t{1}), req.value("sample_index", uint64_t{0}));
        if (!r.ok()) throw std::runtime_error(std::string(r.status().message()));
        reply = {{"ms", r->first.wall_ms}, {"cpu_ms", r->first.cpu_ms}, {"params", r->second}};
      } else if (op == "pipeline") {
        auto r = bench.TimePipeline(req.value("all_on", false), req.value("samples", 16),
                                    req.value("first_sample_index", uint64_t{0}), req.value("seed", uint64_t{1}));
        if (!r.ok()) throw std::runtime_error(std::string(r.status().message()));
        reply = {{"ms_per_sample", r->wall_ms}, {"cpu_ms_per_sample", r->cpu_ms}};
      } else {
        throw std::runtime_error("unknown op '" + op + "'");
      }
    } catch (const std::exception& e) {
      reply = {{"error", e.what()}};
    }
    std::cout << reply.dump() << std::endl;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 7, samples = 16;
  bool serve = false;
  std::string filter;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--serve") {
      serve = true;
    } else if (a == "--reps" && i + 1 < argc) {
      if (!augmentd::bench::ParseInteger("--reps", argv[++i], 1, 1000000, reps)) return 2;
    } else if (a == "--samples" && i + 1 < argc) {
      if (!augmentd::bench::ParseInteger("--samples", argv[++i], 1, 1000000, samples)) return 2;
    } else if (a == "--filter" && i + 1 < argc) {
      filter = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--reps N] [--samples N] [--filter SUBSTRING] | --serve\n", argv[0]);
      return 2;
    }
  }
  Bench bench;
  if (serve) return Serve(bench);
  if (const absl::Status st = bench.Setup({128, 128, 128}); !st.ok()) {
    std::fprintf(stderr, "setup: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  std::printf("engine-internal CPU timings, one thread, patch 128^3 from %lldx%lldx%lld, %d reps (ms)\n",
              static_cast<long long>(bench.initial()[0]), static_cast<long long>(bench.initial()[1]),
              static_cast<long long>(bench.initial()[2]), reps);
  std::printf("  %-40s %9s %9s %9s\n", "", "cpu med", "wall med", "wall min");
  for (const Case& c : Cases()) {
    if (!filter.empty() && std::string(c.label).find(filter) == std::string::npos) continue;
    std::vector<double> wall, cpu;
    for (int r = 0; r < reps; ++r) {
      auto t = bench.TimeTransform(c.kind, Json::parse(c.config), Json(), c.initial_input, 1, static_cast<uint64_t>(r));
      if (!t.ok()) {
        std::fprintf(stderr, "%s: %s\n", c.label, std::string(t.status().message()).c_str());
        return 1;
      }
      wall.push_back(t->first.wall_ms);
      cpu.push_back(t->first.cpu_ms);
    }
    std::printf("  %-40s %9.2f %9.2f %9.2f\n", c.label, Median(cpu), Median(wall),
                *std::min_element(wall.begin(), wall.end()));
  }
  for (bool all_on : {false, true}) {
    const std::string label = all_on ? "pipeline, every transform on" : "pipeline nnunet_default";
    if (!filter.empty() && label.find(filter) == std::string::npos) continue;
    std::vector<double> wall, cpu;
    for (int r = 0; r < reps; ++r) {
      auto t = bench.TimePipeline(all_on, samples, 0, 1);
      if (!t.ok()) {
        std::fprintf(stderr, "%s: %s\n", label.c_str(), std::string(t.status().message()).c_str());
        return 1;
      }
      wall.push_back(t->wall_ms);
      cpu.push_back(t->cpu_ms);
    }
    std::printf("  %-40s %9.2f %9.2f %9.2f  (per sample, %d samples per rep)\n", label.c_str(), Median(cpu),
                Median(wall), *std::min_element(wall.begin(), wall.end()), samples);
  }
  return 0;
}
