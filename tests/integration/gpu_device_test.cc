// GPU integration test (label: gpu): the real `augmentd` on a machine with CUDA devices lists them, picks the
// first GPU for --device=auto, accepts a GPU UUID, and rejects an ordinal that does not exist; a session opened
// on cuda:0 runs on the CUDA engine and returns the same batch as a CPU session with the same seed (labels
// identical, images within 1e-4 of the range). Skipped (not failed) when the server reports no CUDA device.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tests/integration/session_tokens.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "augmentd/v1/service.grpc.pb.h"
#include "grpcpp/client_context.h"
#include "client/client.h"
#include "gtest/gtest.h"
#include "tests/integration/subprocess.h"

namespace augmentd {
namespace {

const std::string kAugmentd = ::augmentd::testing::AugmentdBinary(AUGMENTD_BIN_PATH);

using ::augmentd::testing::CommandResult;
using ::augmentd::testing::RunCommand;
using ::augmentd::testing::ServingAddresses;
using ::augmentd::testing::Subprocess;

// Starts augmentd with `device`, returns its ServerInfo (and stops it with SIGTERM, expecting exit 0).
absl::StatusOr<v1::ServerInfo> InfoWithDevice(const std::string& device) {
  std::unique_ptr<Subprocess> server =
      Subprocess::Start({kAugmentd, "--listen=127.0.0.1:0", "--device=" + device});
  if (server == nullptr || !server->WaitForOutput("serving on", absl::Seconds(60))) {
    return absl::InternalError("augmentd did not start: " + (server ? server->Output() : std::string()));
  }
  const std::vector<std::string> addresses = ServingAddresses(server->Output());
  absl::StatusOr<v1::ServerInfo> info = absl::InternalError("no address: " + server->Output());
  if (addresses.size() == 1) {
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(addresses[0], absl::Seconds(10));
    info = client.ok() ? (*client)->GetServerInfo() : client.status();
  }
  server->Signal(SIGTERM);
  EXPECT_EQ(server->WaitForExit(absl::Seconds(30)), 0) << server->Output();
  return info;
}

TEST(GpuDeviceTest, ServerListsGpusAndResolvesAutoUuidAndOrdinal) {
  absl::StatusOr<v1::ServerInfo> info = InfoWithDevice("auto");
  ASSERT_TRUE(info.ok()) << info.status();
  if (info->devices_size() < 2) GTEST_SKIP() << "no CUDA device on this machine";

  EXPECT_EQ(info->devices(0).name(), "cpu");
  for (int i = 1; i < info->devices_size(); ++i) {
    const v1::Device& d = info->devices(i);
    EXPECT_EQ(d.kind(), v1::DEVICE_KIND_CUDA);
    EXPECT_EQ(d.name(), absl::StrCat("cuda:", i - 1));
    EXPECT_TRUE(absl::StartsWith(d.uuid(), "GPU-")) << d.uuid();
    EXPECT_FALSE(d.model().empty());
    EXPECT_GT(d.total_memory_bytes(), uint64_t{1} << 30);
    EXPECT_LE(d.free_memory_bytes(), d.total_memory_bytes());
  }
  EXPECT_EQ(info->default_device(), "cuda:0");
  bool ipc = false;
  for (int d : info->deliveries()) ipc = ipc || d == v1::DELIVERY_KIND_CUDA_IPC;
  // CUDA IPC delivery is served on CUDA devices (server/cuda_ipc_slots.h), and advertised per device.
  EXPECT_TRUE(ipc);
  bool device_ipc = false;
  for (int d : info->devices(1).deliveries()) device_ipc = device_ipc || d == v1::DELIVERY_KIND_CUDA_IPC;
  EXPECT_TRUE(device_ipc);

  const std::string uuid = info->devices(info->devices_size() - 1).uuid();
  absl::StatusOr<v1::ServerInfo> by_uuid = InfoWithDevice(uuid);
  ASSERT_TRUE(by_uuid.ok()) << by_uuid.status();
  EXPECT_EQ(by_uuid->default_device(), info->devices(info->devices_size() - 1).name());

  const CommandResult missing =
      RunCommand({kAugmentd, "--listen=127.0.0.1:0", absl::StrCat("--device=cuda:", info->devices_size())});
  EXPECT_EQ(missing.exit_status, 2) << missing.output;
  EXPECT_TRUE(absl::StrContains(missing.output, "not found")) << missing.output;
}

// Fresh pseudo-random inline tensor (never zeros): images in [-2, 2), labels -1..3 in blocks.
v1::Tensor RandomTensor(v1::DType dtype, const std::vector<int64_t>& shape, uint32_t seed) {
  v1::Tensor t;
  t.set_dtype(dtype);
  int64_t n = 1;
  for (int64_t d : shape) {
    t.add_shape(d);
    n *= d;
  }
  uint32_t x = seed * 2654435761u + 12345u;
  auto next = [&x] { return x = x * 1664525u + 1013904223u; };
  if (dtype == v1::DTYPE_FLOAT32) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& f : v) f = static_cast<float>(next() >> 8) / 4194304.0f - 2.0f;
    t.set_inline_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
  } else {
    std::vector<int16_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<int16_t>(((i / 5) * 7 + (next() >> 30)) % 5) - 1;
    t.set_inline_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int16_t)));
  }
  return t;
}

std::unique_ptr<grpc::ClientContext> Deadline() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  return ctx;
}

TEST(GpuSessionTest, CudaSessionMatchesCpuSession) {
  std::unique_ptr<Subprocess> server = Subprocess::Start({kAugmentd, "--listen=127.0.0.1:0", "--device=auto"});
  ASSERT_TRUE(server != nullptr && server->WaitForOutput("serving on", absl::Seconds(60)))
      << (server ? server->Output() : "");
  const std::vector<std::string> addresses = ServingAddresses(server->Output());
  ASSERT_EQ(addresses.size(), 1u) << server->Output();
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(addresses[0], absl::Seconds(10));
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<v1::ServerInfo> info = (*client)->GetServerInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  if (info->devices_size() < 2) GTEST_SKIP() << "no CUDA device on this machine";

  // Same session config (every transform forced on would also work; default probabilities over 8 samples
  // exercise rotation, scaling, the crop shortcut and the intensity chain), one on each device.
  std::vector<v1::AugmentResponse> out(2);
  const std::vector<std::string> devices = {"cpu", "cuda:0"};
  for (size_t k = 0; k < devices.size(); ++k) {
    v1::OpenSessionRequest open;
    v1::SessionConfig& c = *open.mutable_config();
    c.mutable_pipeline()->set_preset(v1::PRESET_NNUNET_DEFAULT);
    v1::TrainerConfig& trainer = *c.mutable_pipeline()->mutable_trainer();
    for (int i = 0; i < 3; ++i) trainer.add_patch_size(24);
    for (double f : {1.0, 0.5, 0.25}) {  // three deep-supervision levels
      v1::Scale& scale = *trainer.add_deep_supervision_scales();
      for (int i = 0; i < 3; ++i) scale.add_factors(f);
    }
    c.mutable_patch()->set_num_image_channels(2);
    c.set_batch_size(8);
    c.set_seed(20261129);
    c.set_device(devices[k]);
    v1::OpenSessionResponse opened;
    grpc::Status s = (*client)->stub().OpenSession(Deadline().get(), open, &opened);
    RememberToken(opened);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(opened.device().name(), devices[k]) << "the session must run where it was asked to";
    std::vector<int64_t> shape = {8, 2};
    for (int64_t p : opened.initial_patch_size()) shape.push_back(p);
    std::vector<int64_t> seg_shape = shape;
    seg_shape[1] = 1;
    v1::AugmentRequest request;
    request.set_session_id(opened.session_id());
    request.set_session_token(TokenOf(opened.session_id()));
    request.set_batch_index(3);
    *request.mutable_image() = RandomTensor(v1::DTYPE_FLOAT32, shape, 7);
    *request.mutable_segmentation() = RandomTensor(v1::DTYPE_INT16, seg_shape, 7);
    s = (*client)->stub().Augment(Deadline().get(), request, &out[k]);
    ASSERT_TRUE(s.ok()) << devices[k] << ": " << s.error_message();
  }

  const v1::Batch& cpu = out[0].batch();
  const v1::Batch& gpu = out[1].batch();
  ASSERT_EQ(cpu.targets_size(), gpu.targets_size());
  ASSERT_EQ(cpu.targets_size(), 3);
  for (int k = 0; k < cpu.targets_size(); ++k) {
    EXPECT_EQ(cpu.targets(k).inline_data(), gpu.targets(k).inline_data()) << "label level " << k;
  }
  const std::string& a = cpu.image().inline_data();
  const std::string& b = gpu.image().inline_data();
  ASSERT_EQ(a.size(), b.size());
  std::vector<float> fa(a.size() / 4), fb(b.size() / 4);
  std::memcpy(fa.data(), a.data(), a.size());
  std::memcpy(fb.data(), b.data(), b.size());
  const auto [lo, hi] = std::minmax_element(fa.begin(), fa.end());
  const float range = std::max(*hi - *lo, 1e-6f);
  float max_err = 0.0f;
  for (size_t i = 0; i < fa.size(); ++i) max_err = std::max(max_err, std::fabs(fa[i] - fb[i]));
  EXPECT_LE(max_err, 1e-4f * range) << "max |cpu - cuda| = " << max_err << " over range " << range;
  std::printf("[cuda session] B=8 C=2 labels identical at %d levels, image max|err|/range %.3g\n",
              cpu.targets_size(), static_cast<double>(max_err / range));

  server->Signal(SIGTERM);
  EXPECT_EQ(server->WaitForExit(absl::Seconds(30)), 0) << server->Output();
}

}  // namespace
}  // namespace augmentd
