// augment/device_cuda.cc — CUDA device enumeration with the CUDA runtime API. See device.h.
//
// Free memory needs a CUDA context (cudaMemGetInfo); creating one costs hundreds of MiB on every GPU, so a
// GPU is asked only when this process already holds its primary context (checked through the driver's
// cuDevicePrimaryCtxGetState, fetched with cudaGetDriverEntryPointByVersion so nothing links libcuda).
#include <cuda_runtime_api.h>

#include <cstdio>

#include "augment/device.h"
#include "absl/strings/str_cat.h"

namespace augmentd {
namespace {

std::string FormatUuid(const cudaUUID_t& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char out[64];
  std::snprintf(out, sizeof(out),
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
                b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return out;
}

// Whether this process already has an active primary context on `ordinal` (false when unknown).
bool PrimaryContextActive(int ordinal) {
  using GetStateFn = int (*)(int /*CUdevice*/, unsigned int* /*flags*/, int* /*active*/);
  static GetStateFn get_state = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", &fn, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return static_cast<GetStateFn>(nullptr);
    }
    return reinterpret_cast<GetStateFn>(fn);
  }();
  if (get_state == nullptr) return false;
  unsigned int flags = 0;
  int active = 0;
  // The CUdevice handle of ordinal N is N for the runtime's device numbering.
  return get_state(ordinal, &flags, &active) == 0 && active != 0;
}

}  // namespace

std::vector<DeviceInfo> ListCudaDevices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver / no device: clear the sticky-free error, report none
    return {};
  }
  std::vector<DeviceInfo> devices;
  devices.reserve(count);
  int current = -1;
  const bool have_current = cudaGetDevice(&current) == cudaSuccess;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    DeviceInfo d;
    d.kind = DeviceKind::kCuda;
    d.index = i;
    d.name = absl::StrCat("cuda:", i);
    d.model = prop.name;
    d.uuid = FormatUuid(prop.uuid);
    d.total_memory_bytes = prop.totalGlobalMem;
    if (PrimaryContextActive(i) && cudaSetDevice(i) == cudaSuccess) {
      size_t free_bytes = 0, total_bytes = 0;
      if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) d.free_memory_bytes = free_bytes;
      cudaGetLastError();
    }
    devices.push_back(std::move(d));
  }
  if (have_current) cudaSetDevice(current);
  return devices;
}

}  // namespace augmentd
