// augment/transforms/common/resample_cuda.h — shared pieces of the TorchIO resampling CUDA stages
// (anisotropy/, torchio_affine/, elastic_deformation/ <name>_cuda.cc; internal to the CUDA engine).
//
// 2D samples: TorchIO reads a 2D sample (X, Y) as (X, Y, 1); the chain holds it as (1, X, Y). Both are the same
// C-order buffer, so these stages resample a 2D sample's planes as the CPU's (X, Y, 1) volume with the parameters as
// drawn. The 2D lift only marks the parameters as planar (Planar<P>: a copy of P), so that the stage knows which
// shape the CPU used:
//
//   Lifted Lift2DAnisotropy(const TransformParams& p) { return resample_cuda::LiftPlanar<AnisotropyParams>(p); }
//   const std::array<int64_t, 3> s = resample_cuda::CpuShape(params, tensors);   // (X, Y, 1) or (d0, d1, d2)
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "augment/cuda/stage.h"
#include "augment/transform.h"

namespace augmentd::resample_cuda {

// Parameters of a 2D sample (lifted for the chain's (1, X, Y) form): the CPU resampled them on (X, Y, 1).
template <typename P>
struct Planar final : P {
  explicit Planar(const P& p) : P(p) {}
};

template <typename P>
absl::StatusOr<std::unique_ptr<TransformParams>> LiftPlanar(const TransformParams& p) {
  const auto* q = dynamic_cast<const P*>(&p);
  if (q == nullptr) return absl::InvalidArgumentError("2D lift: parameters of another transform");
  return std::unique_ptr<TransformParams>(new Planar<P>(*q));
}

// The shape the CPU transform resampled sample `p` on: (X, Y, 1) for planar parameters (the chain's (1, X, Y)),
// else the chain's shape.
template <typename P>
std::array<int64_t, 3> CpuShape(const P& p, const ChainTensors& t) {
  if (dynamic_cast<const Planar<P>*>(&p) != nullptr) return {t.shape[1], t.shape[2], 1};
  return {t.shape[0], t.shape[1], t.shape[2]};
}

template <typename P>
bool IsPlanar(const P& p) {
  return dynamic_cast<const Planar<P>*>(&p) != nullptr;
}

inline void SetShape(int32_t* dst, const std::array<int64_t, 3>& s) {
  for (int d = 0; d < 3; ++d) dst[d] = static_cast<int32_t>(s[d]);
}

}  // namespace augmentd::resample_cuda
