// augment/transforms/mirror/mirror.h — bgv2 `MirrorTransform`: each allowed axis flipped with p = 0.5 (image and seg).
//
//   auto t = MirrorTransform::Create({/*allowed_axes=*/{0, 1, 2}});
#pragma once

#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct MirrorConfig {
  std::vector<int64_t> allowed_axes = {0, 1, 2};
};

// bgv2: {"axes": [flipped spatial axes]}.
struct MirrorParams : TransformParams {
  std::vector<int64_t> axes;
};

class MirrorTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const MirrorConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (MirrorConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<MirrorConfig>& Schema();
  const MirrorConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kMirror; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit MirrorTransform(MirrorConfig c) : config_(std::move(c)) {}
  MirrorConfig config_;
};

}  // namespace augmentd
