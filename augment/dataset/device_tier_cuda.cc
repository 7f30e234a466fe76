// CUDA implementation of device_tier.h and of PinnedHostAllocator (host_allocator.h).
#include <cuda_runtime.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "augment/dataset/device_tier.h"
#include "augment/dataset/host_allocator.h"
#include "augment/kernels/cuda/crop.h"

namespace augmentd::dataset {
namespace {

absl::Status CudaError(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return absl::OkStatus();
  const absl::StatusCode code =
      e == cudaErrorMemoryAllocation ? absl::StatusCode::kResourceExhausted : absl::StatusCode::kInternal;
  return absl::Status(code, absl::StrCat(what, ": ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")"));
}

class CudaPinnedAllocator final : public HostAllocator {
 public:
  void* Allocate(size_t bytes) override {
    void* p = nullptr;
    if (cudaHostAlloc(&p, bytes == 0 ? 1 : bytes, cudaHostAllocPortable) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return p;
  }
  void Free(void* p, size_t) override { cudaFreeHost(p); }
  const char* name() const override { return "pinned"; }
};

// Makes `device` current for a scope and restores the caller's device (server workers keep their own).
class ScopedDevice {
 public:
  explicit ScopedDevice(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    status_ = cudaSetDevice(device);
  }
  ~ScopedDevice() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  cudaError_t status() const { return status_; }

 private:
  int previous_ = -1;
  cudaError_t status_ = cudaSuccess;
};

// RAII stream for one upload.
class ScopedStream {
 public:
  ScopedStream() { ok_ = cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking) == cudaSuccess; }
  ~ScopedStream() {
    if (ok_) cudaStreamDestroy(s_);
  }
  bool ok() const { return ok_; }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
  bool ok_ = false;
};

}  // namespace

std::shared_ptr<HostAllocator> PinnedHostAllocator() {
  static const std::shared_ptr<HostAllocator> a =
      CudaDeviceCount() > 0 ? std::make_shared<CudaPinnedAllocator>() : nullptr;
  return a;
}

int CudaDeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

DeviceCase::~DeviceCase() {
  if (data == nullptr && seg == nullptr) return;
  ScopedDevice on(device);
  cudaFree(data);
  cudaFree(seg);
}

absl::StatusOr<std::shared_ptr<const DeviceCase>> UploadCase(const HostCase& host, int device) {
  if (device < 0 || device >= CudaDeviceCount()) {
    return absl::FailedPreconditionError(absl::StrCat("device tier: no CUDA device ", device));
  }
  const std::string what = absl::StrCat("device tier: case ", host.id());
  ScopedDevice on(device);
  if (absl::Status st = CudaError(on.status(), what); !st.ok()) return st;
  auto c = std::make_shared<DeviceCase>();
  c->id = host.id();
  c->device = device;
  c->shape = host.data_shape();
  c->seg_dtype = host.seg_dtype();
  c->data_bytes = host.data_bytes();
  c->seg_bytes = host.seg_bytes();
  void* data = nullptr;
  if (absl::Status st = CudaError(cudaMalloc(&data, c->data_bytes), what + " (data)"); !st.ok()) return st;
  c->data = static_cast<float*>(data);
  if (absl::Status st = CudaError(cudaMalloc(&c->seg, c->seg_bytes), what + " (seg)"); !st.ok()) return st;
  ScopedStream stream;
  if (!stream.ok()) return CudaError(cudaGetLastError(), what + " (stream)");
  absl::Status st = CudaError(
      cudaMemcpyAsync(c->data, host.data(), c->data_bytes, cudaMemcpyHostToDevice, stream.get()), what);
  if (st.ok()) {
    st = CudaError(cudaMemcpyAsync(c->seg, host.seg(), c->seg_bytes, cudaMemcpyHostToDevice, stream.get()), what);
  }
  if (absl::Status sync = CudaError(cudaStreamSynchronize(stream.get()), what); st.ok()) st = sync;
  if (!st.ok()) return st;
  return std::shared_ptr<const DeviceCase>(std::move(c));
}

absl::Status CropOnDevice(const DeviceCase& c, const Box& box, float* dst_data, int16_t* dst_seg,
                          CUstream_st* stream) {
  if (box.rank() != 3 || c.shape.size() != 4) {
    return absl::InvalidArgumentError(absl::StrCat("device crop of case ", c.id, ": expected a 3-axis box"));
  }
  if (c.seg_dtype != DType::kInt8 && c.seg_dtype != DType::kInt16) {
    return absl::InternalError(absl::StrCat("device crop of case ", c.id, ": seg must be int8 or int16"));
  }
  cuda::CropArgs a;
  a.src_data = c.data;
  a.src_seg = c.seg;
  a.seg_is_int8 = c.seg_dtype == DType::kInt8;
  a.channels = c.shape[0];
  const Shape spatial(c.shape.begin() + 1, c.shape.end());
  for (int d = 0; d < 3; ++d) {
    a.shape[d] = spatial[static_cast<size_t>(d)];
    a.lb[d] = box.lb[static_cast<size_t>(d)];
    a.patch[d] = box.ub[static_cast<size_t>(d)] - box.lb[static_cast<size_t>(d)];
  }
  a.misses = BoxMissesArray(box, spatial);
  a.dst_data = dst_data;
  a.dst_seg = dst_seg;
  const std::string what = absl::StrCat("device crop of case ", c.id);
  ScopedDevice on(c.device);
  if (absl::Status st = CudaError(on.status(), what); !st.ok()) return st;
  return CudaError(cuda::LaunchCropSample(a, stream), what);
}

absl::Status CopyHostToDevice(void* dst, const void* src, size_t bytes, CUstream_st* stream) {
  absl::Status st = CudaError(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream), "host→device copy");
  if (!st.ok()) return st;
  return CudaError(cudaStreamSynchronize(stream), "host→device copy");
}

absl::Status CopyDeviceToDevice(void* dst, const void* src, size_t bytes, CUstream_st* stream) {
  return CudaError(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream), "device→device copy");
}

}  // namespace augmentd::dataset
