// augment/transforms/swap/swap.h — TorchIO `RandomSwap` / `Swap` (patch swapping; AugLab's nnUNetTrainerDAExt
// `ArtifactTransform(swap=True)` calls `tio.RandomSwap()` with TorchIO's defaults, patch 15³ and 100 iterations).
//
// Draw (RandomSwap.get_params, TorchIO 1.2.1): per iteration a first corner, then a second corner redrawn while it
// equals the first (TorchIO's "second inside first" test, which for equal patch sizes is equality). Each corner:
// per axis with m = size − patch, 0 when m == 0, else randint(0, m − 1) (torch.randint(m): m itself is never
// drawn). A patch larger than the image is INVALID_ARGUMENT, and so is an image with a single possible corner
// (TorchIO would loop forever). One list per sample; every image channel shares it; labels are untouched
// (IntensityTransform: ScalarImages only).
// Apply (Swap / _swap): for each (first, second) in order: second ← first, then first ← (second's values before
// this step). The first copy runs in C order element by element, which is what torch's copy from an overlapping
// view does for strided slices; for overlapping patches torch does not promise an order (vectorised copies can
// differ), so the parity test compares only non-overlapping pairs and the unit test pins this order down.
// 2D samples (d0, d1) are TorchIO's (W, H, 1): the third patch extent must then be 1.
// Parameters are Philox draws (augmentd's stream), injected as {"patch_size": [w, h, d],
// "locations": [[[i, j, k], [i, j, k]], ...]}.
//
//   auto t = SwapTransform::FromJson({{"patch_size", 15}, {"num_iterations", 100}});
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct SwapConfig {
  std::array<int64_t, 3> patch_size{15, 15, 15};  // each >= 1
  int64_t num_iterations = 100;                   // 0..100000
};

struct SwapParams : TransformParams {
  std::array<int64_t, 3> patch_size{1, 1, 1};
  std::vector<std::array<std::array<int64_t, 3>, 2>> locations;  // (first corner, second corner) per iteration
};

// Swaps the patches of `p` in every channel of a (channels, s0, s1, s2) float32 volume, in place (the order above).
void SwapPatches(const SwapParams& p, const std::array<int64_t, 3>& shape, int64_t channels, float* image);

class SwapTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const SwapConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  static const ConfigSchema<SwapConfig>& Schema();  // patch_size, num_iterations
  const SwapConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kSwap; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit SwapTransform(SwapConfig c) : config_(c) {}
  SwapConfig config_;
};

}  // namespace augmentd
