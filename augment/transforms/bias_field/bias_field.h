// augment/transforms/bias_field/bias_field.h — TorchIO `RandomBiasField` / `BiasField` (MRI intensity inhomogeneity).
//
// Draw (RandomBiasField.get_params): one coefficient per monomial x^a·y^b·z^c with a + b + c <= order, in the loop
// order a = 0..order, b = 0..order−a, c = 0..order−a−b ((order+1)(order+2)(order+3)/6 values), each U(lo, hi)
// where `coefficients` = c gives (−c, c) (TorchIO's _parse_range). One set per sample, all channels share it.
// Apply (BiasField.generate_bias_field): per axis of size n the coordinate of index i is (i − (n−1)/2) / ((n−1)/2)
// (0 when n = 1), field = Σ coef · x^a · y^b · z^c in float64, image ← image · float32(exp(field)).
// Parameters are Philox draws (augmentd's stream), not torch's; injected as {"coefficients": [...], "order": k}.
//
//   auto t = BiasFieldTransform::FromJson({{"coefficients", 0.5}, {"order", 3}});
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct BiasFieldConfig {
  std::array<double, 2> coefficients{-0.5, 0.5};
  int order = 3;  // 0..10
};

struct BiasFieldParams : TransformParams {
  std::vector<double> coefficients;
  int order = 0;
};

// Number of coefficients of a polynomial of `order` (TorchIO's loop).
int64_t BiasFieldNumCoefficients(int order);

// The float32 multiplicative field exp(Σ ...) for a (d0, d1, d2) grid (2D: d2 = 1), C order.
std::vector<float> BiasFieldMultiplier(const BiasFieldParams& p, const std::array<int64_t, 3>& shape);

class BiasFieldTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const BiasFieldConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (BiasFieldConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<BiasFieldConfig>& Schema();
  const BiasFieldConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kBiasField; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit BiasFieldTransform(BiasFieldConfig c) : config_(c) {}
  BiasFieldConfig config_;
};

}  // namespace augmentd
