// augment/kernels/cuda/torchio_kernels.h — resampling kernels of the TorchIO / AugLab spatial chain stages
// (anisotropy, torchio_affine, elastic_deformation, auglab_low_resolution; their <name>_cuda.cc launch them). The
// per-voxel math is augment/kernels/common/sitk_math.h, the very code the CPU transforms run.
//
// A launch covers `planes` independent planes (one image or label channel of one sample each); a plane record says
// where its input and output lie (element offsets into `in` / `out`), their shapes and whether it is on (an off plane
// is not touched). Every launch is in → out: the stages copy the planes to scratch first when they resample in place.
// Plane records, tap tables and control grids live in the chain's ParamArena (device memory, uploaded once a batch).
//
//   LaunchAffineResample(planes, recs, scratch, image, mins, stream);   // image = sitk resample of scratch
//
// Thread-safety: launches are asynchronous on `stream`; nothing is shared between launches.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace augmentd::cuda::torchio {

// One plane of an index-affine resample (SimpleITK's ResampleImageFilter, sitk_math::LineIndex / Sample):
// out voxel o samples in at ci = scanline(M·o + b); fill outside (or mins[min_index] when min_index >= 0).
struct AffinePlane {
  double m[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  double b[3] = {0, 0, 0};
  int64_t in_offset = 0, out_offset = 0;
  int32_t in_shape[3] = {1, 1, 1};
  int32_t out_shape[3] = {1, 1, 1};
  int32_t on = 0, linear = 0;
  int32_t min_index = -1;  // >= 0: fill with that entry of `mins` (the plane's minimum from LaunchPlaneMin)
  float fill = 0;
};

// One plane of the elastic (B-spline) resample: in and out share `shape`; the tables of its sample start at
// `table[3]` (entries into `starts`; the 4 weights of entry e are weights[4e..4e+3]), its control grid (n0·n1·n2·3
// floats, C order (x, y, z, component)) at `grid` in `points`.
struct BsplinePlane {
  int64_t in_offset = 0, out_offset = 0;
  int32_t shape[3] = {1, 1, 1};
  int32_t nodes[3] = {4, 4, 4};
  int32_t table[3] = {0, 0, 0};
  int32_t grid = 0;
  int32_t on = 0, linear = 0, is_2d = 0;
  int32_t min_index = -1;  // >= 0: fill with mins[min_index]
  float fill = 0;
};

// AugLab's "lowres": torch legacy nearest down to `down` and back up, then zero outside the kept box (one gather).
struct NearestBoxPlane {
  int64_t offset = 0;  // of the plane in both `in` and `out` (both of shape `shape`)
  int32_t shape[3] = {1, 1, 1};
  int32_t down[3] = {1, 1, 1};
  int32_t box_start[3] = {0, 0, 0};
  int32_t box_keep[3] = {1, 1, 1};
  int32_t on = 0;
};

// torch's trilinear resize (align_corners=False, kernels::LinearResize's nested float form): taps of axis d of the
// output start at taps[d] in the tap table (one per output index along d).
struct LinearTap {
  int32_t i0 = 0, i1 = 0;
  float w0 = 1, w1 = 0;
};
struct LinearPlane {
  int64_t in_offset = 0, out_offset = 0;
  int32_t in_shape[3] = {1, 1, 1};
  int32_t out_shape[3] = {1, 1, 1};
  int32_t taps[3] = {0, 0, 0};
  int32_t on = 0;
};

// `max_out` bounds every plane's output voxel count (the grid's size per plane).
cudaError_t LaunchAffineResample(int32_t planes, int64_t max_out, const AffinePlane* p, const float* in, float* out,
                                 const float* mins, cudaStream_t stream);
cudaError_t LaunchAffineResample(int32_t planes, int64_t max_out, const AffinePlane* p, const int16_t* in,
                                 int16_t* out, const int16_t* mins, cudaStream_t stream);
cudaError_t LaunchBsplineResample(int32_t planes, int64_t max_out, const BsplinePlane* p, const int32_t* starts,
                                  const double* weights, const float* points, const float* in, float* out,
                                  const float* mins, cudaStream_t stream);
cudaError_t LaunchBsplineResample(int32_t planes, int64_t max_out, const BsplinePlane* p, const int32_t* starts,
                                  const double* weights, const float* points, const int16_t* in, int16_t* out,
                                  const int16_t* mins, cudaStream_t stream);
cudaError_t LaunchNearestBox(int32_t planes, int64_t max_out, const NearestBoxPlane* p, const float* in, float* out,
                             cudaStream_t stream);
cudaError_t LaunchNearestBox(int32_t planes, int64_t max_out, const NearestBoxPlane* p, const int16_t* in,
                             int16_t* out, cudaStream_t stream);
cudaError_t LaunchLinearResize(int32_t planes, int64_t max_out, const LinearPlane* p, const LinearTap* taps,
                               const float* in, float* out, cudaStream_t stream);
// mins[k] = the minimum of the `voxels` values at x + k·voxels, k < planes (exact: order-free).
cudaError_t LaunchPlaneMin(int32_t planes, int64_t voxels, const float* x, float* mins, cudaStream_t stream);
cudaError_t LaunchPlaneMin(int32_t planes, int64_t voxels, const int16_t* x, int16_t* mins, cudaStream_t stream);

}  // namespace augmentd::cuda::torchio
