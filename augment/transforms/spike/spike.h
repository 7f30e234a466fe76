// augment/transforms/spike/spike.h — TorchIO `RandomSpike` / `Spike` (herringbone artefact: k-space spikes).
//
// Draw (RandomSpike.get_params, in this order): num_spikes = integer U{lo..hi} (`num_spikes` d gives 0..d),
// intensity = U(lo, hi) (d gives (−d, d): TorchIO sets no lower constraint), then num_spikes × 3 positions U[0, 1).
// Apply (Spike.add_artifact, per channel; unchanged when intensity = 0 or there are no spikes): in the fftshifted
// spectrum, for each spike in order, index = floor(position · shape) and X[index] += max|X| · intensity, where
// max|X| is taken over the spectrum as modified by the previous spikes; image ← float32(real(ifftn(...))).
// Injected as {"spikes_positions": [[p0, p1, p2], ...], "intensity": r} (positions in [0, 1)).
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct SpikeConfig {
  std::array<double, 2> num_spikes{1, 1};
  std::array<double, 2> intensity{1, 3};
};

struct SpikeParams : TransformParams {
  std::vector<std::array<double, 3>> positions;
  double intensity = 0;
};

// Unshifted flat spectrum index of each spike for a (d0, d1, d2) grid.
std::vector<int64_t> SpikeSpectrumIndices(const SpikeParams& p, const std::array<int64_t, 3>& shape);

class SpikeTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const SpikeConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (SpikeConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<SpikeConfig>& Schema();
  const SpikeConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kSpike; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit SpikeTransform(SpikeConfig c) : config_(c) {}
  SpikeConfig config_;
};

}  // namespace augmentd
