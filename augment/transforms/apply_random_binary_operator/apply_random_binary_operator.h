// augment/transforms/apply_random_binary_operator/apply_random_binary_operator.h — bgv2
// `ApplyRandomBinaryOperatorTransform` (nnU-Net's cascade: perturbs the previous stage's one-hot channels).
//
// Draw (bgv2 get_parameters): shuffle channel_idx; one coin per channel (< p_per_label) in the shuffled order; per
// applied channel an operator chosen uniformly from any_of_these and a structuring-element radius r ~ strel_size.
// Apply, per applied channel a in that order: m = (x[a] != 0); m' = op(m, S(r)); every other channel of channel_idx
// is set to 0 where m' & ~m (voxels the operator added); x[a] = m' (0/1).
//   * S(r) is skimage's footprint exactly as bgv2 builds it: `disk(r)` for a 2D sample (grid np.arange(−r, r + 1),
//     so an asymmetric grid for a fractional r), `ball(r)` for 3D (np.mgrid[−r:r:(2r+1)j], int(2r+1) points, an
//     even size for some r), element in S iff Σ offset² ≤ r².
//   * dilation = bgv2's fft_conv(padding='same') > 0: a cross-correlation whose origin is element floor((k−1)/2) of
//     each axis, zeros outside the image; erosion = ¬dilation(¬m) (outside counts as foreground);
//     opening = dilation(erosion(m)); closing = erosion(dilation(m)).
// channel_idx entries may be negative (nnU-Net passes range(−K, 0)): they count from the last channel at apply time.
//
//   ApplyRandomBinaryOperatorConfig c{{-2, -1}, RandomScalar::Uniform(1, 8), /*p_per_label=*/0.5};
//   auto t = ApplyRandomBinaryOperatorTransform::Create(c);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "augment/random_scalar.h"
#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

enum class BinaryOperator : uint8_t { kDilation, kErosion, kClosing, kOpening };

struct ApplyRandomBinaryOperatorConfig {
  std::vector<int64_t> channel_idx;  // non-empty; negative = from the end
  RandomScalar strel_size = RandomScalar::Uniform(1, 10);
  double p_per_label = 1;
  // bgv2's any_of_these default order: dilation, erosion, closing, opening.
  std::vector<BinaryOperator> any_of_these = {BinaryOperator::kDilation, BinaryOperator::kErosion,
                                              BinaryOperator::kClosing, BinaryOperator::kOpening};
};

// bgv2: {"apply_to_channels", "operators", "strel_size"} (operators by name: "dilation", "erosion", "closing",
// "opening", bgv2's binary_<name>_torch).
struct ApplyRandomBinaryOperatorParams : TransformParams {
  std::vector<int64_t> apply_to_channels;  // entries of channel_idx, in application order
  std::vector<BinaryOperator> operators;
  std::vector<double> strel_size;
};

namespace binary_operator_internal {
// The squared grid coordinate of each footprint index along one axis (the same for every axis): h[i] = g[i]·g[i]
// with skimage's grid g (`disk`: np.arange(−r, r + 1); `ball`: np.mgrid[−r:r:int(2r+1)j]). Element (a, b, c) of the
// footprint (c along the last axis) is in S iff (h[c] + h[b]) + h[a] ≤ r·r, numpy's order of the float64 sum
// (2D: h[c] + h[b] ≤ r·r).
std::vector<double> AxisCosts(double r, int ndim);
// skimage's footprint for radius r: ndim 2 → disk(r), 3 → ball(r). `dims` receives its size per axis; the result
// is C-ordered 0/1 of prod(dims) entries. Built from AxisCosts (the definition the fast path is tested against).
std::vector<uint8_t> Footprint(double r, int ndim, std::vector<int64_t>& dims);
// `op` with the footprint of radius `r` (Footprint(r, shape.size())) on the 0/1 mask `m` of `shape` (2 or 3 dims),
// bgv2's semantics (header comment). Exact and separable: dilation(m)[i] = [D(i) ≤ r·r] with
// D(i) = min over q ∈ m inside the footprint window of (h[j2] + h[j1]) + h[j0] (j = q − i + origin), computed as
// one min-plus pass per axis, last axis first: fl(x + h) is monotone in x, so the minimum of the rounded sums is
// the rounded sum of the minima and D is bit for bit the footprint's own value (no tolerance). Cost per voxel and
// operator pass: k = |footprint| per axis ≈ 2r + 1 (3k in 3D, 2k in 2D; r = 8: 51 adds) instead of one test per
// footprint row (~k²·π/4 ≈ 227 at r = 8) or element (~k³·π/6).
std::vector<uint8_t> ApplyOperator(BinaryOperator op, const std::vector<uint8_t>& m, const std::vector<int64_t>& shape,
                                   double r);
}  // namespace binary_operator_internal

class ApplyRandomBinaryOperatorTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const ApplyRandomBinaryOperatorConfig& config);
  // Every config field once: name, rule, one-line doc (augment/schema.h); FromJson = Schema().Parse + Create.
  static const ConfigSchema<ApplyRandomBinaryOperatorConfig>& Schema();
  // Keys: channel_idx (int or list, required), strel_size (RandomScalar, default [1, 10]), p_per_label (default 1),
  // any_of_these (list of operator names, default all four).
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  const ApplyRandomBinaryOperatorConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kApplyRandomBinaryOperator; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit ApplyRandomBinaryOperatorTransform(ApplyRandomBinaryOperatorConfig c) : config_(std::move(c)) {}
  ApplyRandomBinaryOperatorConfig config_;
};

// Name of an operator ("dilation", ...) and its inverse; INVALID_ARGUMENT naming `field` for an unknown name.
std::string_view BinaryOperatorName(BinaryOperator op);
absl::StatusOr<BinaryOperator> ParseBinaryOperator(const std::string& name, const std::string& field);

}  // namespace augmentd
