// augment/transforms/common/sitk_resample.h — SimpleITK's ResampleImageFilter in index space (internal; used by the TorchIO
// spatial transforms anisotropy/ and torchio_affine/, whose images have TorchIO's default identity affine).
//
// The input continuous index of output voxel o is ci = M·o + b, evaluated as ITK's ResampleImageFilter does for
// linear transforms: along each output line of axis 0 (ITK's x), ci = c0 + (c_n − c0)·(i / n0) with c0 and c_n the
// indices of o = (0, j, k) and (n0, j, k) (checked against SimpleITK 2.5: the per-voxel M·o + b rounds a centre
// sample at an exact half the other way). ITK's interpolators treat ci as inside iff
// −0.5 <= ci_r < n_r − 0.5 on every axis (else the output is `fill`); linear: trilinear weights of floor(ci) and
// floor(ci) + 1 with both neighbours clamped into the image (ITK's border handling), accumulated in double and
// stored as float32; nearest: the voxel floor(ci + 0.5) (ITK's RoundHalfIntegerUp), clamped likewise.
#pragma once

#include <array>
#include <cstdint>

namespace augmentd::sitk {

using Shape3 = std::array<int64_t, 3>;

struct IndexAffine {
  std::array<double, 9> m{1, 0, 0, 0, 1, 0, 0, 0, 1};  // row-major 3×3
  std::array<double, 3> b{0, 0, 0};
};

enum class Interpolation { kLinear, kNearest };

// One channel: `in` (shape `in_shape`, C order) resampled onto `out` (shape `out_shape`).
template <typename T>
void Resample(const T* in, const Shape3& in_shape, const IndexAffine& a, Interpolation interp, T fill, T* out,
              const Shape3& out_shape);

}  // namespace augmentd::sitk
