// augment/transforms/rot90/rot90.h — bgv2 `Rot90Transform` (DA5: one torch.rot90 of image and seg on two equal axes).
//
// Draws: n = round(num_axis_combinations) (Python round; a [lo, hi] range is one U draw); then per combination
// k = np.random.choice(num_rot_per_combination) (one uniform pick) and an unordered pair of distinct
// allowed_axes (np.random.choice(size=2, replace=False), sorted). Apply, combinations in order:
// torch.rot90(x, k, dims=(a, b)) on image and segmentation (dims include the channel axis: spatial + 1).
// Rotations by an odd k of axes of different sizes would change the sample's shape: INVALID_ARGUMENT (nnU-Net only
// rotates equal-size axes).
//
//   Rot90Config c;   // DA5: 1 combination, k in {0, 1, 2, 3}, allowed_axes = the equal-size patch axes
//   c.allowed_axes = {0, 1, 2};
//   auto t = Rot90Transform::Create(c);
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "augment/random_scalar.h"
#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct Rot90Config {
  RandomScalar num_axis_combinations = RandomScalar::Constant(1);
  std::vector<int64_t> num_rot_per_combination = {1, 2, 3};  // bgv2 default; DA5 passes (0, 1, 2, 3)
  std::vector<int64_t> allowed_axes = {0, 1, 2};             // spatial axes; a set (sorted, unique)
};

// bgv2: {"num_rot_per_combination": [k...], "axis_combinations": [[a + 1, b + 1]...]} (dims incl. channel).
struct Rot90Params : TransformParams {
  std::vector<int64_t> num_rot_per_combination;
  std::vector<std::array<int64_t, 2>> axis_combinations;
};

class Rot90Transform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const Rot90Config& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (Rot90Config{}), range, doc (augment/schema.h).
  static const ConfigSchema<Rot90Config>& Schema();
  const Rot90Config& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kRot90; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit Rot90Transform(Rot90Config c) : config_(std::move(c)) {}
  Rot90Config config_;
};

}  // namespace augmentd
