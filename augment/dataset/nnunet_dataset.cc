#include "augment/dataset/nnunet_dataset.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "augment/dataset/b2nd_reader.h"
#include "augment/dataset/mapped_file.h"
#include "augment/dataset/npy_reader.h"
#include "augment/dataset/npz_reader.h"
#include "nlohmann/json.hpp"

namespace augmentd::dataset {
namespace {

bool IsFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

absl::StatusOr<std::vector<std::string>> ListFiles(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return FileErrnoToStatus(errno, dir, "cannot list");
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (IsFile(dir + "/" + name)) names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::string Extension(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

}  // namespace

const char* DatasetFormatName(DatasetFormat f) { return f == DatasetFormat::kBlosc2 ? "b2nd" : "numpy"; }

absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return FileErrnoToStatus(errno, path, "cannot open");
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot open"));
  }
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

absl::StatusOr<std::shared_ptr<NnunetDataset>> NnunetDataset::Open(const DatasetOptions& options) {
  if (!IsSafeComponent(options.plans_name)) {
    return absl::InvalidArgumentError(absl::StrCat("plans_name: '", options.plans_name, "' is not a file name"));
  }
  if (!IsSafeComponent(options.configuration)) {
    return absl::InvalidArgumentError(
        absl::StrCat("configuration: '", options.configuration, "' is not a configuration name"));
  }
  std::shared_ptr<NnunetDataset> ds(new NnunetDataset());
  ds->options_ = options;
  ds->guard_ = PathGuard(options.allowed_roots);
  absl::StatusOr<std::string> dir = ds->guard_.Resolve(options.dataset_dir);
  if (!dir.ok()) return dir.status();
  ds->dir_ = *dir;

  const std::string plans_path = absl::StrCat(ds->dir_, "/", options.plans_name, ".json");
  absl::StatusOr<std::string> plans_text = ds->ReadConfinedFile(plans_path);
  if (!plans_text.ok()) return plans_text.status();
  absl::StatusOr<PlansConfig> plans = ParsePlans(*plans_text, options.configuration, plans_path);
  if (!plans.ok()) return plans.status();
  ds->plans_ = *std::move(plans);
  if (!IsSafeComponent(ds->plans_.data_identifier)) {
    return absl::InvalidArgumentError(absl::StrCat(plans_path, ": data_identifier is not a folder name"));
  }

  const std::string dataset_json_path = absl::StrCat(ds->dir_, "/dataset.json");
  absl::StatusOr<std::string> dataset_text = ds->ReadConfinedFile(dataset_json_path);
  if (!dataset_text.ok()) return dataset_text.status();
  absl::StatusOr<LabelInfo> labels = ParseLabels(*dataset_text, dataset_json_path);
  if (!labels.ok()) return labels.status();
  ds->labels_ = *std::move(labels);
  const nlohmann::ordered_json dj = nlohmann::ordered_json::parse(*dataset_text, nullptr, false);
  const char* channels_key = dj.contains("channel_names") ? "channel_names" : "modality";  // old name
  if (dj.contains(channels_key) && dj[channels_key].is_object()) {
    for (const auto& [k, v] : dj[channels_key].items())
      ds->channel_names_.push_back(v.is_string() ? v.get<std::string>() : v.dump());
  }

  absl::StatusOr<std::string> data_dir = ds->guard_.Resolve(absl::StrCat(ds->dir_, "/", ds->plans_.data_identifier));
  if (!data_dir.ok()) {
    if (absl::IsNotFound(data_dir.status())) {
      return absl::NotFoundError(absl::StrCat(ds->dir_, "/", ds->plans_.data_identifier, ": configuration '",
                                              options.configuration, "' has not been preprocessed (folder missing)"));
    }
    return data_dir.status();
  }
  ds->data_dir_ = *data_dir;

  absl::StatusOr<std::vector<std::string>> files = ListFiles(ds->data_dir_);
  if (!files.ok()) return files.status();
  std::set<std::string> endings;
  bool any_npy = false;
  for (const std::string& f : *files) {
    const std::string ext = Extension(f);
    if (ext == "npy") any_npy = true;
    if (ext != "pkl" && ext != "npy") endings.insert(ext);
  }
  if (endings == std::set<std::string>{"b2nd"}) {
    ds->format_ = DatasetFormat::kBlosc2;
  } else if (endings == std::set<std::string>{"npz"} || (endings.empty() && any_npy)) {
    ds->format_ = DatasetFormat::kNumpy;
  } else if (endings.empty()) {
    return absl::NotFoundError(absl::StrCat(ds->data_dir_, ": no preprocessed cases (.b2nd/.npz) found"));
  } else {
    return absl::FailedPreconditionError(absl::StrCat(ds->data_dir_,
                                                      ": cannot infer the dataset format from the "
                                                      "file endings {",
                                                      absl::StrJoin(endings, ", "), "}"));
  }
  for (const std::string& f : *files) {
    std::string id;
    if (ds->format_ == DatasetFormat::kBlosc2) {
      if (absl::EndsWith(f, ".b2nd") && !absl::EndsWith(f, "_seg.b2nd")) id = f.substr(0, f.size() - 5);
    } else if (!endings.empty()) {
      if (absl::EndsWith(f, ".npz")) id = f.substr(0, f.size() - 4);
    } else if (absl::EndsWith(f, ".npy") && !absl::EndsWith(f, "_seg.npy")) {
      id = f.substr(0, f.size() - 4);
    }
    if (!id.empty()) ds->case_ids_.push_back(id);
  }
  std::sort(ds->case_ids_.begin(), ds->case_ids_.end());
  return ds;
}

absl::Status NnunetDataset::CheckCaseIds(const std::vector<std::string>& ids) const {
  for (const std::string& id : ids) {
    if (!IsSafeComponent(id)) return absl::InvalidArgumentError(absl::StrCat("case id '", id, "' is not a file name"));
    if (!std::binary_search(case_ids_.begin(), case_ids_.end(), id)) {
      return absl::NotFoundError(absl::StrCat("case '", id, "' is not in ", data_dir_));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Split> NnunetDataset::Fold(int fold) const {
  const std::string path = absl::StrCat(dir_, "/splits_final.json");
  absl::StatusOr<std::string> text = ReadConfinedFile(path);
  if (!text.ok()) {
    if (absl::IsNotFound(text.status())) {
      return absl::NotFoundError(absl::StrCat(path,
                                              ": missing (nnU-Net writes it on the first training run); "
                                              "name the case ids explicitly instead"));
    }
    return text.status();
  }
  absl::StatusOr<std::vector<Split>> splits = ParseSplits(*text, path);
  if (!splits.ok()) return splits.status();
  if (fold < 0 || static_cast<size_t>(fold) >= splits->size()) {
    return absl::OutOfRangeError(absl::StrCat(path, ": fold ", fold, " not defined (", splits->size(), " folds)"));
  }
  Split s = (*splits)[static_cast<size_t>(fold)];
  if (absl::Status st = CheckCaseIds(s.train); !st.ok()) return st;
  if (absl::Status st = CheckCaseIds(s.val); !st.ok()) return st;
  std::sort(s.train.begin(), s.train.end());  // nnU-Net's dataset sorts its identifiers
  std::sort(s.val.begin(), s.val.end());
  return s;
}

absl::StatusOr<std::string> NnunetDataset::ReadConfinedFile(const std::string& path) const {
  std::unique_ptr<char, decltype(&free)> resolved(::realpath(path.c_str(), nullptr), &free);
  if (!resolved) return FileErrnoToStatus(errno, path, "cannot open");
  if (absl::Status st = guard_.CheckInside(resolved.get(), path); !st.ok()) return st;
  return ReadTextFile(resolved.get());
}

absl::StatusOr<std::string> NnunetDataset::CaseFile(const std::string& name) const {
  const std::string path = absl::StrCat(data_dir_, "/", name);
  std::unique_ptr<char, decltype(&free)> resolved(::realpath(path.c_str(), nullptr), &free);
  if (!resolved) return FileErrnoToStatus(errno, path, "cannot open");
  if (absl::Status st = guard_.CheckInside(resolved.get(), path); !st.ok()) return st;
  return std::string(resolved.get());
}

absl::StatusOr<std::shared_ptr<const CaseHandle>> NnunetDataset::OpenCase(const std::string& id) const {
  if (absl::Status st = CheckCaseIds({id}); !st.ok()) return st;
  std::unique_ptr<CaseArray> data, seg;
  if (format_ == DatasetFormat::kBlosc2) {
    for (auto [suffix, out] : {std::pair{".b2nd", &data}, std::pair{"_seg.b2nd", &seg}}) {
      absl::StatusOr<std::string> file = CaseFile(id + suffix);
      if (!file.ok()) return file.status();
      absl::StatusOr<std::unique_ptr<CaseArray>> a = OpenB2nd(*file);
      if (!a.ok()) return a.status();
      *out = *std::move(a);
    }
  } else {
    // Unpacked .npy files win over the archive, as in nnUNetDatasetNumpy.load_case.
    for (auto [suffix, member, out] : {std::tuple{".npy", "data", &data}, std::tuple{"_seg.npy", "seg", &seg}}) {
      absl::StatusOr<std::unique_ptr<CaseArray>> a;
      absl::StatusOr<std::string> npy = CaseFile(id + suffix);
      if (npy.ok()) {
        a = OpenNpy(*npy);
      } else if (absl::IsNotFound(npy.status())) {
        absl::StatusOr<std::string> npz = CaseFile(id + ".npz");
        if (!npz.ok()) return npz.status();
        a = OpenNpzMember(*npz, member);
      } else {
        return npy.status();
      }
      if (!a.ok()) return a.status();
      *out = *std::move(a);
    }
  }
  if (data->rank() < 2 || seg->rank() != data->rank()) {
    return absl::DataLossError(absl::StrCat(data->path(), ": data rank ", data->rank(), " and seg rank ", seg->rank(),
                                            " do not form a (C, X, Y, Z) case"));
  }
  for (size_t a = 1; a < data->rank(); ++a) {
    if (data->shape()[a] != seg->shape()[a]) {
      return absl::DataLossError(absl::StrCat(seg->path(), ": segmentation shape differs from ", data->path()));
    }
  }
  std::unique_ptr<CaseArray> prev;
  if (!options_.previous_stage_dir.empty()) {
    absl::StatusOr<std::unique_ptr<CaseArray>> a = OpenPreviousStage(id);
    if (!a.ok()) return a.status();
    prev = *std::move(a);
    const Shape want(data->shape().begin() + 1, data->shape().end());
    Shape got = prev->shape();
    if (got.size() == want.size() + 1 && got[0] == 1) got.erase(got.begin());
    if (got != want) {
      return absl::FailedPreconditionError(absl::StrCat(prev->path(), ": previous stage's segmentation has shape (",
                                                        absl::StrJoin(prev->shape(), ", "), "), the case (",
                                                        absl::StrJoin(data->shape(), ", "), ") (channels first)"));
    }
  }
  return std::make_shared<const CaseHandle>(id, std::move(data), std::move(seg), std::move(prev));
}

absl::StatusOr<std::unique_ptr<CaseArray>> NnunetDataset::OpenPreviousStage(const std::string& id) const {
  const std::string& dir = options_.previous_stage_dir;
  auto confined = [&](const std::string& name) -> absl::StatusOr<std::string> {
    absl::StatusOr<std::string> p = guard_.Resolve(dir + "/" + name);
    if (!p.ok()) return p.status();
    return *p;
  };
  // nnUNetDatasetBlosc2: <id>.b2nd; nnUNetDatasetNumpy: <id>.npy, else <id>.npz['seg'].
  for (const char* suffix : {".b2nd", ".npy", ".npz"}) {
    struct stat st;
    const std::string raw = dir + "/" + id + suffix;
    if (stat(raw.c_str(), &st) != 0) continue;
    absl::StatusOr<std::string> file = confined(id + suffix);
    if (!file.ok()) return file.status();
    if (std::string(suffix) == ".b2nd") return OpenB2nd(*file);
    if (std::string(suffix) == ".npy") return OpenNpy(*file);
    return OpenNpzMember(*file, "seg");
  }
  return absl::NotFoundError(absl::StrCat("previous stage's segmentation of case ", id, ": none of ", dir, "/", id,
                                          ".{b2nd,npy,npz}"));
}

absl::StatusOr<std::shared_ptr<const ClassLocations>> NnunetDataset::GetClassLocations(const CaseHandle& c) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = locations_.find(c.id());
    if (it != locations_.end()) return it->second;
  }
  // Computed outside the lock: two threads may compute the same case once each; both results are equal.
  const std::vector<ClassKey> keys = labels_.LocationKeys();
  ClassLocationsCache disk(options_.fg_cache_dir);
  const std::string seg_path = c.seg().path();
  absl::StatusOr<ClassLocations> loc = disk.Load(seg_path, keys, options_.fg_rule);
  if (!loc.ok()) {
    loc = ComputeClassLocations(c.seg(), keys, options_.fg_rule);
    if (!loc.ok()) return loc.status();
    // A cache that cannot be written only costs a recomputation next time.
    if (!options_.fg_cache_dir.empty() && !absl::StrContains(seg_path, ".npz:")) {
      disk.Store(seg_path, options_.fg_rule, *loc).IgnoreError();
    }
  }
  auto shared = std::make_shared<const ClassLocations>(*std::move(loc));
  std::lock_guard<std::mutex> lock(mu_);
  return locations_.emplace(c.id(), shared).first->second;
}

absl::StatusOr<std::shared_ptr<const ClassLocations>> NnunetDataset::GetClassLocations(const std::string& id) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = locations_.find(id);
    if (it != locations_.end()) return it->second;
  }
  absl::StatusOr<std::shared_ptr<const CaseHandle>> c = OpenCase(id);
  if (!c.ok()) return c.status();
  return GetClassLocations(**c);
}

}  // namespace augmentd::dataset
