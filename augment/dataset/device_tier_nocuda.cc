// device_tier.h and PinnedHostAllocator without CUDA in the build: no device tier, plain host memory.
#include "augment/dataset/device_tier.h"
#include "augment/dataset/host_allocator.h"

namespace augmentd::dataset {
namespace {

absl::Status NoCuda() {
  return absl::FailedPreconditionError("the GPU case cache needs a CUDA build of augmentd (AUGMENTD_WITH_CUDA)");
}

}  // namespace

std::shared_ptr<HostAllocator> PinnedHostAllocator() { return nullptr; }
int CudaDeviceCount() { return 0; }
DeviceCase::~DeviceCase() = default;

absl::StatusOr<std::shared_ptr<const DeviceCase>> UploadCase(const HostCase&, int) { return NoCuda(); }
absl::Status CropOnDevice(const DeviceCase&, const Box&, float*, int16_t*, CUstream_st*) { return NoCuda(); }
absl::Status CopyHostToDevice(void*, const void*, size_t, CUstream_st*) { return NoCuda(); }
absl::Status CopyDeviceToDevice(void*, const void*, size_t, CUstream_st*) { return NoCuda(); }

}  // namespace augmentd::dataset
