// augment/transforms/median_filter/median_filter.h — bgv2 `MedianFilterTransform` (scipy.ndimage.median_filter per channel).
//
// Per applied channel with size k: out[i] = the rank-⌊n/2⌋ element (0-based; the upper median when n = k^ndim is
// even) of the cubic window i_d − ⌊k/2⌋ … i_d − ⌊k/2⌋ + k − 1 on every axis (scipy's origin 0: for even k the
// window reaches one voxel further back than forward), borders extended with scipy's 'reflect' mode
// (d c b a | a b c d | d c b a). Selection is exact, so the result is bit-identical to scipy.
// Draw order (numpy): use_same = U < p_same_for_each_channel (always drawn); sizes: an int config is fixed, else one
// randint(lo, hi) (hi exclusive) if use_same, else one per channel; then C apply coins (U < p_per_channel).
//
//   auto t = MedianFilterTransform::Create({/*filter_size=*/{2, 8}, /*fixed=*/false, /*p_same=*/0, 0.5});
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct MedianFilterConfig {
  std::array<int64_t, 2> filter_size{2, 8};  // randint [lo, hi); fixed_size: always filter_size[0]
  bool fixed_size = false;
  double p_same_for_each_channel = 0;
  double p_per_channel = 1;
};

// bgv2: {"filter_sizes": [C ints], "apply_channel": [C bools]}.
struct MedianFilterParams : TransformParams {
  std::vector<int64_t> filter_sizes;
  std::vector<bool> apply_channel;
};

class MedianFilterTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const MedianFilterConfig& config);
  // filter_size: int | [lo, hi]; p_same_for_each_channel; p_per_channel.
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (MedianFilterConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<MedianFilterConfig>& Schema();
  const MedianFilterConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kMedianFilter; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit MedianFilterTransform(MedianFilterConfig c) : config_(c) {}
  MedianFilterConfig config_;
};

}  // namespace augmentd
