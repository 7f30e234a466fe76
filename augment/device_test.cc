// Tests for augment/device.h: device listing and spec resolution (CPU always; CUDA when present).
#include "augment/device.h"

#include <set>

#include "gtest/gtest.h"

namespace augmentd {
namespace {

TEST(ListDevicesTest, CpuFirstThenGpusWithUniqueNames) {
  const std::vector<DeviceInfo> devices = ListDevices();
  ASSERT_FALSE(devices.empty());
  EXPECT_EQ(devices[0].kind, DeviceKind::kCpu);
  EXPECT_EQ(devices[0].name, "cpu");
  EXPECT_FALSE(devices[0].model.empty());
  EXPECT_GT(devices[0].total_memory_bytes, uint64_t{0});
  EXPECT_LE(devices[0].free_memory_bytes, devices[0].total_memory_bytes);
  std::set<std::string> names;
  for (size_t i = 0; i < devices.size(); ++i) {
    EXPECT_TRUE(names.insert(devices[i].name).second) << devices[i].name;
    if (i == 0) continue;
    EXPECT_EQ(devices[i].kind, DeviceKind::kCuda);
    EXPECT_EQ(devices[i].name, "cuda:" + std::to_string(devices[i].index));
    EXPECT_EQ(devices[i].uuid.rfind("GPU-", 0), 0u) << devices[i].uuid;
    EXPECT_GT(devices[i].total_memory_bytes, uint64_t{0});
  }
  EXPECT_EQ(ListCudaDevices().size(), devices.size() - 1);
}

TEST(ResolveDeviceTest, CpuAndAuto) {
  absl::StatusOr<DeviceInfo> cpu = ResolveDevice("cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ(cpu->kind, DeviceKind::kCpu);
  EXPECT_TRUE(ResolveDevice(" CPU ").ok());

  absl::StatusOr<DeviceInfo> any = ResolveDevice("auto");
  ASSERT_TRUE(any.ok()) << any.status();
  const std::vector<DeviceInfo> gpus = ListCudaDevices();
  if (gpus.empty()) {
    EXPECT_EQ(any->name, "cpu");
  } else {
    EXPECT_EQ(any->name, gpus.front().name);
  }
}

TEST(ResolveDeviceTest, CudaOrdinalAndUuid) {
  const std::vector<DeviceInfo> gpus = ListCudaDevices();
  for (const DeviceInfo& gpu : gpus) {
    absl::StatusOr<DeviceInfo> by_name = ResolveDevice(gpu.name);
    ASSERT_TRUE(by_name.ok()) << by_name.status();
    EXPECT_EQ(by_name->uuid, gpu.uuid);
    absl::StatusOr<DeviceInfo> by_uuid = ResolveDevice(gpu.uuid);
    ASSERT_TRUE(by_uuid.ok()) << by_uuid.status();
    EXPECT_EQ(by_uuid->index, gpu.index);
    absl::StatusOr<DeviceInfo> bare_uuid = ResolveDevice(gpu.uuid.substr(4));
    ASSERT_TRUE(bare_uuid.ok()) << bare_uuid.status();
    EXPECT_EQ(bare_uuid->index, gpu.index);
  }
  const std::string missing = "cuda:" + std::to_string(gpus.size());
  EXPECT_EQ(ResolveDevice(missing).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ResolveDevice("GPU-00000000-0000-0000-0000-000000000000").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ResolveDeviceTest, MalformedSpecsAreInvalidArgument) {
  for (const char* spec : {"", "gpu", "cuda", "cuda:", "cuda:-1", "cuda:x", "cuda:1.5", "tpu:0", "GPU-123"}) {
    EXPECT_EQ(ResolveDevice(spec).status().code(), absl::StatusCode::kInvalidArgument) << "'" << spec << "'";
  }
}

}  // namespace
}  // namespace augmentd
