// augment/registry.h — the table of transform kinds the engine implements: one definition per kind.
//
// ONE explicit list (no static registrars the linker could drop): augment/transforms/kinds.inc, one line per kind in
// enum order (name, capability flags, CUDA backend, 2D lift). It expands into
//   * augment/registry.cc  kEntries: name, CPU factory (FromJson: bgv2 constructor arguments as JSON, augment/capi.h
//                          lists them), capability flags and schema of each kind;
//   * augment/cuda/backends.cc  the CUDA backend of each kind (its chain stage factory Make<Camel>Stage and its 2D
//                          lift Lift2D<Camel>), compiled only in CUDA builds (CudaBackendOf answers nullptr otherwise).
// Everything that used to switch over the kind (names, label / layout checks, CUDA stage dispatch, 2D coverage,
// GetServerInfo's backends) looks the kind up here. Adding a kind: its folder, its proto message (+ enum value + oneof
// line) and its line in kinds.inc (augment/README.md "Adding a transform").
//
//   for (const TransformEntry& e : augmentd::RegisteredTransforms()) ...   // GetServerInfo: e.name, HasCuda(e.kind)
//   ASSIGN_OR_RETURN(auto t, augmentd::TransformFromJson("gamma", {{"gamma", {{"bg_contrast", {0.7, 1.5}}}}}));
//
// Thread-safety: all functions are safe to call concurrently (the table is immutable after first use).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/transform.h"
#include "nlohmann/json.hpp"

namespace augmentd {

// Capability flags of a kind (bit set).
enum TransformCap : uint32_t {
  kCapNone = 0,
  // Reads, writes or moves the labels (cannot follow downsample_seg_for_ds). Transform::UsesLabels may refine it
  // per configuration (AugLab's regions).
  kCapUsesLabels = 1u << 0,
  // Changes the output's layout (seg dtype / channel count or the label pyramid): cannot be skipped per sample
  // (PipelineSpec::CheckLayoutStable).
  kCapChangesOutputLayout = 1u << 1,
};

class TransformSchema;  // augment/schema.h

struct TransformEntry {
  std::string_view name;  // lower-case, e.g. "gaussian_blur"
  TransformKind kind;
  // Builds a transform from bgv2 constructor arguments; INVALID_ARGUMENT naming the field on bad values. Never null:
  // every kind has its CPU reference (registry_test walks the enum).
  absl::StatusOr<std::shared_ptr<const Transform>> (*from_json)(const nlohmann::json& config);
  uint32_t caps = kCapNone;  // TransformCap bits
  // The kind's configuration schema (augment/schema.h: every field's name, type, default, range and doc; the JSON
  // parsing behind from_json and GetServerInfo's field docs). nullptr only for the kinds registry_test lists as not
  // converted yet.
  const TransformSchema& (*schema)() = nullptr;
};

// The CUDA backend of a kind (augment/cuda/backend.h; a complete type only in CUDA builds).
struct CudaBackend;
// The CUDA backend registered for `kind` (augment/cuda/backends.cc), nullptr when the kind has none or the build has
// no CUDA (augment/cuda/engine_nocuda.cc). Safe to call concurrently.
const CudaBackend* CudaBackendOf(TransformKind kind);
// Whether `kind` runs on the CUDA engine of this build: a CUDA backend is registered and available (false in builds
// without CUDA, and for the k-space MRI stages in builds without cuFFT). Defined beside CudaBackendOf.
bool HasCudaImplementation(TransformKind kind);

// Lower-case names of every registered transform, in pipeline order:
// spatial, gaussian_noise, gaussian_blur, multiplicative_brightness, contrast, simulate_low_resolution, gamma,
// mirror, mask_image, remove_label, convert_segmentation_to_regions, downsample_seg_for_ds, then DA5's
// (blank_rectangle, brightness_additive, sharpening, median_filter, ...).
std::vector<std::string> RegisteredTransformNames();

// All entries (one per TransformKind).
const std::vector<TransformEntry>& RegisteredTransforms();

// Entry by name or kind; NOT_FOUND / INVALID_ARGUMENT ("transform.kind: unknown ...") when absent.
absl::StatusOr<const TransformEntry*> FindTransform(std::string_view name);
const TransformEntry& FindTransform(TransformKind kind);

// Parses a kind name.
absl::StatusOr<TransformKind> ParseTransformKind(std::string_view name);

// Builds a transform of kind `name` from its JSON configuration.
absl::StatusOr<std::shared_ptr<const Transform>> TransformFromJson(std::string_view name, const nlohmann::json& config);

}  // namespace augmentd
