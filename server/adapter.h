// server/adapter.h — the one place where proto (augmentd.v1) and engine (augment/) types meet.
// Everything that converts between the wire contract and the engine's plain structs lives here, so the
// engine never sees protobuf and the handlers never see engine internals.
//
//   v1::Device d = ToProto(augmentd::ResolveDevice("cpu").value());
//   std::string name = TransformName(v1::GAUSSIAN_NOISE);   // "gaussian_noise", the engine registry key
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/device.h"
#include "augment/engine.h"
#include "augment/pipeline.h"
#include "augment/types.h"
#include "augmentd/v1/batch.pb.h"
#include "augmentd/v1/pipeline.pb.h"
#include "augmentd/v1/server_info.pb.h"
#include "augmentd/v1/tensor.pb.h"
#include "server/options.h"

namespace augmentd {

// (v1 names ::augmentd::v1 here already; an alias of the same name is an error for clang.)

// Device description for GetServerInfo / OpenSessionResponse.
v1::Device ToProto(const DeviceInfo& device);

// The limits the server enforces, as reported to clients.
v1::ServerLimits ToProto(const ServerLimitsOptions& limits);

// The trainer configuration of a preset, checked: INVALID_ARGUMENT naming the field ("trainer.patch_size:
// ...") for values the engine cannot use, UNIMPLEMENTED for parts of the contract the engine does not
// support yet (cascade, an explicit initial_patch_size).
absl::StatusOr<TrainerConfig> FromProto(const v1::TrainerConfig& trainer);

// The engine registry key of a transform kind: the lower-case enum name ("spatial", "gaussian_noise").
// Empty for TRANSFORM_KIND_UNSPECIFIED and unknown values.
std::string TransformName(v1::TransformKind kind);

// The inverse of TransformName; INVALID_ARGUMENT for names that are not a transform kind.
absl::StatusOr<v1::TransformKind> TransformKindFromName(std::string_view name);

// Names of the transforms the engine implements on the CPU (its registry, augment/registry.h).
std::vector<std::string> EngineTransformNames();

// Names of the transforms this build's CUDA engine implements: the registry's CUDA backends (augment/registry.h
// HasCudaImplementation; empty in builds without CUDA).
std::vector<std::string> EngineCudaTransformNames();

// The engine preset name of a preset: the lower-case enum name without "PRESET_" ("nnunet_default");
// empty for PRESET_UNSPECIFIED and unknown values.
std::string PresetName(v1::Preset preset);

// The presets the engine can expand (augment/pipeline.h PresetPipeline). A fixed list until the engine
// offers one to ask.
std::vector<v1::Preset> EnginePresets();
// The batchgeneratorsv2 releases whose SpatialTransform the engine follows (PipelineSpec.bgv2_version).
std::vector<std::string> EngineBgv2Versions();

// One entry per transform kind of the contract (UNSPECIFIED excluded), in enum order, marked with what the
// engine supports: `cpu` if the name is in `cpu_names`, `cuda` if it is in `cuda_names`.
std::vector<v1::TransformSupport> TransformSupportList(const std::vector<std::string>& cpu_names,
                                                       const std::vector<std::string>& cuda_names);

// An explicit transform list (PipelineSpec.transforms, no preset) as an engine pipeline: each entry's typed
// parameters become the engine's bgv2-style JSON configuration (RandomScalar → number / [lo, hi] /
// {"bg_contrast": [lo, hi]}, Range → [min, max], enums → lower-case names), validated by the engine.
// INVALID_ARGUMENT naming "pipeline.transforms[i]..." for a missing kind, params of another kind or values the
// engine refuses; UNIMPLEMENTED for one_of_group (OneOfTransform) and kinds the engine does not implement.
// input_patch_size stays empty (the caller decides what to crop).
absl::StatusOr<PipelineSpec> PipelineFromProto(const v1::PipelineSpec& spec);

// Element types. FromProto: INVALID_ARGUMENT naming `field` for UNSPECIFIED and types the engine has no
// counterpart for (int32, int64, uint8).
absl::StatusOr<DType> DTypeFromProto(v1::DType dtype, const std::string& field);
v1::DType ToProto(DType dtype);

// The dtype and shape of a request tensor (data left null) and its byte size prod(shape) * sizeof(dtype):
// INVALID_ARGUMENT naming `field` for a missing/unsupported dtype or a negative / huge dimension.
absl::StatusOr<TensorView> TensorLayoutFromProto(const v1::Tensor& tensor, const std::string& field,
                                                 uint64_t* byte_size);

// A read-only view of an inline request tensor (`field` names it in errors: "image", "segmentation"):
// TensorLayoutFromProto's errors, INVALID_ARGUMENT for inline_data whose size is not prod(shape) *
// sizeof(dtype) or for shared-memory / CUDA IPC references (server/delivery.h ResolveInputTensor resolves those
// against a session's registered regions). The view points into `tensor`, which must outlive it.
absl::StatusOr<TensorView> TensorViewFromProto(const v1::Tensor& tensor, const std::string& field);

// Writes `tensor` converted to `out_dtype` (labels: int16/int8/bool into int8/int16/bool; otherwise the same
// dtype) into `dst`, which holds numel * DTypeSize(out_dtype) bytes. INVALID_ARGUMENT naming `name` otherwise.
absl::Status WriteConverted(const HostTensor& tensor, const std::string& name, DType out_dtype, void* dst);

// Copies an engine tensor into an inline proto tensor. `out_dtype` converts labels (int16/bool → int8 /
// int16 / bool); images are produced by the engine in their final dtype. INVALID_ARGUMENT for a conversion
// that is not a label conversion.
absl::Status ToProto(const HostTensor& tensor, const std::string& name, DType out_dtype, v1::Tensor* out);

// The augmented image and label pyramid of an engine batch into `batch` (image, targets). `label_dtype`:
// the target dtype, or nullopt for the engine's own (int16, bool for regions).
absl::Status BatchResultToProto(const BatchResult& result, std::optional<DType> label_dtype, v1::Batch* batch);

}  // namespace augmentd
