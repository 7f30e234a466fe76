#include "server/adapter.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "augment/registry.h"
#include "augment/schema.h"
#include "augment/transforms/spatial/spatial.h"

namespace augmentd {

v1::Device ToProto(const DeviceInfo& device) {
  v1::Device out;
  out.set_kind(device.kind == DeviceKind::kCuda ? v1::DEVICE_KIND_CUDA : v1::DEVICE_KIND_CPU);
  out.set_index(device.index);
  out.set_name(device.name);
  out.set_model(device.model);
  out.set_uuid(device.uuid);
  out.set_total_memory_bytes(device.total_memory_bytes);
  out.set_free_memory_bytes(device.free_memory_bytes);
  return out;
}

v1::ServerLimits ToProto(const ServerLimitsOptions& limits) {
  v1::ServerLimits out;
  out.set_max_sessions(limits.max_sessions);
  out.set_max_request_bytes(limits.max_request_bytes);
  out.set_max_response_bytes(limits.max_response_bytes);
  out.set_max_batch_size(limits.max_batch_size);
  out.set_max_prefetch_depth(limits.max_prefetch_depth);
  out.set_max_session_memory_bytes(limits.max_session_memory_bytes);
  out.set_max_streams_per_session(limits.max_streams_per_session);
  out.set_client_shared_memory_allowed(limits.allow_client_shared_memory);
  out.set_device_memory_budget_bytes(limits.device_memory_budget_bytes);
  out.set_max_inflight_batches_per_session(limits.max_inflight_batches_per_session);
  out.set_max_inflight_bytes_per_session(limits.max_inflight_bytes_per_session);
  return out;
}

absl::StatusOr<TrainerConfig> FromProto(const v1::TrainerConfig& t) {
  TrainerConfig c;
  const int dims = t.patch_size_size();
  if (dims != 2 && dims != 3) {
    return absl::InvalidArgumentError(absl::StrCat("trainer.patch_size: need 2 or 3 entries, got ", dims));
  }
  for (int64_t p : t.patch_size()) {
    if (p <= 0) return absl::InvalidArgumentError(absl::StrCat("trainer.patch_size: entries must be > 0, got ", p));
    c.patch_size.push_back(p);
  }
  if (t.has_rotation()) {
    if (!(t.rotation().min() <= t.rotation().max())) {
      return absl::InvalidArgumentError("trainer.rotation: min must not exceed max");
    }
    c.rotation_for_da = std::make_pair(t.rotation().min(), t.rotation().max());
  }
  if (t.has_mirror_axes()) {
    std::vector<int64_t> axes;
    for (int32_t a : t.mirror_axes().axes()) {
      if (a < 0 || a >= dims) {
        return absl::InvalidArgumentError(absl::StrCat("trainer.mirror_axes: axis ", a, " outside 0..", dims - 1));
      }
      axes.push_back(a);
    }
    c.mirror_axes = std::move(axes);
  }
  if (t.has_do_dummy_2d_data_aug()) c.do_dummy_2d_data_aug = t.do_dummy_2d_data_aug();
  if (t.deep_supervision_scales_size() > 0) {
    std::vector<std::vector<double>> scales;
    for (const v1::Scale& s : t.deep_supervision_scales()) {
      if (s.factors_size() != dims) {
        return absl::InvalidArgumentError(absl::StrCat("trainer.deep_supervision_scales: each scale needs ", dims,
                                                       " factors, got ", s.factors_size()));
      }
      for (double f : s.factors()) {
        if (!(f > 0 && f <= 1)) {
          return absl::InvalidArgumentError(
              absl::StrCat("trainer.deep_supervision_scales: factors must be in (0, 1], got ", f));
        }
      }
      scales.emplace_back(s.factors().begin(), s.factors().end());
    }
    c.deep_supervision_scales = std::move(scales);
  }
  if (t.regions_size() > 0) {
    std::vector<std::vector<int64_t>> regions;
    for (const v1::Region& r : t.regions()) {
      if (r.labels_size() == 0) return absl::InvalidArgumentError("trainer.regions: a region needs at least one label");
      regions.emplace_back(r.labels().begin(), r.labels().end());
    }
    c.regions = std::move(regions);
  }
  if (t.has_ignore_label()) c.ignore_label = t.ignore_label();
  c.num_input_channels = t.num_input_channels() == 0 ? 1 : t.num_input_channels();
  if (t.use_mask_for_norm_size() > 0 && t.use_mask_for_norm_size() != c.num_input_channels) {
    return absl::InvalidArgumentError(absl::StrCat("trainer.use_mask_for_norm: need one entry per input channel (",
                                                   c.num_input_channels, "), got ", t.use_mask_for_norm_size()));
  }
  c.use_mask_for_norm.assign(t.use_mask_for_norm().begin(), t.use_mask_for_norm().end());
  if (t.num_segmentation_channels() > 1 || t.is_cascaded() || t.foreground_labels_size() > 0) {
    return absl::UnimplementedError("trainer.is_cascaded: cascade trainers are not supported yet");
  }
  if (t.initial_patch_size_size() > 0) {
    return absl::UnimplementedError(
        "trainer.initial_patch_size: with a preset the server derives it (nnU-Net's rule); an explicit one goes "
        "with an explicit transform list in dataset mode");
  }
  return c;
}

std::string TransformName(v1::TransformKind kind) {
  if (kind == v1::TRANSFORM_KIND_UNSPECIFIED || !v1::TransformKind_IsValid(kind)) return "";
  return absl::AsciiStrToLower(v1::TransformKind_Name(kind));
}

absl::StatusOr<v1::TransformKind> TransformKindFromName(std::string_view name) {
  v1::TransformKind kind = v1::TRANSFORM_KIND_UNSPECIFIED;
  const std::string upper = absl::AsciiStrToUpper(std::string(name));
  if (upper.empty() || upper == "TRANSFORM_KIND_UNSPECIFIED" || !v1::TransformKind_Parse(upper, &kind)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown transform '", std::string(name), "'"));
  }
  return kind;
}

std::string PresetName(v1::Preset preset) {
  if (preset == v1::PRESET_UNSPECIFIED || !v1::Preset_IsValid(preset)) return "";
  std::string name = absl::AsciiStrToLower(v1::Preset_Name(preset));
  return name.substr(std::string("preset_").size());
}

std::vector<v1::Preset> EnginePresets() {
  // augment/pipeline.h: PresetPipeline() knows "nnunet_default", "nnunet_da5" and "nnunet_validation".
  return {v1::PRESET_NNUNET_DEFAULT, v1::PRESET_NNUNET_DA5, v1::PRESET_NNUNET_VALIDATION};
}

std::vector<std::string> EngineBgv2Versions() { return SupportedBgv2Versions(); }

std::vector<std::string> EngineTransformNames() { return RegisteredTransformNames(); }

std::vector<std::string> EngineCudaTransformNames() {
  std::vector<std::string> names;
  for (const TransformEntry& e : RegisteredTransforms())
    if (HasCudaImplementation(e.kind)) names.emplace_back(e.name);
  return names;
}

std::vector<v1::TransformSupport> TransformSupportList(const std::vector<std::string>& cpu_names,
                                                       const std::vector<std::string>& cuda_names) {
  auto contains = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  std::vector<v1::TransformSupport> out;
  const google::protobuf::EnumDescriptor* kinds = v1::TransformKind_descriptor();
  for (int i = 0; i < kinds->value_count(); ++i) {
    const auto kind = static_cast<v1::TransformKind>(kinds->value(i)->number());
    if (kind == v1::TRANSFORM_KIND_UNSPECIFIED) continue;
    v1::TransformSupport support;
    support.set_kind(kind);
    support.set_name(TransformName(kind));
    support.set_cpu(contains(cpu_names, support.name()));
    support.set_cuda(contains(cuda_names, support.name()));
    if (absl::StatusOr<const TransformEntry*> e = FindTransform(support.name()); e.ok() && (*e)->schema != nullptr) {
      for (const FieldDoc& f : (*e)->schema().Fields()) {
        v1::TransformField* out_field = support.add_fields();
        out_field->set_name(f.name);
        out_field->set_type(f.type);
        out_field->set_default_json(f.required ? "" : f.default_value.dump());
        out_field->set_range(f.range);
        out_field->set_doc(f.doc);
        out_field->set_required(f.required);
      }
    }
    out.push_back(std::move(support));
  }
  return out;
}

}  // namespace augmentd

namespace augmentd {

absl::StatusOr<DType> DTypeFromProto(v1::DType dtype, const std::string& field) {
  switch (dtype) {
    case v1::DTYPE_FLOAT32: return DType::kFloat32;
    case v1::DTYPE_FLOAT16: return DType::kFloat16;
    case v1::DTYPE_BFLOAT16: return DType::kBFloat16;
    case v1::DTYPE_INT8: return DType::kInt8;
    case v1::DTYPE_INT16: return DType::kInt16;
    case v1::DTYPE_BOOL: return DType::kBool;
    case v1::DTYPE_UNSPECIFIED:
      return absl::InvalidArgumentError(absl::StrCat(field, ": dtype is required"));
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          field, ": dtype ", v1::DType_IsValid(dtype) ? v1::DType_Name(dtype) : absl::StrCat(static_cast<int>(dtype)),
          " is not supported (images: FLOAT32/FLOAT16/BFLOAT16, labels: INT8/INT16/BOOL)"));
  }
}

v1::DType ToProto(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return v1::DTYPE_FLOAT32;
    case DType::kFloat16: return v1::DTYPE_FLOAT16;
    case DType::kBFloat16: return v1::DTYPE_BFLOAT16;
    case DType::kInt8: return v1::DTYPE_INT8;
    case DType::kInt16: return v1::DTYPE_INT16;
    case DType::kBool: return v1::DTYPE_BOOL;
  }
  return v1::DTYPE_UNSPECIFIED;
}

absl::StatusOr<TensorView> TensorLayoutFromProto(const v1::Tensor& tensor, const std::string& field,
                                                 uint64_t* byte_size) {
  absl::StatusOr<DType> dtype = DTypeFromProto(tensor.dtype(), absl::StrCat(field, ".dtype"));
  if (!dtype.ok()) return dtype.status();
  TensorView view;
  view.dtype = *dtype;
  uint64_t elements = 1;
  for (int64_t d : tensor.shape()) {
    if (d < 0 || (d > 0 && elements > (uint64_t{1} << 40) / static_cast<uint64_t>(d))) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".shape: dimension ", d, " is out of range"));
    }
    elements *= static_cast<uint64_t>(d);
    view.shape.push_back(d);
  }
  *byte_size = elements * DTypeSize(*dtype);
  return view;
}

absl::StatusOr<TensorView> TensorViewFromProto(const v1::Tensor& tensor, const std::string& field) {
  uint64_t expected = 0;
  absl::StatusOr<TensorView> view = TensorLayoutFromProto(tensor, field, &expected);
  if (!view.ok()) return view.status();
  switch (tensor.storage_case()) {
    case v1::Tensor::kInlineData: {
      if (tensor.inline_data().size() != expected) {
        return absl::InvalidArgumentError(absl::StrCat(field, ".inline_data: ", tensor.inline_data().size(),
                                                       " bytes, but shape ", ShapeString(view->shape), " of ",
                                                       std::string(DTypeName(view->dtype)), " needs ", expected));
      }
      view->data = tensor.inline_data().data();
      return view;
    }
    case v1::Tensor::kHostShm:
    case v1::Tensor::kCudaIpc:
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": a shared-memory / CUDA IPC reference needs a session with registered regions"));
    default:
      return absl::InvalidArgumentError(absl::StrCat(field, ": no data (set inline_data, host_shm or cuda_ipc)"));
  }
}

namespace {

template <typename To, typename From>
void ConvertLabels(const From* in, int64_t n, To* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<To>(in[i]);
}

bool IsLabelDType(DType t) { return t == DType::kInt8 || t == DType::kInt16 || t == DType::kBool; }

}  // namespace

absl::Status WriteConverted(const HostTensor& tensor, const std::string& name, DType out_dtype, void* dst) {
  if (out_dtype == tensor.dtype()) {
    std::memcpy(dst, tensor.raw_data(), tensor.nbytes());
    return absl::OkStatus();
  }
  if (!IsLabelDType(out_dtype) || !IsLabelDType(tensor.dtype())) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": cannot convert ", std::string(DTypeName(tensor.dtype())), " to ",
                                                   std::string(DTypeName(out_dtype))));
  }
  const int64_t n = tensor.numel();
  auto convert_from = [&](auto* src) {
    switch (out_dtype) {
      case DType::kInt8: ConvertLabels(src, n, static_cast<int8_t*>(dst)); break;
      case DType::kInt16: ConvertLabels(src, n, static_cast<int16_t*>(dst)); break;
      default: {  // bool: one byte, 0 / 1
        auto* d = static_cast<uint8_t*>(dst);
        for (int64_t i = 0; i < n; ++i) d[i] = src[i] != 0 ? 1 : 0;
      }
    }
  };
  switch (tensor.dtype()) {
    case DType::kInt8: convert_from(tensor.data<int8_t>()); break;
    case DType::kInt16: convert_from(tensor.data<int16_t>()); break;
    default: convert_from(tensor.data<uint8_t>()); break;
  }
  return absl::OkStatus();
}

absl::Status ToProto(const HostTensor& tensor, const std::string& name, DType out_dtype, v1::Tensor* out) {
  out->set_name(std::string(name));
  out->set_dtype(ToProto(out_dtype));
  for (int64_t d : tensor.shape()) out->add_shape(d);
  std::string* bytes = out->mutable_inline_data();
  bytes->resize(static_cast<size_t>(tensor.numel()) * DTypeSize(out_dtype));
  return WriteConverted(tensor, name, out_dtype, bytes->data());
}

absl::Status BatchResultToProto(const BatchResult& result, std::optional<DType> label_dtype, v1::Batch* batch) {
  if (absl::Status s = ToProto(result.image, "image", result.image.dtype(), batch->mutable_image()); !s.ok()) {
    return s;
  }
  for (size_t k = 0; k < result.seg.size(); ++k) {
    const HostTensor& level = result.seg[k];
    if (absl::Status s = ToProto(level, absl::StrCat("target_", k), label_dtype.value_or(level.dtype()),
                                 batch->add_targets());
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace augmentd

namespace augmentd {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

nlohmann::json MessageToEngineJson(const Message& m);

nlohmann::json RangePair(const Message& m) {
  const google::protobuf::Descriptor* d = m.GetDescriptor();
  const Reflection* r = m.GetReflection();
  const FieldDescriptor* lo = d->FindFieldByName("min");
  const FieldDescriptor* hi = d->FindFieldByName("max");
  if (lo->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE) {
    return nlohmann::json::array({r->GetDouble(m, lo), r->GetDouble(m, hi)});
  }
  return nlohmann::json::array({r->GetInt64(m, lo), r->GetInt64(m, hi)});
}

nlohmann::json FieldValue(const Message& m, const FieldDescriptor* f, int index) {
  const Reflection* r = m.GetReflection();
  const bool rep = f->is_repeated();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: return rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f);
    case FieldDescriptor::CPPTYPE_INT64: return rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f);
    case FieldDescriptor::CPPTYPE_UINT32: return rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f);
    case FieldDescriptor::CPPTYPE_UINT64: return rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f);
    case FieldDescriptor::CPPTYPE_DOUBLE: return rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f);
    case FieldDescriptor::CPPTYPE_FLOAT: return rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f);
    case FieldDescriptor::CPPTYPE_BOOL: return rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f);
    case FieldDescriptor::CPPTYPE_STRING: return rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f);
    case FieldDescriptor::CPPTYPE_ENUM: {
      const google::protobuf::EnumValueDescriptor* v = rep ? r->GetRepeatedEnum(m, f, index) : r->GetEnum(m, f);
      // "INTERPOLATION_MODE_NEAREST" → "nearest": drop the prefix of the enum's UNSPECIFIED value.
      std::string prefix = v->type()->value(0)->name();
      prefix.resize(prefix.size() - std::string("UNSPECIFIED").size());
      std::string name = v->name();
      if (absl::StartsWith(name, prefix)) name = name.substr(prefix.size());
      return absl::AsciiStrToLower(name);
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return MessageToEngineJson(rep ? r->GetRepeatedMessage(m, f, index) : r->GetMessage(m, f));
  }
  return nullptr;
}

nlohmann::json MessageToEngineJson(const Message& m) {
  const std::string type = m.GetDescriptor()->name();
  const Reflection* r = m.GetReflection();
  if (type == "Range" || type == "IntRange") return RangePair(m);
  if (type == "Scale" || type == "Region" || type == "AxisList") {
    const FieldDescriptor* f = m.GetDescriptor()->field(0);
    nlohmann::json out = nlohmann::json::array();
    for (int i = 0; i < r->FieldSize(m, f); ++i) out.push_back(FieldValue(m, f, i));
    return out;
  }
  if (type == "RandomScalar") {
    std::vector<const FieldDescriptor*> set;
    r->ListFields(m, &set);
    if (set.empty()) return nullptr;
    const FieldDescriptor* f = set[0];
    if (f->name() == "constant") return r->GetDouble(m, f);
    if (f->name() == "uniform") return RangePair(r->GetMessage(m, f));
    if (f->name() == "bg_contrast") return nlohmann::json{{"bg_contrast", RangePair(r->GetMessage(m, f))}};
    if (f->name() == "axis_size_log_uniform") {  // the engine's {"axis_size_log_uniform": [low, high]}
      const auto& a = static_cast<const v1::AxisSizeLogUniform&>(r->GetMessage(m, f));
      return nlohmann::json{{"axis_size_log_uniform", nlohmann::json::array({a.low_divisor(), a.high_divisor()})}};
    }
    if (f->name() == "mixture") {  // the engine's {"mixture": [{"weight": w, "range": [lo, hi]}, ...]}
      nlohmann::json parts = nlohmann::json::array();
      for (const v1::WeightedRange& c : static_cast<const v1::RangeMixture&>(r->GetMessage(m, f)).components()) {
        parts.push_back({{"weight", c.weight()}, {"range", RangePair(c.range())}});
      }
      return nlohmann::json{{"mixture", std::move(parts)}};
    }
    return nlohmann::json{{f->name(), MessageToEngineJson(r->GetMessage(m, f))}};  // the engine names what it lacks
  }
  if (type == "RectangleValue") {  // the engine's number | [lo, hi] | "mean"
    const auto& v = static_cast<const v1::RectangleValue&>(m);
    if (v.has_uniform()) return RangePair(v.uniform());
    if (v.has_rectangle_mean()) return v.rectangle_mean() ? nlohmann::json("mean") : nlohmann::json(nullptr);
    if (v.has_constant()) return v.constant();
    return nullptr;
  }
  // Proto3 semantics: a plain scalar field that is not set *is* its zero value, so it is passed on; fields with
  // presence (messages, `optional`), empty lists and UNSPECIFIED enums are left out (the engine's defaults).
  nlohmann::json out = nlohmann::json::object();
  const google::protobuf::Descriptor* d = m.GetDescriptor();
  for (int k = 0; k < d->field_count(); ++k) {
    const FieldDescriptor* f = d->field(k);
    if (f->is_repeated()) {
      if (r->FieldSize(m, f) == 0) continue;
      nlohmann::json list = nlohmann::json::array();
      for (int i = 0; i < r->FieldSize(m, f); ++i) list.push_back(FieldValue(m, f, i));
      out[f->name()] = std::move(list);
      continue;
    }
    if (f->has_presence() && !r->HasField(m, f)) continue;
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_ENUM && r->GetEnumValue(m, f) == 0) continue;
    nlohmann::json v = FieldValue(m, f, 0);
    if (!v.is_null()) out[f->name()] = std::move(v);
  }
  return out;
}

}  // namespace

absl::StatusOr<PipelineSpec> PipelineFromProto(const v1::PipelineSpec& spec) {
  PipelineSpec out;
  out.name = "custom";
  const std::vector<std::string> engine = EngineTransformNames();
  for (int i = 0; i < spec.transforms_size(); ++i) {
    const v1::TransformSpec& t = spec.transforms(i);
    const std::string where = absl::StrCat("pipeline.transforms[", i, "]");
    const std::string name = TransformName(t.kind());
    if (name.empty()) return absl::InvalidArgumentError(absl::StrCat(where, ".kind: required"));
    if (std::find(engine.begin(), engine.end(), name) == engine.end()) {
      return absl::UnimplementedError(absl::StrCat(where, ".kind: ", name, " has no engine implementation yet"));
    }
    nlohmann::json config = nlohmann::json::object();
    const google::protobuf::OneofDescriptor* oneof = t.GetDescriptor()->FindOneofByName("params");
    if (const FieldDescriptor* f = t.GetReflection()->GetOneofFieldDescriptor(t, oneof); f != nullptr) {
      if (f->name() != name) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ".params: ", f->name(), " parameters given for a ", name, " transform"));
      }
      config = MessageToEngineJson(t.GetReflection()->GetMessage(t, f));
    }
    if (name == "spatial" && !spec.bgv2_version().empty() && !config.contains("bgv2_version")) {
      config["bgv2_version"] = spec.bgv2_version();  // the pipeline's release, unless the entry names its own
    }
    nlohmann::json j = {{"kind", name}, {"config", config}};
    if (t.has_apply_probability()) j["apply_probability"] = t.apply_probability();
    if (t.one_of_group() != 0) j["one_of_group"] = t.one_of_group();  // bgv2 OneOfTransform (engine-checked)
    if (t.same_on_batch_decision_only() && !t.same_on_batch()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".same_on_batch_decision_only: needs same_on_batch (it shares only the decision)"));
    }
    if (t.same_on_batch()) j["same_on_batch"] = t.same_on_batch_decision_only() ? nlohmann::json("decision")
                                                                                : nlohmann::json(true);
    if (t.has_region_mode()) {  // AugLab's in_seg / out_seg (region_mode.h)
      j["region_mode"] = {{"in_seg", t.region_mode().in_seg()}, {"out_seg", t.region_mode().out_seg()},
                          {"mix_in_out", t.region_mode().mix_in_out()}};
      if (t.region_mode().per_sample_coins()) j["region_mode"]["per_sample_coins"] = true;
    }
    if (t.channels_size() > 0) j["channels"] = std::vector<int32_t>(t.channels().begin(), t.channels().end());
    absl::StatusOr<TransformSpec> ts = TransformSpec::FromJson(j);
    if (!ts.ok()) {
      return absl::Status(ts.status().code(), absl::StrCat(where, " (", name, "): ", ts.status().message()));
    }
    out.transforms.push_back(*std::move(ts));
  }
  if (absl::Status st = out.ResolveOneOfGroups(); !st.ok()) return st;  // one_of_index / one_of_size per member
  return out;
}

}  // namespace augmentd
