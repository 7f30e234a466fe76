// C ABI: decodes one JSON request, calls the engine, and keeps the outputs alive in the result handle.
#include "augment/capi.h"

#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "augment/engine.h"
#include "augment/json_util.h"
#include "augment/pipeline.h"
#include "augment/registry.h"
#include "augment/status_macros.h"
#include "augment/types.h"
#include "nlohmann/json.hpp"

struct augmentd_result {
  bool ok = true;
  std::string error;
  std::string json = "null";
  struct Tensor {
    std::string name;
    std::string dtype;
    std::vector<int64_t> shape;
    augmentd::HostTensor data;
  };
  std::vector<Tensor> tensors;
};

namespace augmentd {
namespace {
namespace ju = json_util;
using Json = nlohmann::json;

std::string CodeName(absl::StatusCode code) { return absl::StatusCodeToString(code); }

absl::StatusOr<TensorView> ParseTensor(const Json& j, const std::string& field) {
  if (!j.is_object()) return ju::Invalid(field, "expected {\"data\", \"dtype\", \"shape\"}");
  if (!j.contains("data") || !j["data"].is_number_integer())
    return ju::Invalid(field + ".data", "expected an integer address");
  TensorView v;
  v.data = reinterpret_cast<const void*>(static_cast<uintptr_t>(j["data"].get<uint64_t>()));
  ASSIGN_OR_RETURN(std::string dt, ju::GetString(j, "dtype", std::nullopt, field));
  auto d = ParseDType(dt);
  if (!d.ok()) return ju::Invalid(field + ".dtype", absl::StrCat("unknown dtype '", dt, "'"));
  v.dtype = *d;
  if (!j.contains("shape")) return ju::Invalid(field + ".shape", "required");
  ASSIGN_OR_RETURN(v.shape, ju::AsInts(j["shape"], field + ".shape"));
  for (int64_t s : v.shape)
    if (s < 0) return ju::Invalid(field + ".shape", "negative dimension");
  if (v.data == nullptr && v.numel() > 0) return ju::Invalid(field + ".data", "is null");
  return v;
}

void AddTensor(augmentd_result& r, std::string name, HostTensor t) {
  augmentd_result::Tensor e;
  e.name = std::move(name);
  e.dtype = std::string(DTypeName(t.dtype()));
  e.shape = t.shape();
  e.data = std::move(t);
  r.tensors.push_back(std::move(e));
}

HostTensor FromFloats(const std::vector<float>& v, std::vector<int64_t> shape) {
  HostTensor t = HostTensor::Empty(std::move(shape), DType::kFloat32);
  if (!v.empty()) std::memcpy(t.raw_data(), v.data(), v.size() * sizeof(float));
  return t;
}

HostTensor FromLabels(const std::vector<int16_t>& v, std::vector<int64_t> shape, bool as_bool) {
  HostTensor t = HostTensor::Empty(std::move(shape), as_bool ? DType::kBool : DType::kInt16);
  if (as_bool) {
    auto* b = t.data<uint8_t>();
    for (size_t i = 0; i < v.size(); ++i) b[i] = v[i] != 0;
  } else if (!v.empty()) {
    std::memcpy(t.raw_data(), v.data(), v.size() * sizeof(int16_t));
  }
  return t;
}

absl::StatusOr<std::shared_ptr<const Transform>> ParseTransform(const Json& req) {
  if (!req.contains("transform") || !req["transform"].is_object())
    return ju::Invalid("transform", "required object {kind, config}");
  const Json& t = req["transform"];
  RETURN_IF_ERROR(ju::CheckKeys(t, {"kind", "config"}, "transform"));
  ASSIGN_OR_RETURN(std::string kind, ju::GetString(t, "kind", std::nullopt, "transform"));
  return TransformFromJson(kind, t.value("config", Json::object()));
}

absl::Status ApplyTransformOp(const Json& req, augmentd_result& r) {
  ASSIGN_OR_RETURN(auto tr, ParseTransform(req));
  TensorView image, seg;
  const bool has_image = req.contains("image") && !req["image"].is_null();
  const bool has_seg = req.contains("seg") && !req["seg"].is_null();
  if (has_image) {
    ASSIGN_OR_RETURN(image, ParseTensor(req["image"], "image"));
  }
  if (has_seg) {
    ASSIGN_OR_RETURN(seg, ParseTensor(req["seg"], "seg"));
  }
  if (!has_image && !has_seg) return ju::Invalid("image", "an image and/or a seg tensor is required");
  SampleData s;
  if (has_image) {
    ASSIGN_OR_RETURN(s, SampleFromViews(image, seg));
  } else {
    // Segmentation-only request: validate through a 1-channel dummy image of the seg's spatial shape.
    if (seg.shape.size() < 3) return ju::Invalid("seg.shape", "expected (S, X, Y[, Z])");
    std::vector<int64_t> ishape = seg.shape;
    ishape[0] = 1;
    std::vector<float> dummy(static_cast<size_t>(NumElements(ishape)), 0.0f);
    ASSIGN_OR_RETURN(s, SampleFromViews(TensorView{dummy.data(), ishape, DType::kFloat32}, seg));
    s.channels = 0;
    s.image.clear();
  }
  static const Json kNull;
  const Json& params_json = req.contains("params") ? req["params"] : kNull;
  ASSIGN_OR_RETURN(auto params, tr->ParseParams(params_json, s.layout()));
  RETURN_IF_ERROR(tr->Apply(*params, s));
  if (has_image) {
    std::vector<int64_t> shape = {s.channels};
    shape.insert(shape.end(), s.shape.begin(), s.shape.end());
    AddTensor(r, "image", FromFloats(s.image, shape));
  }
  if (has_seg) {
    if (!s.seg_pyramid.empty()) {
      for (size_t l = 0; l < s.seg_pyramid.size(); ++l) {
        std::vector<int64_t> shape = {s.seg_channels};
        shape.insert(shape.end(), s.seg_pyramid[l].shape.begin(), s.seg_pyramid[l].shape.end());
        AddTensor(r, absl::StrCat("seg_", l), FromLabels(s.seg_pyramid[l].data, shape, s.seg_is_bool));
      }
    } else {
      std::vector<int64_t> shape = {s.seg_channels};
      shape.insert(shape.end(), s.shape.begin(), s.shape.end());
      AddTensor(r, "seg", FromLabels(s.seg, shape, s.seg_is_bool));
    }
  }
  r.json = Json{{"params", tr->ParamsToJson(*params)}}.dump();
  return absl::OkStatus();
}

absl::Status DrawParamsOp(const Json& req, augmentd_result& r) {
  ASSIGN_OR_RETURN(auto tr, ParseTransform(req));
  ASSIGN_OR_RETURN(double p, ju::GetDouble(req, "apply_probability", 1.0, ""));
  RETURN_IF_ERROR(ju::CheckProbability(p, "apply_probability"));
  ASSIGN_OR_RETURN(int64_t seed, ju::GetInt(req, "seed", 0, ""));
  ASSIGN_OR_RETURN(int64_t first, ju::GetInt(req, "first_sample_index", 0, ""));
  ASSIGN_OR_RETURN(int64_t count, ju::GetInt(req, "count", 1, ""));
  if (count < 0 || count > 10'000'000) return ju::Invalid("count", "must be in [0, 1e7]");
  if (!req.contains("image_shape")) return ju::Invalid("image_shape", "required [C, X, Y(, Z)]");
  ASSIGN_OR_RETURN(auto shape, ju::AsInts(req["image_shape"], "image_shape"));
  if (shape.size() != 3 && shape.size() != 4) return ju::Invalid("image_shape", "expected [C, X, Y(, Z)]");
  for (int64_t s : shape)
    if (s < 1 || s > 4096) return ju::Invalid("image_shape", "entries must be in [1, 4096]");
  ASSIGN_OR_RETURN(int64_t seg_channels, ju::GetInt(req, "seg_channels", 1, ""));
  SampleLayout layout{shape[0], std::vector<int64_t>(shape.begin() + 1, shape.end()), seg_channels};
  Json out = Json::array();
  for (int64_t k = 0; k < count; ++k) {
    const uint64_t sample = static_cast<uint64_t>(first + k);
    RandomStream rng(static_cast<uint64_t>(seed), sample, 0);
    const bool applied = rng.Uniform() < p;
    DrawContext ctx{rng, static_cast<uint64_t>(seed), sample, 0};
    ASSIGN_OR_RETURN(auto params, tr->Draw(ctx, layout));
    Json j = tr->ParamsToJson(*params);
    j["applied"] = applied;
    out.push_back(std::move(j));
  }
  r.json = out.dump();
  return absl::OkStatus();
}

absl::StatusOr<PipelineSpec> PipelineFromRequest(const Json& req) {
  if (req.contains("pipeline") && !req["pipeline"].is_null()) return PipelineSpec::FromJson(req["pipeline"]);
  ASSIGN_OR_RETURN(std::string preset, ju::GetString(req, "preset", std::string("nnunet_default"), ""));
  if (!req.contains("trainer_config")) return ju::Invalid("trainer_config", "required");
  ASSIGN_OR_RETURN(TrainerConfig tc, TrainerConfig::FromJson(req["trainer_config"]));
  return PresetPipeline(preset, tc);
}

absl::Status RunPipelineOp(const Json& req, augmentd_result& r) {
  ASSIGN_OR_RETURN(PipelineSpec spec, PipelineFromRequest(req));
  BatchInput in;
  if (!req.contains("image")) return ju::Invalid("image", "required");
  ASSIGN_OR_RETURN(in.image, ParseTensor(req["image"], "image"));
  if (req.contains("seg") && !req["seg"].is_null()) {
    ASSIGN_OR_RETURN(in.seg, ParseTensor(req["seg"], "seg"));
  }
  RunOptions opt;
  ASSIGN_OR_RETURN(int64_t seed, ju::GetInt(req, "seed", 0, ""));
  ASSIGN_OR_RETURN(int64_t first, ju::GetInt(req, "first_sample_index", 0, ""));
  ASSIGN_OR_RETURN(int64_t threads, ju::GetInt(req, "threads", 1, ""));
  if (threads < 0 || threads > 1024) return ju::Invalid("threads", "must be in [0, 1024]");
  opt.seed = static_cast<uint64_t>(seed);
  opt.first_sample_index = static_cast<uint64_t>(first);
  opt.num_threads = static_cast<int>(threads);
  std::vector<std::vector<Json>> injected;
  if (req.contains("params") && !req["params"].is_null()) {
    if (!req["params"].is_array()) return ju::Invalid("params", "expected a list per sample");
    for (const Json& s : req["params"]) {
      if (!s.is_array()) return ju::Invalid("params", "expected a list per transform for each sample");
      injected.emplace_back(s.begin(), s.end());
    }
    opt.injected = &injected;
  }
  ASSIGN_OR_RETURN(BatchResult out, AugmentBatch(spec, in, opt));
  Json j;
  j["samples"] = out.ParamsJson(spec);
  j["pipeline"] = spec.ToJson();
  r.json = j.dump();
  AddTensor(r, "image", std::move(out.image));
  for (size_t l = 0; l < out.seg.size(); ++l) AddTensor(r, absl::StrCat("seg_", l), std::move(out.seg[l]));
  return absl::OkStatus();
}

absl::Status InitialPatchSizeOp(const Json& req, augmentd_result& r) {
  if (!req.contains("trainer_config")) return ju::Invalid("trainer_config", "required");
  ASSIGN_OR_RETURN(TrainerConfig tc, TrainerConfig::FromJson(req["trainer_config"]));
  // nnUNetTrainerDA5 computes its initial patch size with scale range (0.7, 1.43).
  ASSIGN_OR_RETURN(std::string preset, ju::GetString(req, "preset", std::string("nnunet_default"), ""));
  const std::pair<double, double> scale_range =
      preset == "nnunet_da5" ? std::make_pair(0.7, 1.43) : std::make_pair(0.85, 1.25);
  ASSIGN_OR_RETURN(AugmentationGeometry g, ConfigureGeometry(tc, scale_range));
  r.json = Json{{"initial_patch_size", g.initial_patch_size},
                {"rotation_for_da", {g.rotation_for_da.first, g.rotation_for_da.second}},
                {"do_dummy_2d_data_aug", g.do_dummy_2d_data_aug},
                {"mirror_axes", g.mirror_axes}}
               .dump();
  return absl::OkStatus();
}

absl::Status Dispatch(const char* request, augmentd_result& r) {
  if (request == nullptr) return ju::Invalid("request", "is NULL");
  Json req = Json::parse(request, nullptr, /*allow_exceptions=*/false);
  if (req.is_discarded()) return ju::Invalid("request", "is not valid JSON");
  if (!req.is_object()) return ju::Invalid("request", "expected a JSON object");
  RETURN_IF_ERROR(ju::CheckDepth(req, "request"));
  ASSIGN_OR_RETURN(std::string op, ju::GetString(req, "op", std::nullopt, ""));
  if (op == "apply_transform") return ApplyTransformOp(req, r);
  if (op == "draw_params") return DrawParamsOp(req, r);
  if (op == "run_pipeline") return RunPipelineOp(req, r);
  if (op == "initial_patch_size") return InitialPatchSizeOp(req, r);
  if (op == "preset") {
    ASSIGN_OR_RETURN(PipelineSpec spec, PipelineFromRequest(req));
    r.json = spec.ToJson().dump();
    return absl::OkStatus();
  }
  if (op == "registry") {
    r.json = Json{{"transforms", RegisteredTransformNames()}}.dump();
    return absl::OkStatus();
  }
  return ju::Invalid("op", absl::StrCat("unknown op '", op, "'"));
}

}  // namespace
}  // namespace augmentd

namespace {
// Returned when even the result handle cannot be allocated; never freed.
augmentd_result* OomResult() {
  static augmentd_result* const kOom = [] {
    static augmentd_result r;
    r.ok = false;
    r.error = "RESOURCE_EXHAUSTED: out of memory";
    return &r;
  }();
  return kOom;
}
}  // namespace

extern "C" {

augmentd_result* augmentd_run_json(const char* request_json) {
  augmentd_result* r = new (std::nothrow) augmentd_result();
  if (r == nullptr) return OomResult();
  absl::Status s;
  try {
    s = augmentd::Dispatch(request_json, *r);
  } catch (const std::bad_alloc&) {
    s = absl::ResourceExhaustedError("out of host memory");
  } catch (const std::exception& e) {
    s = absl::InternalError(absl::StrCat("unexpected exception: ", e.what()));
  }
  if (!s.ok()) {
    r->ok = false;
    r->error = absl::StrCat(augmentd::CodeName(s.code()), ": ", s.message());
    r->json = "null";
    r->tensors.clear();
  }
  return r;
}

int augmentd_result_ok(const augmentd_result* r) { return r != nullptr && r->ok ? 1 : 0; }
const char* augmentd_result_error(const augmentd_result* r) {
  return r == nullptr ? "INTERNAL: null result" : r->error.c_str();
}
const char* augmentd_result_json(const augmentd_result* r) { return r == nullptr ? "null" : r->json.c_str(); }
int augmentd_result_num_tensors(const augmentd_result* r) {
  return r == nullptr ? 0 : static_cast<int>(r->tensors.size());
}

static const augmentd_result::Tensor* TensorAt(const augmentd_result* r, int i) {
  if (r == nullptr || i < 0 || i >= static_cast<int>(r->tensors.size())) return nullptr;
  return &r->tensors[i];
}
const char* augmentd_result_tensor_name(const augmentd_result* r, int i) {
  const auto* t = TensorAt(r, i);
  return t ? t->name.c_str() : nullptr;
}
const char* augmentd_result_tensor_dtype(const augmentd_result* r, int i) {
  const auto* t = TensorAt(r, i);
  return t ? t->dtype.c_str() : nullptr;
}
int augmentd_result_tensor_ndim(const augmentd_result* r, int i) {
  const auto* t = TensorAt(r, i);
  return t ? static_cast<int>(t->shape.size()) : 0;
}
const int64_t* augmentd_result_tensor_shape(const augmentd_result* r, int i) {
  const auto* t = TensorAt(r, i);
  return t ? t->shape.data() : nullptr;
}
const void* augmentd_result_tensor_data(const augmentd_result* r, int i) {
  const auto* t = TensorAt(r, i);
  return t ? t->data.raw_data() : nullptr;
}
void augmentd_result_free(augmentd_result* r) {
  if (r == nullptr || r == OomResult()) return;
  delete r;
}

}  // extern "C"
