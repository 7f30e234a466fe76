// augment/transforms/common/mri_common.h — shared pieces of the MRI artefact transforms (TorchIO definitions; internal).
//
// Layout: TorchIO works on (C, W, H, D) tensors; augmentd samples are (C, d0, d1, d2) with the same axis order, so
// TorchIO axis i is augmentd axis i. A 2D sample (d0, d1) is TorchIO's 2D image (C, d0, d1, 1).
// k-space: TorchIO uses fftshift(fftn(x)) (torch.fft, per channel) and real(ifftn(ifftshift(X))). augmentd keeps
// the unshifted spectrum and maps TorchIO's shifted plane index s to the unshifted index Unshift(s, n).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/fft.h"
#include "nlohmann/json.hpp"

namespace augmentd::mri {

using Shape3 = std::array<int64_t, 3>;

// (d0, d1, d2) for a 3D sample, (d0, d1, 1) for a 2D one; INVALID_ARGUMENT "<transform>: ..." otherwise.
absl::StatusOr<Shape3> ToShape3(const std::vector<int64_t>& shape, const std::string& transform);
inline int64_t Voxels(const Shape3& s) { return s[0] * s[1] * s[2]; }

// TorchIO's Transform._parse_range: a number d >= 0 → (min_constraint or −d, d); [a, b] with a <= b; both checked
// against the constraints; `integer` requires integral values. Errors name `field`.
absl::StatusOr<std::array<double, 2>> ParseRange(const nlohmann::json& v, const std::string& field,
                                                 std::optional<double> min_constraint,
                                                 std::optional<double> max_constraint, bool integer);

// numpy.fft.fftshift index s → unshifted index, and back.
inline int64_t Unshift(int64_t s, int64_t n) { return ((s - n / 2) % n + n) % n; }
inline int64_t Shift(int64_t u, int64_t n) { return (u + n / 2) % n; }

// fftn of one channel (unshifted); and real(ifftn(spec)) written as float32 to `out`.
std::vector<fft::Complex> Spectrum(const float* x, const Shape3& s);
void RealInverse(std::vector<fft::Complex>& spec, const Shape3& s, float* out);

}  // namespace augmentd::mri
