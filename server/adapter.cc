#include "server/adapter.h"

#include <algorithm>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "augment/registry.h"

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
        "trainer.initial_patch_size: the server derives it (nnU-Net's rule); an explicit one is not supported yet");
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
  // augment/pipeline.h: PresetPipeline() knows "nnunet_default" and "nnunet_validation".
  return {v1::PRESET_NNUNET_DEFAULT, v1::PRESET_NNUNET_VALIDATION};
}

std::vector<std::string> EngineTransformNames() { return RegisteredTransformNames(); }

std::vector<std::string> EngineCudaTransformNames() { return {}; }

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
    out.push_back(std::move(support));
  }
  return out;
}

}  // namespace augmentd
