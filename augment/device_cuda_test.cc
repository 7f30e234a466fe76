// GPU tests of augment/device_cuda.cc (label: gpu). Skipped when the machine has no CUDA device.
#include <cuda_runtime_api.h>

#include "augment/device.h"
#include "gtest/gtest.h"

namespace augmentd {
namespace {

int RuntimeDeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

TEST(DeviceCudaTest, ListsEveryRuntimeDeviceWithModelUuidAndMemory) {
  const int n = RuntimeDeviceCount();
  if (n == 0) GTEST_SKIP() << "no CUDA device";
  const std::vector<DeviceInfo> gpus = ListCudaDevices();
  ASSERT_EQ(static_cast<int>(gpus.size()), n);
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp prop{};
    ASSERT_EQ(cudaGetDeviceProperties(&prop, i), cudaSuccess);
    EXPECT_EQ(gpus[i].index, i);
    EXPECT_EQ(gpus[i].model, prop.name);
    EXPECT_EQ(gpus[i].total_memory_bytes, prop.totalGlobalMem);
    EXPECT_EQ(gpus[i].uuid.size(), 40u) << gpus[i].uuid;  // "GPU-" + 36
    absl::StatusOr<DeviceInfo> by_uuid = ResolveDevice(gpus[i].uuid);
    ASSERT_TRUE(by_uuid.ok()) << by_uuid.status();
    EXPECT_EQ(by_uuid->index, i);
  }
  absl::StatusOr<DeviceInfo> any = ResolveDevice("auto");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->name, "cuda:0");
}

TEST(DeviceCudaTest, FreeMemoryReportedOnceThisProcessHoldsAContext) {
  if (RuntimeDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess);  // creates the primary context of device 0
  const std::vector<DeviceInfo> gpus = ListCudaDevices();
  ASSERT_FALSE(gpus.empty());
  EXPECT_GT(gpus[0].free_memory_bytes, 0u);
  EXPECT_LE(gpus[0].free_memory_bytes, gpus[0].total_memory_bytes);
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, 0);  // the listing restores the current device
}

}  // namespace
}  // namespace augmentd
