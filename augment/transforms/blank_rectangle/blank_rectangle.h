// augment/transforms/blank_rectangle/blank_rectangle.h — bgv2 `BlankRectangleTransform` (DA5: 1–4 boxes per channel filled with
// the box's own mean).
//
// Per channel c (in order): apply_channel[c] = U < p_per_channel; n[c] = randint(num_rectangles) for EVERY channel
// (upper bound exclusive, numpy); then per applied channel and rectangle: size per axis = randint(lo_d, hi_d)
// (force_square: one randint of axis 0's range for all axes), lb_d = randint(0, S_d − size_d + 1), ub = lb + size.
// Apply, rectangles in order: value = rectangle_value (a constant; "mean" = torch.mean of the box's CURRENT
// content, so overlaps see earlier fills; [lo, hi] = U(lo, hi), which bgv2 draws at apply time — augmentd draws
// it at the end of Draw, same order, carried in the extra params key "values"), then box ← value.
//
//   BlankRectangleConfig c;
//   c.rectangle_size = {{12, 42}, {12, 42}, {12, 42}};   // nnU-Net DA5 for a 128³ patch: [max(1,p//10), p//3]
//   c.value_kind = BlankRectangleConfig::Value::kMean;
//   c.num_rectangles = {1, 5};
//   c.p_per_channel = 0.5;
//   auto t = BlankRectangleTransform::Create(c);
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct BlankRectangleConfig {
  // bgv2's three forms: [[lo, hi) per axis] (drawn), a tuple of ints (fixed per axis) or an int (all axes).
  std::vector<std::array<int64_t, 2>> rectangle_size;  // drawn form (used when fixed_size is empty)
  std::vector<int64_t> fixed_size;                     // fixed forms; one entry + size_is_scalar for an int
  bool size_is_scalar = false;
  enum class Value { kConstant, kMean, kUniform };
  Value value_kind = Value::kMean;
  double value = 0;                    // kConstant
  std::array<double, 2> value_range{};  // kUniform
  std::array<int64_t, 2> num_rectangles{1, 5};  // randint [lo, hi); num_fixed: always num_rectangles[0]
  bool num_fixed = false;
  bool force_square = false;
  double p_per_channel = 1;
};

// bgv2: {"apply_channel": [bool]*C, "rectangles": [[[lb...], [ub...]] per rectangle] per channel}
// (+ augmentd "values": [[v per rectangle] per channel] for a [lo, hi) rectangle_value).
struct BlankRectangleParams : TransformParams {
  struct Box {
    std::vector<int64_t> lb, ub;
  };
  std::vector<bool> apply_channel;
  std::vector<std::vector<Box>> rectangles;  // per channel
  std::vector<std::vector<double>> values;   // per channel, per rectangle (kUniform only)
};

class BlankRectangleTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const BlankRectangleConfig& config);
  // rectangle_size: int | [int per axis] | [[lo, hi] per axis]; rectangle_value: number | [lo, hi] | "mean";
  // num_rectangles: int | [lo, hi]; force_square; p_per_channel.
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (BlankRectangleConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<BlankRectangleConfig>& Schema();
  const BlankRectangleConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kBlankRectangle; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit BlankRectangleTransform(BlankRectangleConfig c) : config_(std::move(c)) {}
  BlankRectangleConfig config_;
};

}  // namespace augmentd
