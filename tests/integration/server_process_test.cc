// Integration tests: the real `augmentd` binary, started as a subprocess, over TCP and a unix socket.
//   - it starts, logs its serving line, answers grpc.health.v1 (SERVING) and GetServerInfo on every address;
//   - the session RPCs reject malformed requests with precise codes and the server stays healthy;
//   - bad flags / values fail with exit status 2 and one clear line; --help explains every flag;
//   - a busy TCP port or unix socket fails cleanly (exit 1, a message) and leaves the other server alone;
//   - SIGTERM and SIGINT drain and exit 0.
#include <grpcpp/client_context.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/integration/session_tokens.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "augmentd/v1/service.grpc.pb.h"
#include "client/client.h"
#include "gtest/gtest.h"
#include "tests/integration/subprocess.h"

namespace augmentd {
namespace {

const std::string kAugmentd = ::augmentd::testing::AugmentdBinary(AUGMENTD_BIN_PATH);

using ::augmentd::testing::CommandResult;
using ::augmentd::testing::PickFreePort;
using ::augmentd::testing::RunCommand;
using ::augmentd::testing::ServingAddresses;
using ::augmentd::testing::Subprocess;

constexpr absl::Duration kStartTimeout = absl::Seconds(30);
constexpr absl::Duration kExitTimeout = absl::Seconds(30);

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/augmentd_it_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ignored;  // best effort: a leftover temp dir must not fail the test
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::unique_ptr<Subprocess> StartServer(const std::vector<std::string>& flags) {
  std::vector<std::string> argv{kAugmentd};
  argv.insert(argv.end(), flags.begin(), flags.end());
  std::unique_ptr<Subprocess> server = Subprocess::Start(argv);
  EXPECT_NE(server, nullptr);
  if (server != nullptr) {
    EXPECT_TRUE(server->WaitForOutput("serving on", kStartTimeout)) << server->Output();
  }
  return server;
}

std::unique_ptr<Client> ConnectOrFail(const std::string& target) {
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(target, absl::Seconds(10));
  EXPECT_TRUE(client.ok()) << target << ": " << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

// Everything a fresh CPU server with the limits of the test must report.
void CheckServerInfo(const v1::ServerInfo& info) {
  EXPECT_EQ(info.version(), AUGMENTD_EXPECTED_VERSION);
  EXPECT_EQ(info.api_version(), "augmentd.v1");
  EXPECT_FALSE(info.build().empty());
  ASSERT_GE(info.devices_size(), 1);
  EXPECT_EQ(info.devices(0).kind(), v1::DEVICE_KIND_CPU);
  EXPECT_EQ(info.devices(0).name(), "cpu");
  EXPECT_GT(info.devices(0).total_memory_bytes(), 0u);
  EXPECT_EQ(info.default_device(), "cpu");
  EXPECT_EQ(info.limits().max_sessions(), 7u);
  EXPECT_EQ(info.limits().max_batch_size(), 5u);
  EXPECT_EQ(info.limits().max_request_bytes(), 3u << 20);
  EXPECT_FALSE(info.limits().client_shared_memory_allowed());
  std::set<std::string> names;
  for (const v1::TransformSupport& t : info.transforms()) names.insert(t.name());
  for (const char* name : {"spatial", "gaussian_noise", "gaussian_blur", "multiplicative_brightness", "contrast",
                           "simulate_low_resolution", "gamma", "mirror", "mask_image", "remove_label",
                           "convert_segmentation_to_regions", "downsample_seg_for_ds"}) {
    EXPECT_TRUE(names.count(name)) << name;
  }
  EXPECT_EQ(info.transforms_size(), v1::TransformKind_descriptor()->value_count() - 1);
  for (const v1::TransformSupport& t : info.transforms()) {
    // The engine implements the whole default trainer chain on the CPU.
    if (t.kind() <= v1::DOWNSAMPLE_SEG_FOR_DS) {
      EXPECT_TRUE(t.cpu()) << t.name();
    }
  }
  EXPECT_GE(info.presets_size(), 1);
  EXPECT_EQ(info.presets(0), v1::PRESET_NNUNET_DEFAULT);
  EXPECT_GE(info.deliveries_size(), 1);
  EXPECT_EQ(info.deliveries(0), v1::DELIVERY_KIND_INLINE);
}

// The session RPCs answer malformed requests with precise codes (session_test.cc covers them in depth).
void CheckSessionRpcsRejectBadRequests(Client& client) {
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    v1::OpenSessionResponse response;
    const grpc::Status s = client.stub().OpenSession(&ctx, v1::OpenSessionRequest(), &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  }
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    v1::GetStatsResponse response;
    const grpc::Status s = client.stub().GetStats(&ctx, v1::GetStatsRequest(), &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(response.server().active_sessions(), 0u);
  }
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    auto stream = client.stub().StreamBatches(&ctx);
    v1::StreamBatchesRequest start;
    start.mutable_start()->set_session_id("s");
    start.mutable_start()->set_session_token(TokenOf("s"));
    stream->Write(start);
    stream->WritesDone();
    v1::StreamBatchesResponse response;
    EXPECT_FALSE(stream->Read(&response));
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
  }
}

TEST(ServerProcessTest, ServesHealthAndServerInfoOverTcpAndUnixSocket) {
  TempDir dir;
  const int port = PickFreePort();
  ASSERT_GT(port, 0);
  const std::string tcp = absl::StrCat("127.0.0.1:", port);
  const std::string uds = absl::StrCat("unix://", dir.path(), "/augmentd.sock");
  std::unique_ptr<Subprocess> server =
      StartServer({"--listen=" + tcp, "--listen", uds, "--device=cpu", "--max_sessions=7", "--max_batch_size", "5",
                   "--max_request_bytes=3MiB"});
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(ServingAddresses(server->Output()), (std::vector<std::string>{tcp, uds})) << server->Output();
  struct stat st {};
  EXPECT_EQ(stat((dir.path() + "/augmentd.sock").c_str(), &st), 0);

  for (const std::string& target : {tcp, uds}) {
    SCOPED_TRACE(target);
    std::unique_ptr<Client> client = ConnectOrFail(target);
    ASSERT_NE(client, nullptr);
    absl::StatusOr<HealthStatus> health = client->CheckHealth();
    ASSERT_TRUE(health.ok()) << health.status();
    EXPECT_EQ(*health, HealthStatus::kServing);
    health = client->CheckHealth("augmentd.v1.AugmentService");
    ASSERT_TRUE(health.ok()) << health.status();
    EXPECT_EQ(*health, HealthStatus::kServing);
    EXPECT_EQ(client->CheckHealth("no.such.Service").status().code(), absl::StatusCode::kNotFound);

    absl::StatusOr<v1::ServerInfo> info = client->GetServerInfo();
    ASSERT_TRUE(info.ok()) << info.status();
    CheckServerInfo(*info);
    CheckSessionRpcsRejectBadRequests(*client);
    // Still healthy after the rejected calls.
    health = client->CheckHealth();
    ASSERT_TRUE(health.ok()) << health.status();
    EXPECT_EQ(*health, HealthStatus::kServing);
  }

  server->Signal(SIGTERM);
  EXPECT_EQ(server->WaitForExit(kExitTimeout), 0) << server->Output();
}

TEST(ServerProcessTest, PortZeroServesOnTheReportedPort) {
  std::unique_ptr<Subprocess> server = StartServer({"--listen=127.0.0.1:0", "--device=cpu"});
  ASSERT_NE(server, nullptr);
  const std::vector<std::string> addresses = ServingAddresses(server->Output());
  ASSERT_EQ(addresses.size(), 1u) << server->Output();
  EXPECT_FALSE(absl::EndsWith(addresses[0], ":0")) << addresses[0];
  std::unique_ptr<Client> client = ConnectOrFail(addresses[0]);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<v1::ServerInfo> info = client->GetServerInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->version(), AUGMENTD_EXPECTED_VERSION);
  client.reset();  // an idle C++ channel would hold the drain for up to its 5 s backup-poll period
  server->Signal(SIGINT);
  EXPECT_EQ(server->WaitForExit(kExitTimeout), 0) << server->Output();
}

TEST(ServerProcessTest, SigtermDrainsAndExitsZeroAndStopsListening) {
  TempDir dir;
  const std::string uds = absl::StrCat("unix://", dir.path(), "/drain.sock");
  std::unique_ptr<Subprocess> server = StartServer({"--listen=" + uds, "--device=cpu", "--drain_timeout=5s"});
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = ConnectOrFail(uds);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->GetServerInfo().ok());
  client.reset();
  server->Signal(SIGTERM);
  EXPECT_EQ(server->WaitForExit(kExitTimeout), 0) << server->Output();
  EXPECT_TRUE(absl::StrContains(server->Output(), "received SIGTERM: draining")) << server->Output();
  EXPECT_TRUE(absl::StrContains(server->Output(), "stopped")) << server->Output();
  EXPECT_FALSE(Client::Connect(uds, absl::Milliseconds(500)).ok());
}

TEST(ServerProcessTest, DrainIsBoundedByDrainTimeout) {
  // A connected, idle C++ client keeps the server's graceful shutdown waiting (for up to gRPC's 5 s
  // backup-poll period); --drain_timeout=1s must cut that short and still exit 0.
  TempDir dir;
  const std::string uds = absl::StrCat("unix://", dir.path(), "/bounded.sock");
  std::unique_ptr<Subprocess> server = StartServer({"--listen=" + uds, "--device=cpu", "--drain_timeout=1s"});
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = ConnectOrFail(uds);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->GetServerInfo().ok());
  const absl::Time start = absl::Now();
  server->Signal(SIGTERM);
  EXPECT_EQ(server->WaitForExit(kExitTimeout), 0) << server->Output();
  EXPECT_LT(absl::Now() - start, absl::Seconds(4)) << server->Output();
  EXPECT_FALSE(client->GetServerInfo(absl::Seconds(2)).ok());
}

TEST(ServerProcessTest, HelpExplainsEveryFlag) {
  const CommandResult r = RunCommand({kAugmentd, "--help"});
  EXPECT_EQ(r.exit_status, 0) << r.output;
  for (const char* flag : {"--listen", "--device", "--max_sessions", "--max_request_bytes", "--max_response_bytes",
                           "--max_batch_size", "--max_prefetch_depth", "--max_session_memory_bytes",
                           "--max_streams_per_session", "--allow_client_shm", "--metrics_port", "--drain_timeout",
                           "--reflection", "unix://", "cuda:N", "Default"}) {
    EXPECT_TRUE(absl::StrContains(r.output, flag)) << flag << "\n" << r.output;
  }
  const CommandResult v = RunCommand({kAugmentd, "--version"});
  EXPECT_EQ(v.exit_status, 0);
  EXPECT_TRUE(absl::StrContains(v.output, AUGMENTD_EXPECTED_VERSION)) << v.output;
}

TEST(ServerProcessTest, BadFlagsAndValuesExitTwoWithOneClearLine) {
  struct Case {
    std::vector<std::string> args;
    std::string expected;  // in the message
  };
  const std::vector<Case> cases = {
      {{"--bogus=1"}, "unknown flag '--bogus'"},
      {{"--listen"}, "needs a value"},
      {{"positional"}, "unexpected argument 'positional'"},
      {{"--listen=nohostport"}, "expected host:port"},
      {{"--listen=127.0.0.1:99999"}, "not a number in 0..65535"},
      {{"--listen=unix://relative.sock"}, "absolute path"},
      {{"--device=gpu0"}, "--device"},
      {{"--device=cuda:64"}, "not found"},
      {{"--max_sessions=0"}, "--max_sessions"},
      {{"--max_batch_size=lots"}, "--max_batch_size"},
      {{"--max_request_bytes=12XB"}, "not a byte size"},
      {{"--max_response_bytes=1KiB"}, "below the minimum"},
      {{"--drain_timeout=soon"}, "not a duration"},
      {{"--allow_client_shm=maybe"}, "not a boolean"},
      {{"--metrics_port=70000"}, "--metrics_port"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv{kAugmentd};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const CommandResult r = RunCommand(argv);
    SCOPED_TRACE(c.args[0]);
    EXPECT_EQ(r.exit_status, 2) << r.output;
    EXPECT_TRUE(absl::StrContains(r.output, c.expected)) << r.output;
    EXPECT_TRUE(absl::StartsWith(r.output, "augmentd: ")) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_FALSE(absl::StrContains(r.output, "serving on")) << r.output;
  }
}

TEST(ServerProcessTest, BusyTcpPortFailsCleanly) {
  // A plain listening socket holds the port (no SO_REUSEPORT).
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string busy = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));

  const CommandResult r = RunCommand({kAugmentd, "--listen=" + busy, "--device=cpu"});
  EXPECT_EQ(r.exit_status, 1) << r.output;
  EXPECT_TRUE(absl::StrContains(r.output, "augmentd: cannot listen on " + busy)) << r.output;
  EXPECT_FALSE(absl::StrContains(r.output, "serving on")) << r.output;
  close(fd);
}

TEST(ServerProcessTest, PortHeldByAnotherAugmentdFailsAndTheFirstKeepsServing) {
  TempDir dir;
  const std::string uds = absl::StrCat("unix://", dir.path(), "/first.sock");
  std::unique_ptr<Subprocess> first = StartServer({"--listen=127.0.0.1:0", "--listen=" + uds, "--device=cpu"});
  ASSERT_NE(first, nullptr);
  const std::vector<std::string> addresses = ServingAddresses(first->Output());
  ASSERT_EQ(addresses.size(), 2u) << first->Output();

  // Same TCP port (gRPC would share it through SO_REUSEPORT if the server allowed that).
  CommandResult r = RunCommand({kAugmentd, "--listen=" + addresses[0], "--device=cpu"});
  EXPECT_EQ(r.exit_status, 1) << r.output;
  EXPECT_TRUE(absl::StrContains(r.output, "cannot listen on")) << r.output;

  // Same unix socket (gRPC would unlink the live socket file of the first server).
  r = RunCommand({kAugmentd, "--listen=" + uds, "--device=cpu"});
  EXPECT_EQ(r.exit_status, 1) << r.output;
  EXPECT_TRUE(absl::StrContains(r.output, "already in use")) << r.output;

  // A good address next to a busy one: nothing keeps running.
  r = RunCommand({kAugmentd, "--listen=127.0.0.1:0", "--listen=" + addresses[0], "--device=cpu"});
  EXPECT_EQ(r.exit_status, 1) << r.output;

  for (const std::string& target : addresses) {
    std::unique_ptr<Client> client = ConnectOrFail(target);
    ASSERT_NE(client, nullptr);
    absl::StatusOr<HealthStatus> health = client->CheckHealth();
    ASSERT_TRUE(health.ok()) << target << ": " << health.status();
    EXPECT_EQ(*health, HealthStatus::kServing);
  }
  first->Signal(SIGTERM);
  EXPECT_EQ(first->WaitForExit(kExitTimeout), 0) << first->Output();
}

TEST(ServerProcessTest, MissingSocketDirectoryFailsCleanly) {
  const CommandResult r =
      RunCommand({kAugmentd, "--listen=unix:///nonexistent-dir-augmentd/x.sock", "--device=cpu"});
  EXPECT_EQ(r.exit_status, 1) << r.output;
  EXPECT_TRUE(absl::StrContains(r.output, "does not exist")) << r.output;
}

}  // namespace
}  // namespace augmentd
