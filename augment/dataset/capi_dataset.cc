// C ABI over dataset mode (see capi_dataset.h). JSON in, JSON + owned tensors out; every failure becomes
// a status code and message, never an exception or a crash across the boundary.
#include "augment/dataset/capi_dataset.h"

#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "augment/dataset/batch_loader.h"
#include "augment/dataset/nnunet_dataset.h"
#include "augment/dataset/npz_reader.h"
#include "augment/dataset/path_guard.h"
#include "augment/dataset/sampler.h"
#include "nlohmann/json.hpp"

struct AugmentdDatasetResult {
  struct Tensor {
    std::string name;
    std::string dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
  };
  int code = 0;
  std::string json;
  std::vector<Tensor> tensors;
};

namespace augmentd::dataset {
namespace {

using Json = nlohmann::json;
using Tensor = AugmentdDatasetResult::Tensor;

// Serialises a response. Error messages may quote bytes of damaged files, so invalid UTF-8 is replaced
// (U+FFFD) instead of throwing.
std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

template <typename T>
Tensor MakeTensor(std::string name, DType dtype, Shape shape, const T* data, size_t n) {
  Tensor t{std::move(name), std::string(DTypeName(dtype)), std::move(shape), {}};
  t.bytes.resize(n * sizeof(T));
  if (n > 0) std::memcpy(t.bytes.data(), data, n * sizeof(T));
  return t;
}

absl::StatusOr<std::vector<int64_t>> Ints(const Json& j, const char* field) {
  if (!j.contains(field) || !j[field].is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": expected a list of integers"));
  }
  std::vector<int64_t> out;
  for (const Json& v : j[field]) {
    if (!v.is_number_integer()) return absl::InvalidArgumentError(absl::StrCat(field, ": expected integers"));
    out.push_back(v.get<int64_t>());
  }
  return out;
}

std::vector<std::string> Strings(const Json& j, const char* field) {
  std::vector<std::string> out;
  if (j.contains(field) && j[field].is_array()) {
    for (const Json& v : j[field]) {
      if (v.is_string()) out.push_back(v.get<std::string>());
    }
  }
  return out;
}

// Opened datasets, keyed by their canonical request object.
std::mutex g_mu;
std::map<std::string, std::shared_ptr<NnunetDataset>>& Datasets() {
  static auto* m = new std::map<std::string, std::shared_ptr<NnunetDataset>>();
  return *m;
}

absl::StatusOr<std::shared_ptr<NnunetDataset>> GetDataset(const Json& req) {
  if (!req.contains("dataset") || !req["dataset"].is_object()) {
    return absl::InvalidArgumentError("dataset: expected an object {dir, plans, configuration, ...}");
  }
  const Json& d = req["dataset"];
  DatasetOptions opt;
  if (!d.contains("dir") || !d["dir"].is_string()) return absl::InvalidArgumentError("dataset.dir: required");
  opt.dataset_dir = d["dir"].get<std::string>();
  opt.plans_name = d.value("plans", opt.plans_name);
  opt.configuration = d.value("configuration", opt.configuration);
  opt.allowed_roots = Strings(d, "allowed_roots");
  opt.fg_cache_dir = d.value("fg_cache_dir", std::string());
  const std::string key = d.dump();
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = Datasets().find(key);
    if (it != Datasets().end()) return it->second;
  }
  absl::StatusOr<std::shared_ptr<NnunetDataset>> ds = NnunetDataset::Open(opt);
  if (!ds.ok()) return ds.status();
  std::lock_guard<std::mutex> lock(g_mu);
  return Datasets().emplace(key, *ds).first->second;
}

Json KeyJson(const ClassKey& k) {
  return Json{{"labels", k.labels}, {"is_region", k.is_region}, {"annotated", k.annotated}, {"name", k.ToString()}};
}

absl::Status Info(const Json& req, AugmentdDatasetResult* r) {
  absl::StatusOr<std::shared_ptr<NnunetDataset>> ds = GetDataset(req);
  if (!ds.ok()) return ds.status();
  const NnunetDataset& d = **ds;
  const TrainerDefaults t = DefaultTrainerSettings(d.plans().patch_size);
  Json keys = Json::array();
  for (const ClassKey& k : d.labels().LocationKeys()) keys.push_back(KeyJson(k));
  Json out{{"dir", d.dir()},
           {"data_dir", d.data_dir()},
           {"format", DatasetFormatName(d.format())},
           {"case_ids", d.case_ids()},
           {"channel_names", d.channel_names()},
           {"data_identifier", d.plans().data_identifier},
           {"batch_size", d.plans().batch_size},
           {"patch_size", d.plans().patch_size},
           {"spacing", d.plans().spacing},
           {"use_mask_for_norm", d.plans().use_mask_for_norm},
           {"strides", d.plans().strides},
           {"ds_scales", DeepSupervisionScales(d.plans().strides)},
           {"initial_patch_size", t.initial_patch_size},
           {"do_dummy_2d_data_aug", t.do_dummy_2d_data_aug},
           {"all_labels", d.labels().all_labels},
           {"has_regions", d.labels().has_regions},
           {"ignore_label", d.labels().ignore_label ? Json(*d.labels().ignore_label) : Json(nullptr)},
           {"location_keys", keys}};
  r->json = Dump(out);
  return absl::OkStatus();
}

absl::Status SampleBatch(const Json& req, AugmentdDatasetResult* r) {
  absl::StatusOr<std::shared_ptr<NnunetDataset>> ds = GetDataset(req);
  if (!ds.ok()) return ds.status();
  const NnunetDataset& d = **ds;
  const std::string split = req.value("split", std::string("train"));
  if (split != "train" && split != "val") return absl::InvalidArgumentError("split: expected \"train\" or \"val\"");
  std::vector<std::string> ids;
  if (req.contains("case_ids")) {
    ids = Strings(req, "case_ids");
    if (absl::Status st = d.CheckCaseIds(ids); !st.ok()) return st;
    std::sort(ids.begin(), ids.end());
  } else if (req.contains("fold")) {
    if (!req["fold"].is_number_integer()) return absl::InvalidArgumentError("fold: expected an integer");
    absl::StatusOr<Split> s = d.Fold(req["fold"].get<int>());
    if (!s.ok()) return s.status();
    ids = split == "train" ? s->train : s->val;
  } else {
    ids = d.case_ids();
  }
  const std::vector<int64_t>& plan_patch = d.plans().patch_size;
  const int64_t batch_size = req.value("batch_size", d.plans().batch_size);
  const bool ignore = d.labels().ignore_label.has_value();
  SamplerOptions so = split == "train"
                          ? SamplerOptions::ForTraining(
                                plan_patch, DefaultTrainerSettings(plan_patch).initial_patch_size, batch_size, ignore)
                          : SamplerOptions::ForValidation(plan_patch, batch_size, ignore);
  if (req.contains("patch_size")) {
    absl::StatusOr<std::vector<int64_t>> p = Ints(req, "patch_size");
    if (!p.ok()) return p.status();
    so.patch_size = *p;
  }
  if (req.contains("final_patch_size")) {
    absl::StatusOr<std::vector<int64_t>> p = Ints(req, "final_patch_size");
    if (!p.ok()) return p.status();
    so.final_patch_size = *p;
  }
  so.oversample_foreground_percent = req.value("oversample_foreground_percent", so.oversample_foreground_percent);
  so.probabilistic_oversampling = req.value("probabilistic_oversampling", so.probabilistic_oversampling);
  const uint64_t seed = req.value("seed", uint64_t{0});
  const uint64_t batch_index = req.value("batch_index", uint64_t{0});
  absl::StatusOr<PatchSampler> sampler = PatchSampler::Create(so, ids, seed);
  if (!sampler.ok()) return sampler.status();
  BatchLoader loader(*ds, *std::move(sampler));
  const std::vector<ClassKey> keys = d.labels().LocationKeys();

  HostBatch batch;
  if (req.value("plan_only", false)) {
    absl::StatusOr<std::vector<SamplePlan>> plans = loader.PlanBatch(batch_index);
    if (!plans.ok()) return plans.status();
    batch.samples = *std::move(plans);
  } else {
    absl::StatusOr<HostBatch> b = loader.LoadBatch(batch_index);
    if (!b.ok()) return b.status();
    batch = *std::move(b);
  }
  Json samples = Json::array();
  for (const SamplePlan& p : batch.samples) {
    samples.push_back(
        Json{{"slot", p.slot},
             {"case_id", p.case_id},
             {"case_index", p.case_index},
             {"force_fg", p.force_fg},
             {"key", p.key_index >= 0 ? Json(keys[static_cast<size_t>(p.key_index)].ToString()) : Json(nullptr)},
             {"lb", p.box.lb},
             {"ub", p.box.ub},
             {"case_shape", p.case_shape}});
  }
  r->json = Dump(Json{{"samples", samples},
                      {"case_ids", ids},
                      {"patch_size", loader.sampler().patch_size()},
                      {"need_to_pad", loader.sampler().need_to_pad()},
                      {"data_shape", batch.data_shape},
                      {"seg_shape", batch.seg_shape}});
  if (!batch.data.empty()) {
    r->tensors.push_back(MakeTensor("data", DType::kFloat32, batch.data_shape, batch.data.data(), batch.data.size()));
    r->tensors.push_back(MakeTensor("seg", DType::kInt16, batch.seg_shape, batch.seg.data(), batch.seg.size()));
  }
  return absl::OkStatus();
}

absl::Status ClassLocationsOp(const Json& req, AugmentdDatasetResult* r) {
  absl::StatusOr<std::shared_ptr<NnunetDataset>> ds = GetDataset(req);
  if (!ds.ok()) return ds.status();
  if (!req.contains("case_id") || !req["case_id"].is_string()) return absl::InvalidArgumentError("case_id: required");
  absl::StatusOr<std::shared_ptr<const ClassLocations>> loc =
      (*ds)->GetClassLocations(req["case_id"].get<std::string>());
  if (!loc.ok()) return loc.status();
  Json keys = Json::array();
  for (size_t k = 0; k < (*loc)->NumKeys(); ++k) {
    keys.push_back(KeyJson((*loc)->keys[k]));
    const int64_t n = (*loc)->Count(k);
    r->tensors.push_back(MakeTensor(absl::StrCat("key", k), DType::kInt32, Shape{n, (*loc)->spatial_rank},
                                    (*loc)->coords[k].data(), (*loc)->coords[k].size()));
  }
  r->json = Dump(Json{{"keys", keys}, {"total_counts", (*loc)->total_counts}});
  return absl::OkStatus();
}

absl::Status ReadBoxOp(const Json& req, AugmentdDatasetResult* r) {
  if (!req.contains("path") || !req["path"].is_string()) return absl::InvalidArgumentError("path: required");
  PathGuard guard(Strings(req, "allowed_roots"));
  absl::StatusOr<std::string> path = guard.Resolve(req["path"].get<std::string>());
  if (!path.ok()) return path.status();
  absl::StatusOr<std::unique_ptr<CaseArray>> a =
      req.contains("member") ? OpenNpzMember(*path, req["member"].get<std::string>()) : OpenCaseArray(*path);
  if (!a.ok()) return a.status();
  absl::StatusOr<std::vector<int64_t>> lb = Ints(req, "lb"), ub = Ints(req, "ub");
  if (!lb.ok()) return lb.status();
  if (!ub.ok()) return ub.status();
  absl::StatusOr<DType> dtype = DTypeFromName(req.value("dtype", std::string(DTypeName((*a)->dtype()))));
  if (!dtype.ok()) return dtype.status();
  const Box box{*lb, *ub};
  if (absl::Status st = ValidateBox(box, (*a)->rank()); !st.ok()) return st;
  const Shape shape = BoxShape((*a)->shape(), box);
  std::vector<uint8_t> buf(static_cast<size_t>(NumElements(shape)) * DTypeSize(*dtype));
  if (absl::Status st = (*a)->ReadBox(box, req.value("pad_value", 0.0), *dtype, buf.data(), buf.size()); !st.ok()) {
    return st;
  }
  r->tensors.push_back(Tensor{"box", std::string(DTypeName(*dtype)), shape, std::move(buf)});
  r->json = Dump(Json{{"array_shape", (*a)->shape()}, {"array_dtype", DTypeName((*a)->dtype())}});
  return absl::OkStatus();
}

absl::Status BoxRangeOp(const Json& req, AugmentdDatasetResult* r) {
  absl::StatusOr<std::vector<int64_t>> shape = Ints(req, "shape"), patch = Ints(req, "patch_size"),
                                       need = Ints(req, "need_to_pad");
  if (!shape.ok()) return shape.status();
  if (!patch.ok()) return patch.status();
  if (!need.ok()) return need.status();
  if (shape->size() != patch->size() || need->size() != patch->size()) {
    return absl::InvalidArgumentError("shape, patch_size and need_to_pad must have the same length");
  }
  const BoxRange br = ComputeBoxRange(*shape, *patch, *need);
  r->json = Dump(Json{{"lb", br.lb}, {"ub", br.ub}, {"need_to_pad", br.need_to_pad}});
  return absl::OkStatus();
}

absl::Status ForcedSlotsOp(const Json& req, AugmentdDatasetResult* r) {
  const int64_t b = req.value("batch_size", int64_t{2});
  const double p = req.value("oversample_foreground_percent", 0.33);
  std::vector<bool> forced;
  for (int64_t j = 0; j < b; ++j) forced.push_back(IsForcedForegroundSlot(j, b, p));
  r->json = Dump(Json{{"forced", forced}});
  return absl::OkStatus();
}

absl::Status Dispatch(const char* request, AugmentdDatasetResult* r) {
  if (request == nullptr) return absl::InvalidArgumentError("request: NULL");
  const Json req = Json::parse(request, nullptr, /*allow_exceptions=*/false);
  if (req.is_discarded() || !req.is_object()) return absl::InvalidArgumentError("request: not a JSON object");
  const std::string op = req.value("op", std::string());
  if (op == "info") return Info(req, r);
  if (op == "sample_batch") return SampleBatch(req, r);
  if (op == "class_locations") return ClassLocationsOp(req, r);
  if (op == "read_box") return ReadBoxOp(req, r);
  if (op == "box_range") return BoxRangeOp(req, r);
  if (op == "forced_slots") return ForcedSlotsOp(req, r);
  return absl::InvalidArgumentError(absl::StrCat("op: unknown operation '", op, "'"));
}

}  // namespace
}  // namespace augmentd::dataset

extern "C" {

AugmentdDatasetResult* augmentd_dataset_call(const char* request_json) {
  auto* r = new AugmentdDatasetResult();
  absl::Status st;
  try {
    st = augmentd::dataset::Dispatch(request_json, r);
  } catch (const std::exception& e) {  // nlohmann type errors on malformed fields, bad_alloc
    st = absl::InvalidArgumentError(absl::StrCat("request: ", e.what()));
  }
  if (!st.ok()) {
    r->tensors.clear();
    r->code = static_cast<int>(st.code());
    r->json = augmentd::dataset::Dump(
        nlohmann::json{{"error", std::string(st.message())}, {"code", absl::StatusCodeToString(st.code())}});
  }
  return r;
}

int augmentd_dataset_result_code(const AugmentdDatasetResult* r) { return r->code; }
const char* augmentd_dataset_result_json(const AugmentdDatasetResult* r) { return r->json.c_str(); }
int augmentd_dataset_result_num_tensors(const AugmentdDatasetResult* r) { return static_cast<int>(r->tensors.size()); }
const char* augmentd_dataset_result_tensor_name(const AugmentdDatasetResult* r, int i) {
  return r->tensors[static_cast<size_t>(i)].name.c_str();
}
const char* augmentd_dataset_result_tensor_dtype(const AugmentdDatasetResult* r, int i) {
  return r->tensors[static_cast<size_t>(i)].dtype.c_str();
}
int augmentd_dataset_result_tensor_ndim(const AugmentdDatasetResult* r, int i) {
  return static_cast<int>(r->tensors[static_cast<size_t>(i)].shape.size());
}
const int64_t* augmentd_dataset_result_tensor_shape(const AugmentdDatasetResult* r, int i) {
  return r->tensors[static_cast<size_t>(i)].shape.data();
}
const void* augmentd_dataset_result_tensor_data(const AugmentdDatasetResult* r, int i) {
  return r->tensors[static_cast<size_t>(i)].bytes.data();
}
void augmentd_dataset_result_free(AugmentdDatasetResult* r) { delete r; }

}  // extern "C"
