// augment/device.h — the compute devices augmentd can run on: the CPU (always) and every visible CUDA GPU.
//
//   for (const augmentd::DeviceInfo& d : augmentd::ListDevices()) printf("%s %s\n", d.name.c_str(), d.model.c_str());
//   absl::StatusOr<augmentd::DeviceInfo> dev = augmentd::ResolveDevice("auto");   // first GPU, else the CPU
//
// Torch-free and gRPC-free: the server links it through this header only. The CUDA part uses the CUDA
// runtime API and is compiled only when the build has CUDA (device_cuda.cc; device_nocuda.cc otherwise).
// A machine without a GPU or without a driver simply has no CUDA devices: that is not an error.
// Thread-safety: both functions may be called from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace augmentd {

enum class DeviceKind { kCpu, kCuda };

struct DeviceInfo {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;                    // CUDA ordinal in this process; 0 for the CPU
  std::string name;                 // "cpu", "cuda:0"
  std::string model;                // "NVIDIA H200", the CPU model string
  std::string uuid;                 // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"; empty for the CPU
  uint64_t total_memory_bytes = 0;  // host RAM for the CPU
  uint64_t free_memory_bytes = 0;   // available now; for a GPU whose context this process has not
                                    // created yet, 0 (querying it would create a context on that GPU)
};

// The CPU first, then every visible CUDA device in ordinal order. Never fails.
std::vector<DeviceInfo> ListDevices();

// Resolves a device spec: "cpu", "cuda:N", "auto" (the first GPU, else the CPU), or a GPU UUID (with or
// without the "GPU-" prefix). INVALID_ARGUMENT for a malformed spec, NOT_FOUND for a device that is not
// present (e.g. "cuda:3" on a machine with one GPU).
absl::StatusOr<DeviceInfo> ResolveDevice(std::string_view spec);

// Internal: the CUDA devices (empty without CUDA, a driver or a GPU). Defined by device_cuda.cc or
// device_nocuda.cc; use ListDevices().
std::vector<DeviceInfo> ListCudaDevices();

}  // namespace augmentd
