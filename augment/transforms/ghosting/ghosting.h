// augment/transforms/ghosting/ghosting.h — TorchIO `RandomGhosting` / `Ghosting` (periodic k-space plane attenuation).
//
// Draw (RandomGhosting.get_params, in this order): num_ghosts = integer U{lo..hi} (`num_ghosts` d gives 0..d),
// axis = uniform choice from `axes` (axis 2 dropped for a 2D sample), intensity = U(lo, hi) (d gives (0, d)),
// restore = U(lo, hi) when `restore` is not null (d gives (0, d)) else null. One draw per sample; all channels.
// Apply (Ghosting.add_artifact, per channel; unchanged when num_ghosts = 0 or intensity = 0): in the fftshifted
// spectrum every num_ghosts-th plane along `axis` (shifted indices 0, g, 2g, ...) is multiplied by 1 − intensity,
// except the restored slab [mid, mid+1) (restore null) or [mid − r//2, mid + r//2) with r = round_half_even(restore
// · n), mid = n // 2, which keeps its original values; image ← float32(real(ifftn(...))).
// Injected as {"num_ghosts": g, "axis": a, "intensity": s, "restore": r | null}.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct GhostingConfig {
  std::array<double, 2> num_ghosts{4, 10};
  std::vector<int> axes{0, 1, 2};
  std::array<double, 2> intensity{0.5, 1.0};
  std::optional<std::array<double, 2>> restore;  // null: only the central plane is restored
};

struct GhostingParams : TransformParams {
  int64_t num_ghosts = 0;
  int axis = 0;
  double intensity = 0;
  std::optional<double> restore;
};

// Per-plane factor along the ghost axis (unshifted index u of n): 1 − intensity or 1 (TorchIO's planes/restore).
std::vector<float> GhostingPlaneFactors(const GhostingParams& p, int64_t n);

class GhostingTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const GhostingConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (GhostingConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<GhostingConfig>& Schema();
  const GhostingConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kGhosting; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit GhostingTransform(GhostingConfig c) : config_(std::move(c)) {}
  GhostingConfig config_;
};

}  // namespace augmentd
