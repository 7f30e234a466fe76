#include "bench/dataset_bench_synth.h"

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "augment/dataset/b2nd_writer.h"

namespace augmentd::bench {
namespace {

namespace ds = augmentd::dataset;

absl::Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  f << text;
  return f.good() ? absl::OkStatus() : absl::InternalError(absl::StrCat(path, ": cannot write"));
}

std::string ReadText(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<int32_t> Clip(std::vector<int32_t> v, const std::vector<int64_t>& shape) {
  for (size_t d = 1; d < v.size(); ++d) v[d] = static_cast<int32_t>(std::min<int64_t>(v[d], shape[d - 1]));
  return v;
}

absl::Status WriteCase(const std::string& dir, int index, const std::vector<int64_t>& s) {
  const int64_t n = s[0] * s[1] * s[2];
  std::vector<float> data(static_cast<size_t>(n));
  std::vector<int8_t> seg(static_cast<size_t>(n), 0);
  uint64_t state = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(index + 1);
  const double cx[3] = {0.3, 0.6, 0.5}, cy[3] = {0.4, 0.5, 0.7}, cz[3] = {0.5, 0.3, 0.6}, r[3] = {0.12, 0.08, 0.05};
  const int8_t label[3] = {1, 2, 1};
  for (int64_t x = 0; x < s[0]; ++x) {
    for (int64_t y = 0; y < s[1]; ++y) {
      for (int64_t z = 0; z < s[2]; ++z) {
        const size_t i = static_cast<size_t>((x * s[1] + y) * s[2] + z);
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        const double noise = static_cast<double>(state >> 40) / static_cast<double>(1ull << 24) - 0.5;
        data[i] = static_cast<float>(std::sin(0.05 * static_cast<double>(x)) + std::cos(0.07 * static_cast<double>(y)) +
                                     0.3 * noise + 0.01 * static_cast<double>(z));
        const double fx = static_cast<double>(x) / static_cast<double>(s[0]);
        const double fy = static_cast<double>(y) / static_cast<double>(s[1]);
        const double fz = static_cast<double>(z) / static_cast<double>(s[2]);
        for (int k = 0; k < 3; ++k) {
          const double d2 = (fx - cx[k]) * (fx - cx[k]) + (fy - cy[k]) * (fy - cy[k]) + (fz - cz[k]) * (fz - cz[k]);
          if (d2 < r[k] * r[k]) seg[i] = label[k];
        }
      }
    }
  }
  const std::vector<int64_t> shape = {1, s[0], s[1], s[2]};
  const std::string id = absl::StrFormat("case_%03d", index);
  ds::B2ndWriteOptions w;
  w.blocks = Clip({1, 32, 32, 32}, s);
  w.chunks = Clip({1, 96, 128, 128}, s);
  if (absl::Status st = ds::WriteB2ndFile(absl::StrCat(dir, "/", id, ".b2nd"), ds::DType::kFloat32, shape, data.data(),
                                          data.size() * sizeof(float), w);
      !st.ok()) {
    return st;
  }
  w.blocks = Clip({1, 64, 32, 32}, s);
  w.chunks = Clip({1, 128, 192, 128}, s);
  w.shuffle = false;
  return ds::WriteB2ndFile(absl::StrCat(dir, "/", id, "_seg.b2nd"), ds::DType::kInt8, shape, seg.data(), seg.size(), w);
}

}  // namespace

absl::StatusOr<std::string> WriteSyntheticDataset(const SynthOptions& o) {
  const std::string dir = o.root + "/Dataset999_Bench";
  const std::string data_dir = dir + "/nnUNetPlans_3d_fullres";
  const std::string stamp = absl::StrCat("cases=", o.cases, " shape=", absl::StrJoin(o.shape, "x"),
                                         " patch=", absl::StrJoin(o.patch, "x"), " v1\n");
  if (ReadText(dir + "/bench_stamp.txt") == stamp) return dir;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(data_dir, ec);
  if (ec) return absl::InternalError(absl::StrCat(data_dir, ": ", ec.message()));
  std::string ids;
  for (int i = 0; i < o.cases; ++i) absl::StrAppend(&ids, i ? ", " : "", absl::StrFormat("\"case_%03d\"", i));
  absl::Status st = WriteText(
      dir + "/nnUNetPlans.json",
      absl::StrCat(R"({"plans_name": "nnUNetPlans", "transpose_forward": [0, 1, 2], "configurations": {
  "3d_fullres": {"data_identifier": "nnUNetPlans_3d_fullres", "batch_size": 2, "patch_size": [)",
                   absl::StrJoin(o.patch, ", "), R"(],
    "spacing": [1.0, 1.0, 1.0], "normalization_schemes": ["CTNormalization"], "use_mask_for_norm": [false],
    "architecture": {"arch_kwargs": {"strides": [[1, 1, 1], [2, 2, 2], [2, 2, 2], [2, 2, 2], [2, 2, 2], [2, 2, 2]]}}}}})"));
  if (st.ok()) {
    st = WriteText(dir + "/dataset.json",
                   absl::StrCat(R"({"channel_names": {"0": "CT"}, "labels": {"background": 0, "a": 1, "b": 2},
 "numTraining": )", o.cases, R"(, "file_ending": ".nii.gz"})"));
  }
  if (st.ok()) st = WriteText(dir + "/splits_final.json", absl::StrCat(R"([{"train": [)", ids, R"(], "val": []}])"));
  if (!st.ok()) return st;
  std::atomic<int> next{0};
  std::vector<absl::Status> results(static_cast<size_t>(o.cases));
  std::vector<std::thread> threads;
  for (int t = 0; t < std::max(1, o.threads); ++t) {
    threads.emplace_back([&] {
      for (int i = next++; i < o.cases; i = next++) results[static_cast<size_t>(i)] = WriteCase(data_dir, i, o.shape);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& r : results) {
    if (!r.ok()) return r;
  }
  if (absl::Status s = WriteText(dir + "/bench_stamp.txt", stamp); !s.ok()) return s;
  return dir;
}

}  // namespace augmentd::bench
