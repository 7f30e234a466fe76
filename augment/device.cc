// augment/device.cc — CPU description and device-spec parsing. See device.h.
#include "augment/device.h"

#include <unistd.h>

#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace augmentd {
namespace {

// "model name : Intel(R) Xeon(R) ..." from /proc/cpuinfo; the architecture name when absent (e.g. ARM).
std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "model name")) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    }
  }
  return "cpu";
}

// MemAvailable from /proc/meminfo (what a new allocation can get without swapping), in bytes.
uint64_t HostAvailableBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  uint64_t kib = 0;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES);
  return pages > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

DeviceInfo CpuDevice() {
  DeviceInfo cpu;
  cpu.kind = DeviceKind::kCpu;
  cpu.index = 0;
  cpu.name = "cpu";
  cpu.model = CpuModel();
  const long pages = sysconf(_SC_PHYS_PAGES);
  cpu.total_memory_bytes =
      pages > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
  cpu.free_memory_bytes = HostAvailableBytes();
  return cpu;
}

}  // namespace

std::vector<DeviceInfo> ListDevices() {
  std::vector<DeviceInfo> devices{CpuDevice()};
  for (DeviceInfo& gpu : ListCudaDevices()) devices.push_back(std::move(gpu));
  return devices;
}

absl::StatusOr<DeviceInfo> ResolveDevice(std::string_view spec_view) {
  // Debian's abseil has its own absl::string_view (not std::string_view): work on a std::string.
  const std::string spec(spec_view);
  const std::string s = absl::AsciiStrToLower(absl::StripAsciiWhitespace(spec));
  if (s.empty()) return absl::InvalidArgumentError("device spec is empty (want cpu, cuda:N, auto or a GPU UUID)");
  if (s == "cpu") return CpuDevice();
  std::vector<DeviceInfo> gpus = ListCudaDevices();
  if (s == "auto") {
    if (gpus.empty()) return CpuDevice();
    return gpus.front();
  }
  absl::string_view rest = s;
  if (absl::ConsumePrefix(&rest, "cuda:")) {
    int index = -1;
    if (!absl::SimpleAtoi(rest, &index) || index < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("device spec '", spec, "': expected cuda:N with N a non-negative integer"));
    }
    for (DeviceInfo& gpu : gpus) {
      if (gpu.index == index) return std::move(gpu);
    }
    return absl::NotFoundError(absl::StrCat("device '", spec, "' not found: this machine has ", gpus.size(),
                                            " CUDA device(s)"));
  }
  // A UUID: "GPU-" + 8-4-4-4-12 hex digits, the prefix optional.
  absl::string_view uuid = s;
  absl::ConsumePrefix(&uuid, "gpu-");
  bool looks_like_uuid = uuid.size() == 36;
  for (size_t i = 0; looks_like_uuid && i < uuid.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    looks_like_uuid = dash ? uuid[i] == '-' : absl::ascii_isxdigit(uuid[i]);
  }
  if (!looks_like_uuid) {
    return absl::InvalidArgumentError(
        absl::StrCat("device spec '", spec, "' is not cpu, cuda:N, auto or a GPU UUID (GPU-xxxxxxxx-xxxx-...)"));
  }
  for (DeviceInfo& gpu : gpus) {
    absl::string_view have = gpu.uuid;
    absl::ConsumePrefix(&have, "GPU-");
    if (absl::EqualsIgnoreCase(have, uuid)) return std::move(gpu);
  }
  return absl::NotFoundError(absl::StrCat("no CUDA device with UUID '", spec, "'"));
}

}  // namespace augmentd
