// Fault tests against the real `augmentd` binary (CPU device; issue 9). What tests/integration does not cover:
//   - server restart (SIGKILL, a crash) + client resume by batch index → the same batches, byte for byte, in
//     dataset mode (StreamBatches from start_batch_index) and in patch mode (Augment with the same index);
//   - corrupt / truncated dataset files: a session whose case file is truncated gets DATA_LOSS naming the
//     file (at OpenSession or on the stream, whichever touches it first), while a concurrent session on an
//     intact dataset streams on, and the server stays healthy (new sessions open and stream);
//   - a file truncated in the middle of a session: either the damage is seen (DATA_LOSS naming the file) or
//     the case was already in memory (batches keep coming) — never another code, a hang or a crash.
// Unit-level corruption sweeps of the readers are in augment/dataset/reader_corruption_test.cc.
#include <grpcpp/client_context.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/session_tokens.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "augment/dataset/test_util.h"
#include "augmentd/v1/service.grpc.pb.h"
#include "client/client.h"
#include "gtest/gtest.h"
#include "tests/integration/subprocess.h"

namespace augmentd {
namespace {

namespace ds = ::augmentd::dataset::testing;
using ::augmentd::testing::ServingAddresses;
using ::augmentd::testing::Subprocess;

const std::string kAugmentd = ::augmentd::testing::AugmentdBinary(AUGMENTD_BIN_PATH);

std::unique_ptr<grpc::ClientContext> Ctx(absl::Duration deadline = absl::Seconds(60)) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  return ctx;
}

// One running server and a client connected to it.
struct Server {
  std::unique_ptr<Subprocess> process;
  std::unique_ptr<Client> client;

  static Server Start(const std::string& dataset_root) {
    Server s;
    s.process = Subprocess::Start({kAugmentd, "--listen=127.0.0.1:0", "--device=cpu", "--dataset_root=" + dataset_root,
                                   "--batch_workers=2"});
    EXPECT_NE(s.process, nullptr);
    if (s.process == nullptr) return s;
    EXPECT_TRUE(s.process->WaitForOutput("serving on", absl::Seconds(60))) << s.process->Output();
    const std::vector<std::string> addresses = ServingAddresses(s.process->Output());
    EXPECT_FALSE(addresses.empty()) << s.process->Output();
    if (addresses.empty()) return s;
    absl::StatusOr<std::unique_ptr<Client>> c = Client::Connect(addresses[0]);
    EXPECT_TRUE(c.ok()) << c.status();
    if (c.ok()) s.client = *std::move(c);
    return s;
  }
};

v1::SessionConfig DatasetConfig(const std::string& dataset, uint64_t seed) {
  v1::SessionConfig c;
  c.mutable_pipeline()->set_preset(v1::PRESET_NNUNET_DEFAULT);
  c.mutable_dataset()->set_dataset_path(dataset);
  c.set_batch_size(2);
  c.set_seed(seed);
  c.set_prefetch_depth(2);
  return c;
}

v1::SessionConfig PatchConfig(uint64_t seed) {
  v1::SessionConfig c;
  c.mutable_pipeline()->set_preset(v1::PRESET_NNUNET_DEFAULT);
  for (int i = 0; i < 3; ++i) c.mutable_pipeline()->mutable_trainer()->add_patch_size(8);
  c.mutable_patch()->set_num_image_channels(1);
  c.set_batch_size(1);
  c.set_seed(seed);
  return c;
}

grpc::Status Open(Client& client, const v1::SessionConfig& config, uint64_t start, std::string* id) {
  v1::OpenSessionRequest request;
  *request.mutable_config() = config;
  request.set_start_batch_index(start);
  v1::OpenSessionResponse response;
  grpc::Status s = client.stub().OpenSession(Ctx().get(), request, &response);
  RememberToken(response);
  *id = response.session_id();
  return s;
}

struct StreamResult {
  std::vector<v1::Batch> batches;
  grpc::Status status;
};

// One StreamBatches call granting `count` credits and asking for at most `count` batches.
StreamResult Stream(Client& client, const std::string& id, uint32_t count) {
  StreamResult r;
  auto ctx = Ctx(absl::Seconds(120));
  auto stream = client.stub().StreamBatches(ctx.get());
  v1::StreamBatchesRequest req;
  req.mutable_start()->set_session_id(id);
  req.mutable_start()->set_session_token(TokenOf(id));
  req.mutable_start()->set_initial_credits(count);
  req.mutable_start()->set_max_batches(count);
  stream->Write(req);
  v1::StreamBatchesResponse response;
  while (stream->Read(&response)) {
    if (response.has_batch()) r.batches.push_back(response.batch());
  }
  stream->WritesDone();
  r.status = stream->Finish();
  return r;
}

void ExpectSameBatch(const v1::Batch& a, const v1::Batch& b) {
  EXPECT_EQ(a.batch_index(), b.batch_index());
  EXPECT_EQ(a.image().inline_data(), b.image().inline_data()) << "batch " << a.batch_index();
  ASSERT_EQ(a.targets_size(), b.targets_size());
  for (int k = 0; k < a.targets_size(); ++k) EXPECT_EQ(a.targets(k).inline_data(), b.targets(k).inline_data());
  ASSERT_EQ(a.samples_size(), b.samples_size());
  for (int j = 0; j < a.samples_size(); ++j) {
    EXPECT_EQ(a.samples(j).sample_index(), b.samples(j).sample_index());
    EXPECT_EQ(a.samples(j).case_id(), b.samples(j).case_id());
  }
}

const std::vector<ds::TinyCase> kCases = {{"c0", {12, 10, 14}}, {"c1", {16, 12, 10}}, {"c2", {9, 11, 13}}};

TEST(FaultTest, RestartedServerResumesByBatchIndexWithTheSameBatches) {
  ds::ScratchDir scratch;
  const std::string dataset = ds::MakeTinyDataset(scratch.path(), kCases, /*b2nd=*/true);
  std::vector<v1::Batch> before;
  v1::AugmentResponse patch_before;
  v1::AugmentRequest patch_request;
  {
    Server a = Server::Start(scratch.path());
    ASSERT_NE(a.client, nullptr);
    std::string id;
    ASSERT_TRUE(Open(*a.client, DatasetConfig(dataset, 21), 0, &id).ok());
    StreamResult r = Stream(*a.client, id, 6);
    ASSERT_TRUE(r.status.ok()) << r.status.error_message();
    ASSERT_EQ(r.batches.size(), 6u);
    before = r.batches;

    v1::OpenSessionRequest open;
    *open.mutable_config() = PatchConfig(5);
    v1::OpenSessionResponse opened;
    ASSERT_TRUE(a.client->stub().OpenSession(Ctx().get(), open, &opened).ok());
    RememberToken(opened);
    v1::Tensor image, seg;
    image.set_dtype(v1::DTYPE_FLOAT32);
    seg.set_dtype(v1::DTYPE_INT16);
    int64_t n = 1;
    for (v1::Tensor* t : {&image, &seg}) {
      t->add_shape(1);  // batch
      t->add_shape(1);  // channels
    }
    for (int64_t p : opened.initial_patch_size()) {
      image.add_shape(p);
      seg.add_shape(p);
      n *= p;
    }
    std::vector<float> pixels(static_cast<size_t>(n));
    std::vector<int16_t> labels(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      pixels[static_cast<size_t>(i)] = static_cast<float>(i % 37) * 0.1f;
      labels[static_cast<size_t>(i)] = static_cast<int16_t>((i / 50) % 3);
    }
    image.set_inline_data(ds::Bytes(pixels));
    seg.set_inline_data(ds::Bytes(labels));
    patch_request.set_batch_index(9);
    *patch_request.mutable_image() = image;
    *patch_request.mutable_segmentation() = seg;
    patch_request.set_session_id(opened.session_id());
    patch_request.set_session_token(TokenOf(opened.session_id()));
    ASSERT_TRUE(a.client->stub().Augment(Ctx().get(), patch_request, &patch_before).ok());
    a.process->Signal(SIGKILL);  // a crash: no drain
    EXPECT_EQ(a.process->WaitForExit(absl::Seconds(30)), -SIGKILL);
    a.client.reset();
  }
  Server b = Server::Start(scratch.path());
  ASSERT_NE(b.client, nullptr);
  std::string id;
  ASSERT_TRUE(Open(*b.client, DatasetConfig(dataset, 21), /*start=*/3, &id).ok());
  StreamResult r = Stream(*b.client, id, 3);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  ASSERT_EQ(r.batches.size(), 3u);
  for (size_t i = 0; i < 3; ++i) ExpectSameBatch(before[3 + i], r.batches[i]);

  // Patch mode: the same session config and batch index on the new server → the same bytes.
  v1::OpenSessionRequest open;
  *open.mutable_config() = PatchConfig(5);
  v1::OpenSessionResponse opened;
  ASSERT_TRUE(b.client->stub().OpenSession(Ctx().get(), open, &opened).ok());
    RememberToken(opened);
  patch_request.set_session_id(opened.session_id());
  patch_request.set_session_token(TokenOf(opened.session_id()));
  v1::AugmentResponse patch_after;
  ASSERT_TRUE(b.client->stub().Augment(Ctx().get(), patch_request, &patch_after).ok());
  ExpectSameBatch(patch_before.batch(), patch_after.batch());
  b.process->Signal(SIGTERM);
  EXPECT_EQ(b.process->WaitForExit(absl::Seconds(30)), 0) << b.process->Output();
}

// Truncates `path` to `fraction` of its size.
void Truncate(const std::string& path, double fraction) {
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, static_cast<uintmax_t>(static_cast<double>(size) * fraction));
}

TEST(FaultTest, TruncatedCaseFileGivesDataLossNamingItAndOtherSessionsStream) {
  ds::ScratchDir scratch;
  const std::string broken_root = scratch.Join("broken"), good_root = scratch.Join("good");
  std::filesystem::create_directories(broken_root);
  std::filesystem::create_directories(good_root);
  const std::string broken = ds::MakeTinyDataset(broken_root, kCases, /*b2nd=*/true);
  const std::string good = ds::MakeTinyDataset(good_root, kCases, /*b2nd=*/true);
  Truncate(broken + "/nnUNetPlans_3d_fullres/c1.b2nd", 0.5);
  Server s = Server::Start(scratch.path());
  ASSERT_NE(s.client, nullptr);

  // A session on the intact dataset streams throughout, concurrently with the damaged one.
  std::string good_id;
  ASSERT_TRUE(Open(*s.client, DatasetConfig(good, 1), 0, &good_id).ok());
  StreamResult good_result;
  std::thread good_thread([&] { good_result = Stream(*s.client, good_id, 12); });

  std::string broken_id;
  const grpc::Status opened = Open(*s.client, DatasetConfig(broken, 2), 0, &broken_id);
  grpc::Status failure = opened;
  if (opened.ok()) {
    // c1 is sampled within a few batches (3 cases, 2 samples per batch).
    StreamResult r = Stream(*s.client, broken_id, 30);
    failure = r.status;
    for (const v1::Batch& b : r.batches) {
      EXPECT_EQ(b.session_id(), broken_id);
      for (const v1::SampleInfo& info : b.samples()) EXPECT_NE(info.case_id(), "c1") << "a batch read the broken case";
    }
  }
  EXPECT_EQ(failure.error_code(), grpc::StatusCode::DATA_LOSS) << failure.error_message();
  EXPECT_TRUE(absl::StrContains(failure.error_message(), "c1.b2nd")) << failure.error_message();

  good_thread.join();
  ASSERT_TRUE(good_result.status.ok()) << good_result.status.error_message();
  ASSERT_EQ(good_result.batches.size(), 12u);
  for (size_t i = 0; i < good_result.batches.size(); ++i) {
    EXPECT_EQ(good_result.batches[i].session_id(), good_id);
    EXPECT_EQ(good_result.batches[i].batch_index(), i);
  }
  // Still healthy: a new session on the intact dataset opens and streams.
  std::string again;
  ASSERT_TRUE(Open(*s.client, DatasetConfig(good, 3), 0, &again).ok());
  EXPECT_EQ(Stream(*s.client, again, 2).batches.size(), 2u);
  s.process->Signal(SIGTERM);
  EXPECT_EQ(s.process->WaitForExit(absl::Seconds(30)), 0) << s.process->Output();
}

TEST(FaultTest, FileTruncatedMidSessionIsDataLossOrAlreadyInMemory) {
  ds::ScratchDir scratch;
  const std::string dataset = ds::MakeTinyDataset(scratch.path(), kCases, /*b2nd=*/true);
  Server s = Server::Start(scratch.path());
  ASSERT_NE(s.client, nullptr);
  std::string id;
  ASSERT_TRUE(Open(*s.client, DatasetConfig(dataset, 4), 0, &id).ok());
  StreamResult first = Stream(*s.client, id, 2);
  ASSERT_TRUE(first.status.ok()) << first.status.error_message();
  for (const char* f : {"c0.b2nd", "c1_seg.b2nd", "c2.b2nd"}) {
    Truncate(dataset + "/nnUNetPlans_3d_fullres/" + f, 0.3);
  }
  StreamResult rest = Stream(*s.client, id, 20);
  if (!rest.status.ok()) {
    EXPECT_EQ(rest.status.error_code(), grpc::StatusCode::DATA_LOSS) << rest.status.error_message();
    EXPECT_TRUE(absl::StrContains(rest.status.error_message(), ".b2nd")) << rest.status.error_message();
  } else {
    EXPECT_EQ(rest.batches.size(), 20u);
  }
  for (size_t i = 0; i < rest.batches.size(); ++i) EXPECT_EQ(rest.batches[i].batch_index(), 2 + i);
  v1::GetStatsResponse stats;
  EXPECT_TRUE(s.client->stub().GetStats(Ctx().get(), v1::GetStatsRequest(), &stats).ok());
  s.process->Signal(SIGTERM);
  EXPECT_EQ(s.process->WaitForExit(absl::Seconds(30)), 0) << s.process->Output();
}

}  // namespace
}  // namespace augmentd
