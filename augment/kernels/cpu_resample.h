// augment/kernels/cpu_resample.h — torch.nn.functional.interpolate modes used by bgv2 (pure, one channel).
//
//   nearest-exact: src index = min(floor((i + 0.5) · in/out), in − 1)    (DS targets: factor 2 → 2i+1)
//   linear (align_corners=False): src = max((i + 0.5) · in/out − 0.5, 0), upper neighbour clamped.
//
//   NearestExactResize(in, in_shape, out, out_shape, 3);
#pragma once

#include <cstdint>
#include <vector>

namespace augmentd::kernels {

// Python 3 round() (half to even) of a double, as an integer.
int64_t PyRoundToInt(double v);

// torch's nearest-exact source index (float scale as torch computes it).
int64_t NearestExactIndex(int64_t dst, int64_t in_size, int64_t out_size);

template <typename T>
void NearestExactResize(const T* in, const int64_t* in_shape, T* out, const int64_t* out_shape, int ndim);

// One axis of LinearResize: per output index the two source indices and their float32 weights (torch's arithmetic;
// shared with the CUDA stage of auglab_low_resolution, which evaluates the same nested form with these taps).
struct LinearTaps {
  std::vector<int64_t> i0, i1;
  std::vector<float> w0, w1;
};
LinearTaps ComputeTaps(int64_t in_size, int64_t out_size);

// (Bi/tri)linear resize, align_corners=False, torch's weight arithmetic (float32).
void LinearResize(const float* in, const int64_t* in_shape, float* out, const int64_t* out_shape, int ndim);

}  // namespace augmentd::kernels
