// augment/dataset/device_tier.h — the GPU-resident tier of the case cache (case_cache.h): whole cases in
// cudaMalloc'd memory and the crop of a planned box straight into device batch buffers.
//
//   ASSIGN_OR_RETURN(std::shared_ptr<const DeviceCase> d, UploadCase(*host_case, /*device=*/0));
//   RETURN_IF_ERROR(CropOnDevice(*d, plan.box, patch, dst_image + j * C * P, dst_seg + j * P, stream));
//
// CropOnDevice runs augment/kernels/cuda/crop.cu on `stream` (asynchronous): data float32 (pad 0), seg
// int16 (pad −1), with crop_and_pad_nd's quirk that a box missing the case on some axis yields zeros
// (BoxMissesArray) — byte-identical to BatchLoader::LoadSample on the CPU.
// Lifetime: a DeviceCase frees its memory on destruction (cudaFree, which waits for work still reading it).
// Without CUDA in the build, or without a GPU, every function returns FAILED_PRECONDITION and
// CudaDeviceCount() is 0. Functions work on the case's device and restore the caller's current device.
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "augment/dataset/case_array.h"
#include "augment/dataset/host_case.h"

struct CUstream_st;  // cudaStream_t without the CUDA headers

namespace augmentd::dataset {

struct DeviceCase {
  DeviceCase() = default;
  DeviceCase(const DeviceCase&) = delete;
  DeviceCase& operator=(const DeviceCase&) = delete;
  ~DeviceCase();

  std::string id;
  int device = 0;
  float* data = nullptr;  // (C, X, Y, Z) float32
  void* seg = nullptr;    // (1, X, Y, Z) of seg_dtype (int8 or int16)
  DType seg_dtype = DType::kInt16;
  Shape shape;            // (C, X, Y, Z)
  size_t data_bytes = 0, seg_bytes = 0;
  size_t bytes() const { return data_bytes + seg_bytes; }
};

// Number of visible CUDA devices (0 without CUDA in the build).
int CudaDeviceCount();

// Copies a host case into fresh device memory on `device`; returns when the copy is complete (on an internal
// stream). RESOURCE_EXHAUSTED naming the case when cudaMalloc fails.
absl::StatusOr<std::shared_ptr<const DeviceCase>> UploadCase(const HostCase& host, int device);

// Crops `box` (3 spatial axes; patch = box extent) of a resident case into device buffers: `dst_data`
// (C, *patch) float32 and `dst_seg` (1, *patch) int16. Enqueued on `stream`.
absl::Status CropOnDevice(const DeviceCase& c, const Box& box, float* dst_data, int16_t* dst_seg,
                          CUstream_st* stream);

// Host → device copy of `bytes`; returns when `src` may be reused (synchronises `stream`).
absl::Status CopyHostToDevice(void* dst, const void* src, size_t bytes, CUstream_st* stream);
// Device → device copy, enqueued on `stream`.
absl::Status CopyDeviceToDevice(void* dst, const void* src, size_t bytes, CUstream_st* stream);

}  // namespace augmentd::dataset
