// augment_dataset_tool — inspect an nnU-Net preprocessed dataset and benchmark augmentd's sampler/readers.
//
//   augment_dataset_tool info  --dataset DIR [--plans nnUNetPlans] [--configuration 3d_fullres]
//   augment_dataset_tool bench --dataset DIR [--fold 0] [--split train|val] [--samples 2000] [--threads 16]
//                              [--seed 0] [--patch 205,205,205]
//
// `bench` plans and crops `--samples` samples (B from the plans, batches 0, 1, ...) on `--threads` CPU threads,
// each thread working on whole samples (plan + box read + dtype conversion into its own host buffers), and
// prints samples/s and MB/s. The first pass is "cold" only if the OS page cache does not hold the files
// (drop it beforehand to measure disk); the second pass runs over the same samples warm.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "augment/dataset/batch_loader.h"
#include "augment/dataset/nnunet_dataset.h"

namespace ds = augmentd::dataset;

namespace {

int Fail(const absl::Status& st) {
  std::fprintf(stderr, "error: %s\n", st.ToString().c_str());
  return 1;
}

std::string Join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

double RunPass(const ds::BatchLoader& loader, int64_t samples, int threads, int64_t* bytes) {
  const int64_t b = loader.sampler().options().batch_size;
  std::atomic<int64_t> next{0}, total_bytes{0};
  std::atomic<bool> failed{false};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      std::vector<float> data;
      std::vector<int16_t> seg;
      for (int64_t i = next++; i < samples && !failed; i = next++) {
        absl::StatusOr<ds::SamplePlan> plan = loader.PlanSample(static_cast<uint64_t>(i / b), i % b);
        if (!plan.ok()) {
          Fail(plan.status());
          failed = true;
          return;
        }
        const int64_t voxels = ds::NumElements(plan->box.extent());
        data.resize(static_cast<size_t>(plan->case_shape[0] * voxels));
        seg.resize(static_cast<size_t>(voxels));
        if (absl::Status st = loader.LoadSample(*plan, data.data(), data.size(), seg.data(), seg.size()); !st.ok()) {
          Fail(st);
          failed = true;
          return;
        }
        total_bytes += static_cast<int64_t>(data.size() * 4 + seg.size() * 2);
      }
    });
  }
  for (auto& th : pool) th.join();
  *bytes = total_bytes;
  if (failed) return -1;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

constexpr char kUsage[] =
    "usage: %s info  --dataset DIR [--plans nnUNetPlans] [--configuration 3d_fullres]\n"
    "       %s bench --dataset DIR [--fold 0] [--split train|val] [--samples 2000] [--threads 16] [--seed 0]\n"
    "                [--patch 205,205,205]\n"
    "info: the dataset's format, case count, patch and batch sizes from the plans.\n"
    "bench: plans and crops --samples samples from disk on --threads CPU threads (nnU-Net's sampler, box reads\n"
    "only) and prints samples/s.\n"
    "DIR: an nnU-Net preprocessed dataset folder (with dataset.json and the plans).\n";

int main(int argc, char** argv) {
  const std::string cmd = argc >= 2 ? argv[1] : "";
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::printf(kUsage, argv[0], argv[0]);
    return 0;
  }
  if (cmd != "info" && cmd != "bench") {
    std::fprintf(stderr, kUsage, argv[0], argv[0]);
    return 2;
  }
  if ((argc - 2) % 2 != 0) return Fail(absl::InvalidArgumentError("flags are --name value (one value per flag)"));
  std::map<std::string, std::string> flags = {{"plans", "nnUNetPlans"},
                                              {"configuration", "3d_fullres"},
                                              {"fold", "0"},
                                              {"split", "train"},
                                              {"samples", "2000"},
                                              {"threads", "16"},
                                              {"seed", "0"},
                                              {"patch", ""}};
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0) return Fail(absl::InvalidArgumentError("flags are --name value"));
    flags[k.substr(2)] = argv[i + 1];
  }
  ds::DatasetOptions opt;
  opt.dataset_dir = flags["dataset"];
  opt.plans_name = flags["plans"];
  opt.configuration = flags["configuration"];
  absl::StatusOr<std::shared_ptr<ds::NnunetDataset>> dataset = ds::NnunetDataset::Open(opt);
  if (!dataset.ok()) return Fail(dataset.status());
  const ds::NnunetDataset& d = **dataset;
  const ds::TrainerDefaults t = ds::DefaultTrainerSettings(d.plans().patch_size);
  if (cmd == "info") {
    std::printf("dir %s\nformat %s\ncases %zu\npatch_size %s\ninitial_patch_size %s\nbatch_size %lld\n",
                d.dir().c_str(), ds::DatasetFormatName(d.format()), d.case_ids().size(),
                Join(d.plans().patch_size).c_str(), Join(t.initial_patch_size).c_str(),
                static_cast<long long>(d.plans().batch_size));
    return 0;
  }
  if (cmd != "bench") return Fail(absl::InvalidArgumentError("unknown command " + cmd));
  int fold = 0, threads = 1;
  int64_t samples = 0;
  uint64_t seed = 0;
  if (!absl::SimpleAtoi(flags["fold"], &fold) || !absl::SimpleAtoi(flags["threads"], &threads) ||
      !absl::SimpleAtoi(flags["samples"], &samples) || !absl::SimpleAtoi(flags["seed"], &seed) || threads < 1) {
    return Fail(absl::InvalidArgumentError("bad numeric flag"));
  }
  std::vector<std::string> ids = d.case_ids();
  if (absl::StatusOr<ds::Split> s = d.Fold(fold); s.ok()) ids = flags["split"] == "val" ? s->val : s->train;
  const bool ignore = d.labels().ignore_label.has_value();
  ds::SamplerOptions so =
      flags["split"] == "val"
          ? ds::SamplerOptions::ForValidation(d.plans().patch_size, d.plans().batch_size, ignore)
          : ds::SamplerOptions::ForTraining(d.plans().patch_size, t.initial_patch_size, d.plans().batch_size, ignore);
  if (!flags["patch"].empty()) {
    so.patch_size.clear();
    for (absl::string_view p : absl::StrSplit(flags["patch"], ',')) {
      int64_t v = 0;
      if (!absl::SimpleAtoi(p, &v)) return Fail(absl::InvalidArgumentError("bad --patch"));
      so.patch_size.push_back(v);
    }
  }
  absl::StatusOr<ds::PatchSampler> sampler = ds::PatchSampler::Create(so, ids, seed);
  if (!sampler.ok()) return Fail(sampler.status());
  ds::BatchLoader loader(*dataset, *std::move(sampler));
  std::printf("dataset %s (%s, %zu cases), box %s, %lld samples, %d threads\n", d.dir().c_str(),
              ds::DatasetFormatName(d.format()), ids.size(), Join(loader.sampler().patch_size()).c_str(),
              static_cast<long long>(samples), threads);
  for (const char* pass : {"first", "second"}) {
    int64_t bytes = 0;
    const double s = RunPass(loader, samples, threads, &bytes);
    if (s < 0) return 1;
    std::printf("%-6s pass: %.3f s, %.1f samples/s, %.1f MB/s out\n", pass, s, static_cast<double>(samples) / s,
                static_cast<double>(bytes) / s / 1e6);
  }
  return 0;
}
