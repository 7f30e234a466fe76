// Integration tests of sessions and batch delivery: the real `augmentd` binary (CPU device), a miniature
// nnU-Net preprocessed dataset written by the test (augment/dataset/test_util.h), TCP and unix sockets.
//   - dataset mode: StreamBatches delivers batches in index order with their session id, sample indices and
//     case ids; same (config, seed, batch index) → identical bytes, also across sessions and on resume;
//   - concurrent sessions each receive only their own batches;
//   - credits: never more batches sent than granted; half-close ends the stream with `end`;
//   - an ended stream stops counting against max_streams_per_session before its client sees the status;
//   - CloseSession frees the session (slot reusable, streams end, later calls FAILED_PRECONDITION);
//   - patch mode: unary Augment with inline tensors, deterministic per batch index;
//   - a table of bad requests gets the expected codes and the server stays healthy.
#include <grpcpp/client_context.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <set>
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

const std::string kAugmentd = ::augmentd::testing::AugmentdBinary(AUGMENTD_BIN_PATH);
using ::augmentd::testing::ServingAddresses;
using ::augmentd::testing::Subprocess;
namespace ds = ::augmentd::dataset::testing;

constexpr absl::Duration kStartTimeout = absl::Seconds(30);

std::unique_ptr<grpc::ClientContext> Ctx(absl::Duration deadline = absl::Seconds(60)) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  return ctx;
}

// A StreamBatches start message for session `id` with its owner's token (0: the field's default).
v1::StreamBatchesRequest StartRequest(const std::string& id, uint32_t credits, uint64_t start = 0,
                                      uint32_t max_batches = 0) {
  v1::StreamBatchesRequest req;
  req.mutable_start()->set_session_id(id);
  req.mutable_start()->set_session_token(TokenOf(id));
  req.mutable_start()->set_start_batch_index(start);
  req.mutable_start()->set_initial_credits(credits);
  req.mutable_start()->set_max_batches(max_batches);
  return req;
}

// A server over a tiny dataset: TCP and unix socket, --dataset_root the scratch dir.
class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dataset_dir_ = ds::MakeTinyDataset(scratch_.path(), {{"c0", {12, 10, 14}}, {"c1", {16, 12, 10}}, {"c2", {9, 11, 13}}},
                                       /*b2nd=*/true);
    uds_ = absl::StrCat("unix://", scratch_.path(), "/augmentd.sock");
    server_ = Subprocess::Start({kAugmentd, "--listen=127.0.0.1:0", "--listen=" + uds_, "--device=cpu",
                                 "--dataset_root=" + scratch_.path(), "--max_batch_size=5", "--max_sessions=6",
                                 "--max_request_bytes=1MiB", "--max_prefetch_depth=8", "--batch_workers=2"});
    ASSERT_NE(server_, nullptr);
    ASSERT_TRUE(server_->WaitForOutput("serving on", kStartTimeout)) << server_->Output();
    const std::vector<std::string> addresses = ServingAddresses(server_->Output());
    ASSERT_EQ(addresses.size(), 2u) << server_->Output();
    tcp_ = addresses[0];
    absl::StatusOr<std::unique_ptr<Client>> tcp = Client::Connect(tcp_);
    absl::StatusOr<std::unique_ptr<Client>> uds = Client::Connect(uds_);
    ASSERT_TRUE(tcp.ok()) << tcp.status();
    ASSERT_TRUE(uds.ok()) << uds.status();
    tcp_client_ = *std::move(tcp);
    uds_client_ = *std::move(uds);
  }

  void TearDown() override {
    tcp_client_.reset();
    uds_client_.reset();
    if (server_ != nullptr) {
      server_->Signal(SIGTERM);
      EXPECT_EQ(server_->WaitForExit(absl::Seconds(30)), 0) << server_->Output();
    }
  }

  v1::SessionConfig DatasetConfig(uint64_t seed, uint32_t batch_size = 2) const {
    v1::SessionConfig c;
    c.set_name("it");
    c.mutable_pipeline()->set_preset(v1::PRESET_NNUNET_DEFAULT);  // trainer from the dataset's plans
    c.mutable_dataset()->set_dataset_path(dataset_dir_);
    c.set_batch_size(batch_size);
    c.set_seed(seed);
    c.set_prefetch_depth(3);
    return c;
  }

  v1::SessionConfig PatchConfig(uint64_t seed) const {
    v1::SessionConfig c;
    c.mutable_pipeline()->set_preset(v1::PRESET_NNUNET_DEFAULT);
    for (int i = 0; i < 3; ++i) c.mutable_pipeline()->mutable_trainer()->add_patch_size(8);
    c.mutable_patch()->set_num_image_channels(1);
    c.set_batch_size(2);
    c.set_seed(seed);
    return c;
  }

  grpc::Status Open(Client& client, const v1::OpenSessionRequest& request, v1::OpenSessionResponse* response) {
    grpc::Status s = client.stub().OpenSession(Ctx().get(), request, response);
    RememberToken(*response);
    return s;
  }

  std::string OpenOrDie(Client& client, const v1::SessionConfig& config, uint64_t start = 0) {
    v1::OpenSessionRequest request;
    *request.mutable_config() = config;
    request.set_start_batch_index(start);
    v1::OpenSessionResponse response;
    const grpc::Status s = Open(client, request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response.session_id();
  }

  // One StreamBatches call with `credits` = `count` = max_batches; returns the batches, the end message and
  // the final status.
  struct StreamResult {
    std::vector<v1::Batch> batches;
    std::optional<v1::StreamEnd> end;
    grpc::Status status;
  };
  StreamResult Stream(Client& client, const std::string& id, uint64_t start, uint32_t count) {
    StreamResult r;
    auto ctx = Ctx();
    auto stream = client.stub().StreamBatches(ctx.get());
    stream->Write(StartRequest(id, count, start, count));
    v1::StreamBatchesResponse response;
    while (stream->Read(&response)) {
      if (response.has_batch()) r.batches.push_back(response.batch());
      if (response.has_end()) r.end = response.end();
    }
    stream->WritesDone();
    r.status = stream->Finish();
    return r;
  }

  v1::GetStatsResponse Stats(Client& client, const std::string& id) {
    v1::GetStatsRequest request;
    request.set_session_id(id);
    v1::GetStatsResponse response;
    const grpc::Status s = client.stub().GetStats(Ctx().get(), request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response;
  }

  ds::ScratchDir scratch_;
  std::string dataset_dir_, uds_, tcp_;
  std::unique_ptr<Subprocess> server_;
  std::unique_ptr<Client> tcp_client_, uds_client_;
};

void ExpectSameBatch(const v1::Batch& a, const v1::Batch& b) {
  EXPECT_EQ(a.batch_index(), b.batch_index());
  EXPECT_EQ(a.image().inline_data(), b.image().inline_data()) << "batch " << a.batch_index();
  ASSERT_EQ(a.targets_size(), b.targets_size());
  for (int k = 0; k < a.targets_size(); ++k) EXPECT_EQ(a.targets(k).inline_data(), b.targets(k).inline_data());
  ASSERT_EQ(a.samples_size(), b.samples_size());
  for (int j = 0; j < a.samples_size(); ++j) EXPECT_EQ(a.samples(j).case_id(), b.samples(j).case_id());
}

TEST_F(SessionTest, DatasetModeStreamsDeterministicBatchesOverUnixAndTcp) {
  const std::string a = OpenOrDie(*uds_client_, DatasetConfig(7));
  ASSERT_FALSE(a.empty());
  StreamResult ra = Stream(*uds_client_, a, 0, 4);
  ASSERT_TRUE(ra.status.ok()) << ra.status.error_message() << server_->Output();
  ASSERT_EQ(ra.batches.size(), 4u);
  ASSERT_TRUE(ra.end.has_value());
  EXPECT_EQ(ra.end->next_batch_index(), 4u);
  const std::set<std::string> cases = {"c0", "c1", "c2"};
  for (size_t i = 0; i < ra.batches.size(); ++i) {
    const v1::Batch& b = ra.batches[i];
    EXPECT_EQ(b.session_id(), a);
    EXPECT_EQ(b.batch_index(), i);
    EXPECT_EQ(b.image().dtype(), v1::DTYPE_FLOAT32);
    EXPECT_EQ(std::vector<int64_t>(b.image().shape().begin(), b.image().shape().end()),
              (std::vector<int64_t>{2, 1, 8, 8, 8}));
    EXPECT_EQ(b.image().inline_data().size(), 2u * 8 * 8 * 8 * 4);
    ASSERT_EQ(b.targets_size(), 2);  // DS scales from the plans' strides (1, 2, 2): 1, 1/2 (last dropped)
    EXPECT_EQ(b.targets(1).shape(2), 4);
    EXPECT_EQ(b.targets(0).dtype(), v1::DTYPE_INT16);
    ASSERT_EQ(b.samples_size(), 2);
    for (int j = 0; j < 2; ++j) {
      EXPECT_EQ(b.samples(j).sample_index(), i * 2 + j);
      EXPECT_TRUE(cases.count(b.samples(j).case_id())) << b.samples(j).case_id();
    }
  }
  EXPECT_NE(ra.batches[0].image().inline_data(), ra.batches[1].image().inline_data());

  // Same config and seed in another session, over TCP: identical bytes. Resume at batch 2: identical too.
  const std::string b = OpenOrDie(*tcp_client_, DatasetConfig(7));
  StreamResult rb = Stream(*tcp_client_, b, 0, 4);
  ASSERT_TRUE(rb.status.ok()) << rb.status.error_message();
  ASSERT_EQ(rb.batches.size(), 4u);
  for (size_t i = 0; i < 4; ++i) ExpectSameBatch(ra.batches[i], rb.batches[i]);
  const std::string c = OpenOrDie(*tcp_client_, DatasetConfig(7), /*start=*/2);
  StreamResult rc = Stream(*tcp_client_, c, 0, 2);
  ASSERT_EQ(rc.batches.size(), 2u);
  ExpectSameBatch(ra.batches[2], rc.batches[0]);
  ExpectSameBatch(ra.batches[3], rc.batches[1]);
  // The session resumes where its last stream stopped (start_batch_index 0 = where it stands).
  StreamResult ra2 = Stream(*uds_client_, a, 0, 1);
  ASSERT_EQ(ra2.batches.size(), 1u);
  EXPECT_EQ(ra2.batches[0].batch_index(), 4u);
  // A different seed gives different batches.
  const std::string d = OpenOrDie(*uds_client_, DatasetConfig(8));
  StreamResult rd = Stream(*uds_client_, d, 0, 1);
  ASSERT_EQ(rd.batches.size(), 1u);
  EXPECT_NE(rd.batches[0].image().inline_data(), ra.batches[0].image().inline_data());
}

TEST_F(SessionTest, ConcurrentSessionsReceiveOnlyTheirOwnBatches) {
  constexpr int kSessions = 4;
  constexpr uint32_t kBatches = 6;
  std::vector<std::string> ids;
  for (int s = 0; s < kSessions; ++s) ids.push_back(OpenOrDie(s % 2 ? *tcp_client_ : *uds_client_, DatasetConfig(100 + s)));
  std::vector<StreamResult> results(kSessions);
  std::vector<std::thread> threads;
  for (int s = 0; s < kSessions; ++s) {
    threads.emplace_back([&, s] { results[s] = Stream(s % 2 ? *tcp_client_ : *uds_client_, ids[s], 0, kBatches); });
  }
  for (std::thread& t : threads) t.join();
  for (int s = 0; s < kSessions; ++s) {
    SCOPED_TRACE(ids[s]);
    ASSERT_TRUE(results[s].status.ok()) << results[s].status.error_message();
    ASSERT_EQ(results[s].batches.size(), kBatches);
    for (uint32_t i = 0; i < kBatches; ++i) {
      EXPECT_EQ(results[s].batches[i].session_id(), ids[s]);
      EXPECT_EQ(results[s].batches[i].batch_index(), i);
    }
  }
  // Content is that of the session's own seed: a fresh session with the same seed, alone, reproduces it.
  for (int s = 0; s < kSessions; s += 3) {
    const std::string again = OpenOrDie(*uds_client_, DatasetConfig(100 + s));
    StreamResult r = Stream(*uds_client_, again, 0, kBatches);
    ASSERT_EQ(r.batches.size(), kBatches);
    for (uint32_t i = 0; i < kBatches; ++i) ExpectSameBatch(results[s].batches[i], r.batches[i]);
  }
}

TEST_F(SessionTest, CreditsAreRespected) {
  v1::SessionConfig config = DatasetConfig(3);
  config.set_prefetch_depth(6);
  const std::string id = OpenOrDie(*uds_client_, config);
  auto ctx = Ctx();
  auto stream = uds_client_->stub().StreamBatches(ctx.get());
  v1::StreamBatchesRequest req = StartRequest(id, 2);
  ASSERT_TRUE(stream->Write(req));
  v1::StreamBatchesResponse response;
  for (uint64_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(stream->Read(&response));
    ASSERT_TRUE(response.has_batch());
    EXPECT_EQ(response.batch().batch_index(), i);
  }
  // The session's stats once `ready` holds of them, or after 10 s: a batch is counted when the server's write
  // completes, which may come after the client has read it.
  auto settled = [&](auto ready) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    v1::GetStatsResponse s = Stats(*tcp_client_, id);
    while (!(s.sessions_size() == 1 && ready(s.sessions(0))) && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(20));
      s = Stats(*tcp_client_, id);
    }
    return s;
  };
  // The server prefetches (up to 6) but must not send without credit: once the two sent batches are counted and
  // the prefetch has begun, a while longer sends nothing.
  settled([](const auto& st) { return st.batches_produced() >= 2 && st.queued_batches() >= 1; });
  absl::SleepFor(absl::Milliseconds(300));
  v1::GetStatsResponse stats = Stats(*tcp_client_, id);
  ASSERT_EQ(stats.sessions_size(), 1);
  EXPECT_EQ(stats.sessions(0).batches_produced(), 2u);
  EXPECT_EQ(stats.sessions(0).credits(), 0u);
  EXPECT_GE(stats.sessions(0).queued_batches(), 1u);
  EXPECT_LE(stats.sessions(0).queued_batches(), 6u);
  req.Clear();
  req.mutable_credit()->set_credits(3);
  ASSERT_TRUE(stream->Write(req));
  for (uint64_t i = 2; i < 5; ++i) {
    ASSERT_TRUE(stream->Read(&response));
    ASSERT_TRUE(response.has_batch());
    EXPECT_EQ(response.batch().batch_index(), i);
  }
  stats = settled([](const auto& st) { return st.batches_produced() >= 5; });
  ASSERT_EQ(stats.sessions_size(), 1);
  EXPECT_EQ(stats.sessions(0).batches_produced(), 5u);
  // Releases are accepted (no leases with inline delivery); half-close with no credit left ends the stream.
  req.Clear();
  req.mutable_release();
  ASSERT_TRUE(stream->Write(req));
  stream->WritesDone();
  ASSERT_TRUE(stream->Read(&response));
  ASSERT_TRUE(response.has_end()) << response.DebugString();
  EXPECT_EQ(response.end().next_batch_index(), 5u);
  EXPECT_FALSE(stream->Read(&response));
  EXPECT_TRUE(stream->Finish().ok());
}

// A stream stops counting against max_streams_per_session before its client sees the final status: a client that
// starts the next stream the moment one ended (a trainer's loop, a retry after DATA_LOSS) is never refused with
// RESOURCE_EXHAUSTED for the stream that ended. With a limit of 1 every back-to-back pair tests it.
TEST_F(SessionTest, AnEndedStreamNoLongerCountsAgainstTheStreamLimit) {
  const std::string uds = absl::StrCat("unix://", scratch_.path(), "/one-stream.sock");
  std::unique_ptr<Subprocess> server =
      Subprocess::Start({kAugmentd, "--listen=" + uds, "--device=cpu", "--dataset_root=" + scratch_.path(),
                         "--max_streams_per_session=1", "--batch_workers=2"});
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(server->WaitForOutput("serving on", kStartTimeout)) << server->Output();
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(uds);
  ASSERT_TRUE(client.ok()) << client.status();
  const std::string id = OpenOrDie(**client, DatasetConfig(5, /*batch_size=*/1));
  for (uint64_t i = 0; i < 60; ++i) {
    const StreamResult r = Stream(**client, id, i, 1);  // one batch, then `end` and OK
    ASSERT_TRUE(r.status.ok()) << "stream " << i << ": " << r.status.error_message();
    ASSERT_EQ(r.batches.size(), 1u) << "stream " << i;
  }
  // The limit still holds for streams that are open at once (a scope: the client's call objects go before the
  // drain below, which otherwise waits for them).
  {
    auto ctx = Ctx();
    auto open = (*client)->stub().StreamBatches(ctx.get());
    ASSERT_TRUE(open->Write(StartRequest(id, 1)));
    v1::StreamBatchesResponse response;
    ASSERT_TRUE(open->Read(&response));
    ASSERT_TRUE(response.has_batch());
    const StreamResult second = Stream(**client, id, 0, 1);
    EXPECT_EQ(second.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << second.status.error_message();
    EXPECT_TRUE(absl::StrContains(second.status.error_message(), "max_streams_per_session"))
        << second.status.error_message();
    open->WritesDone();
    while (open->Read(&response)) {
    }
    EXPECT_TRUE(open->Finish().ok());
  }
  client->reset();
  server->Signal(SIGTERM);
  EXPECT_EQ(server->WaitForExit(absl::Seconds(30)), 0) << server->Output();
}

TEST_F(SessionTest, CloseFreesTheSessionAndEndsItsStreams) {
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(OpenOrDie(*uds_client_, DatasetConfig(i)));
  {
    v1::OpenSessionRequest request;
    *request.mutable_config() = DatasetConfig(9);
    v1::OpenSessionResponse response;
    const grpc::Status s = Open(*uds_client_, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
    EXPECT_TRUE(absl::StrContains(s.error_message(), "max_sessions")) << s.error_message();
  }
  // A stream waiting for credit ends with `end` when its session is closed.
  auto ctx = Ctx();
  auto stream = uds_client_->stub().StreamBatches(ctx.get());
  ASSERT_TRUE(stream->Write(StartRequest(ids[0], 1)));
  v1::StreamBatchesResponse response;
  ASSERT_TRUE(stream->Read(&response));
  ASSERT_TRUE(response.has_batch());
  v1::CloseSessionRequest close;
  close.set_session_id(ids[0]);
  close.set_session_token(TokenOf(ids[0]));
  v1::CloseSessionResponse closed;
  ASSERT_TRUE(tcp_client_->stub().CloseSession(Ctx().get(), close, &closed).ok());
  EXPECT_EQ(closed.final_stats().session_id(), ids[0]);
  EXPECT_LE(closed.final_stats().batches_produced(), 1u);  // counted when the write completes (may race the read)
  ASSERT_TRUE(stream->Read(&response));
  ASSERT_TRUE(response.has_end()) << response.DebugString();
  EXPECT_EQ(response.end().reason(), "session closed");
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  // The slot is free again; the closed id answers FAILED_PRECONDITION everywhere.
  EXPECT_FALSE(OpenOrDie(*uds_client_, DatasetConfig(9)).empty());
  EXPECT_EQ(tcp_client_->stub().CloseSession(Ctx().get(), close, &closed).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  StreamResult r = Stream(*uds_client_, ids[0], 0, 1);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << r.status.error_message();
  v1::GetStatsResponse stats;
  ASSERT_TRUE(uds_client_->stub().GetStats(Ctx().get(), v1::GetStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.server().active_sessions(), 6u);
  EXPECT_EQ(stats.server().sessions_opened(), 7u);
  for (const std::string& id : ids) {
    close.set_session_id(id);
    close.set_session_token(TokenOf(id));
    tcp_client_->stub().CloseSession(Ctx().get(), close, &closed);
  }
}

v1::Tensor InlineTensor(v1::DType dtype, std::vector<int64_t> shape, size_t elem_size, uint32_t seed) {
  v1::Tensor t;
  t.set_dtype(dtype);
  int64_t n = 1;
  for (int64_t d : shape) {
    t.add_shape(d);
    n *= d;
  }
  std::string bytes(static_cast<size_t>(n) * elem_size, '\0');
  if (dtype == v1::DTYPE_FLOAT32) {
    auto* f = reinterpret_cast<float*>(bytes.data());
    for (int64_t i = 0; i < n; ++i) f[i] = static_cast<float>((i * 2654435761u + seed) % 1000) / 100.0f;
  } else {
    auto* s = reinterpret_cast<int16_t*>(bytes.data());
    for (int64_t i = 0; i < n; ++i) s[i] = static_cast<int16_t>((i / 97 + seed) % 3);
  }
  t.set_inline_data(bytes);
  return t;
}

TEST_F(SessionTest, PatchModeAugmentIsDeterministicPerBatchIndex) {
  v1::OpenSessionRequest open;
  *open.mutable_config() = PatchConfig(11);
  v1::OpenSessionResponse opened;
  ASSERT_TRUE(Open(*tcp_client_, open, &opened).ok());
  ASSERT_EQ(opened.initial_patch_size_size(), 3);
  EXPECT_EQ(opened.device().name(), "cpu");
  EXPECT_GT(opened.resolved_pipeline().transforms_size(), 5);
  std::vector<int64_t> shape = {2, 1};
  for (int64_t p : opened.initial_patch_size()) shape.push_back(p);
  v1::AugmentRequest request;
  request.set_session_id(opened.session_id());
  request.set_session_token(TokenOf(opened.session_id()));
  request.set_batch_index(5);
  *request.mutable_image() = InlineTensor(v1::DTYPE_FLOAT32, shape, 4, 1);
  *request.mutable_segmentation() = InlineTensor(v1::DTYPE_INT16, shape, 2, 1);
  v1::AugmentResponse r1, r2, r3;
  grpc::Status s = uds_client_->stub().Augment(Ctx().get(), request, &r1);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(r1.batch().session_id(), opened.session_id());
  EXPECT_EQ(r1.batch().batch_index(), 5u);
  EXPECT_EQ(std::vector<int64_t>(r1.batch().image().shape().begin(), r1.batch().image().shape().end()),
            (std::vector<int64_t>{2, 1, 8, 8, 8}));
  ASSERT_GE(r1.batch().targets_size(), 1);
  EXPECT_EQ(r1.batch().samples(1).sample_index(), 11u);
  ASSERT_TRUE(tcp_client_->stub().Augment(Ctx().get(), request, &r2).ok());
  EXPECT_EQ(r1.batch().image().inline_data(), r2.batch().image().inline_data());
  request.set_batch_index(6);
  ASSERT_TRUE(tcp_client_->stub().Augment(Ctx().get(), request, &r3).ok());
  EXPECT_NE(r1.batch().image().inline_data(), r3.batch().image().inline_data());
}

TEST_F(SessionTest, ExplicitTransformListInPatchMode) {
  v1::OpenSessionRequest open;
  v1::SessionConfig& c = *open.mutable_config();
  c.set_batch_size(2);
  c.set_seed(4);
  for (int i = 0; i < 3; ++i) c.mutable_patch()->add_input_patch_size(6);
  v1::TransformSpec* mirror = c.mutable_pipeline()->add_transforms();
  mirror->set_kind(v1::MIRROR);
  for (int a = 0; a < 3; ++a) mirror->mutable_mirror()->add_allowed_axes(a);
  v1::TransformSpec* noise = c.mutable_pipeline()->add_transforms();
  noise->set_kind(v1::GAUSSIAN_NOISE);
  noise->set_apply_probability(1.0);
  noise->mutable_gaussian_noise()->mutable_noise_variance()->mutable_uniform()->set_min(0.1);
  noise->mutable_gaussian_noise()->mutable_noise_variance()->mutable_uniform()->set_max(0.2);
  v1::TransformSpec* ds = c.mutable_pipeline()->add_transforms();
  ds->set_kind(v1::DOWNSAMPLE_SEG_FOR_DS);
  for (double f : {1.0, 0.5}) {
    v1::Scale* scale = ds->mutable_downsample_seg_for_ds()->add_ds_scales();
    for (int a = 0; a < 3; ++a) scale->add_factors(f);
  }
  v1::OpenSessionResponse opened;
  grpc::Status s = Open(*uds_client_, open, &opened);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(opened.resolved_pipeline().transforms_size(), 3);
  v1::AugmentRequest request;
  request.set_session_id(opened.session_id());
  request.set_session_token(TokenOf(opened.session_id()));
  *request.mutable_image() = InlineTensor(v1::DTYPE_FLOAT32, {2, 1, 6, 6, 6}, 4, 2);
  *request.mutable_segmentation() = InlineTensor(v1::DTYPE_INT16, {2, 1, 6, 6, 6}, 2, 2);
  v1::AugmentResponse response;
  s = uds_client_->stub().Augment(Ctx().get(), request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(response.batch().targets_size(), 2);
  EXPECT_EQ(response.batch().targets(1).shape(4), 3);
  EXPECT_NE(response.batch().image().inline_data(), request.image().inline_data());  // noise was added

  // Parameters of another kind, an out-of-range value: precise codes naming the entry.
  noise->mutable_mirror();
  EXPECT_EQ(Open(*uds_client_, open, &opened).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  noise->mutable_gaussian_noise()->set_p_per_channel(3.0);
  s = Open(*uds_client_, open, &opened);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "pipeline.transforms[1]")) << s.error_message();
  noise->mutable_gaussian_noise()->clear_p_per_channel();
  // bgv2's OneOfTransform([mirror, noise]) (a translated trainer's pipeline): one of them per sample.
  mirror->set_one_of_group(1);
  noise->set_one_of_group(1);
  s = Open(*uds_client_, open, &opened);
  EXPECT_TRUE(s.ok()) << s.error_message();
  mirror->set_one_of_group(0);
  noise->set_one_of_group(0);
  // A pipeline whose batches every engine would refuse is refused at OpenSession (DS skipped for some samples).
  c.mutable_pipeline()->mutable_transforms(2)->set_apply_probability(0.5);
  s = Open(*uds_client_, open, &opened);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "config.pipeline.transforms[2]: (downsample_seg_for_ds) changes the "
                                                   "output layout: apply_probability must be 1"))
      << s.error_message();
  // A crop to 4³ of the 6³ patches that some samples skip: known once the patch size is (patch mode).
  c.mutable_pipeline()->mutable_transforms(2)->set_apply_probability(1.0);
  v1::TransformSpec* crop = c.mutable_pipeline()->add_transforms();
  crop->set_kind(v1::SPATIAL);
  crop->set_apply_probability(0.5);
  for (int a = 0; a < 3; ++a) crop->mutable_spatial()->add_patch_size(4);
  c.mutable_pipeline()->mutable_transforms()->SwapElements(0, 3);  // the crop first, the mirror last
  c.mutable_pipeline()->mutable_transforms()->SwapElements(2, 3);  // DS last again
  s = Open(*uds_client_, open, &opened);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "config.pipeline.transforms[0]: (spatial) changes the sample's "
                                                   "shape [6, 6, 6] -> [4, 4, 4] but can be skipped"))
      << s.error_message();
  crop->set_apply_probability(1.0);
  s = Open(*uds_client_, open, &opened);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

TEST_F(SessionTest, BadRequestsGetPreciseCodesAndTheServerStaysHealthy) {
  const std::string dataset_id = OpenOrDie(*uds_client_, DatasetConfig(1));
  v1::OpenSessionRequest patch_open;
  *patch_open.mutable_config() = PatchConfig(1);
  v1::OpenSessionResponse patch_opened;
  ASSERT_TRUE(Open(*uds_client_, patch_open, &patch_opened).ok());
  const std::string patch_id = patch_opened.session_id();

  struct OpenCase {
    std::string what;
    std::function<void(v1::OpenSessionRequest&)> mutate;
    grpc::StatusCode code;
    std::string needle;  // the field or limit the message must name
  };
  const std::vector<OpenCase> open_cases = {
      {"no config", [](auto& r) { r.clear_config(); }, grpc::StatusCode::INVALID_ARGUMENT, "config"},
      {"batch size 0", [](auto& r) { r.mutable_config()->set_batch_size(0); }, grpc::StatusCode::INVALID_ARGUMENT,
       "config.batch_size"},
      {"batch size above the limit", [](auto& r) { r.mutable_config()->set_batch_size(6); },
       grpc::StatusCode::RESOURCE_EXHAUSTED, "max_batch_size"},
      {"prefetch above the limit", [](auto& r) { r.mutable_config()->set_prefetch_depth(9); },
       grpc::StatusCode::RESOURCE_EXHAUSTED, "max_prefetch_depth"},
      {"negative weight", [](auto& r) { r.mutable_config()->set_weight(-1); }, grpc::StatusCode::INVALID_ARGUMENT,
       "config.weight"},
      {"CUDA IPC delivery on a CPU session", [](auto& r) { r.mutable_config()->set_delivery(v1::DELIVERY_KIND_CUDA_IPC); },
       grpc::StatusCode::INVALID_ARGUMENT, "config.delivery"},
      {"unknown delivery", [](auto& r) { r.mutable_config()->set_delivery(static_cast<v1::DeliveryKind>(42)); },
       grpc::StatusCode::INVALID_ARGUMENT, "config.delivery"},
      {"int image dtype", [](auto& r) { r.mutable_config()->set_image_dtype(v1::DTYPE_INT16); },
       grpc::StatusCode::INVALID_ARGUMENT, "config.image_dtype"},
      {"float label dtype", [](auto& r) { r.mutable_config()->set_label_dtype(v1::DTYPE_FLOAT32); },
       grpc::StatusCode::INVALID_ARGUMENT, "config.label_dtype"},
      {"int64 label dtype", [](auto& r) { r.mutable_config()->set_label_dtype(v1::DTYPE_INT64); },
       grpc::StatusCode::INVALID_ARGUMENT, "config.label_dtype"},
      {"unknown device", [](auto& r) { r.mutable_config()->set_device("tpu:0"); }, grpc::StatusCode::INVALID_ARGUMENT,
       "config.device"},
      {"no pipeline", [](auto& r) { r.mutable_config()->clear_pipeline(); }, grpc::StatusCode::INVALID_ARGUMENT,
       "config.pipeline"},
      {"unknown preset", [](auto& r) { r.mutable_config()->mutable_pipeline()->set_preset(static_cast<v1::Preset>(99)); },
       grpc::StatusCode::INVALID_ARGUMENT, "config.pipeline.preset"},
      {"preset and transforms",
       [](auto& r) { r.mutable_config()->mutable_pipeline()->add_transforms()->set_kind(v1::MIRROR); },
       grpc::StatusCode::INVALID_ARGUMENT, "config.pipeline.transforms"},
      {"4-D patch size",
       [](auto& r) { r.mutable_config()->mutable_pipeline()->mutable_trainer()->add_patch_size(8); },
       grpc::StatusCode::INVALID_ARGUMENT, "trainer.patch_size"},
      {"no mode", [](auto& r) { r.mutable_config()->clear_dataset(); }, grpc::StatusCode::INVALID_ARGUMENT,
       "config.mode"},
      {"dataset outside the roots", [](auto& r) { r.mutable_config()->mutable_dataset()->set_dataset_path("/etc"); },
       grpc::StatusCode::PERMISSION_DENIED, "dataset_path"},
      {"dataset path with ..",
       [this](auto& r) { r.mutable_config()->mutable_dataset()->set_dataset_path(dataset_dir_ + "/../.."); },
       grpc::StatusCode::INVALID_ARGUMENT, "dataset_path"},
      {"missing dataset",
       [this](auto& r) { r.mutable_config()->mutable_dataset()->set_dataset_path(scratch_.path() + "/nope"); },
       grpc::StatusCode::NOT_FOUND, "dataset_path"},
      {"unknown case", [](auto& r) { r.mutable_config()->mutable_dataset()->add_case_ids("c99"); },
       grpc::StatusCode::NOT_FOUND, "c99"},
      {"oversampling above 1",
       [](auto& r) { r.mutable_config()->mutable_dataset()->set_oversample_foreground_percent(1.5); },
       grpc::StatusCode::INVALID_ARGUMENT, "oversample_foreground_percent"},
      {"echo factor", [](auto& r) { r.mutable_config()->mutable_dataset()->set_echo_factor(2000); },
       grpc::StatusCode::INVALID_ARGUMENT, "echo_factor"},
      {"client shm without permission", [](auto& r) { r.add_host_shm_regions()->set_name("x"); },
       grpc::StatusCode::PERMISSION_DENIED, "host_shm_regions"},
  };
  int checked = 0;
  for (const OpenCase& c : open_cases) {
    SCOPED_TRACE(c.what);
    v1::OpenSessionRequest request;
    *request.mutable_config() = DatasetConfig(1);
    if (c.what == "4-D patch size") {
      *request.mutable_config() = PatchConfig(1);
    }
    c.mutate(request);
    v1::OpenSessionResponse response;
    const grpc::Status s = Open(checked % 2 ? *tcp_client_ : *uds_client_, request, &response);
    EXPECT_EQ(s.error_code(), c.code) << s.error_message();
    EXPECT_TRUE(absl::StrContains(s.error_message(), c.needle)) << s.error_message();
    ++checked;
  }

  v1::CloseSessionResponse closed;
  v1::CloseSessionRequest close;
  close.set_session_id("s999-00000000");
  close.set_session_token(TokenOf("s999-00000000"));
  EXPECT_EQ(uds_client_->stub().CloseSession(Ctx().get(), close, &closed).error_code(), grpc::StatusCode::NOT_FOUND);
  close.set_session_id("");
  close.set_session_token(TokenOf(""));
  EXPECT_EQ(uds_client_->stub().CloseSession(Ctx().get(), close, &closed).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  v1::GetStatsRequest stats_request;
  stats_request.set_session_id("nope");
  v1::GetStatsResponse stats;
  EXPECT_EQ(uds_client_->stub().GetStats(Ctx().get(), stats_request, &stats).error_code(),
            grpc::StatusCode::NOT_FOUND);
  checked += 3;

  // Augment.
  std::vector<int64_t> shape = {2, 1};
  for (int64_t p : patch_opened.initial_patch_size()) shape.push_back(p);
  v1::AugmentRequest good;
  good.set_session_id(patch_id);
  good.set_session_token(TokenOf(patch_id));
  *good.mutable_image() = InlineTensor(v1::DTYPE_FLOAT32, shape, 4, 1);
  *good.mutable_segmentation() = InlineTensor(v1::DTYPE_INT16, shape, 2, 1);
  struct AugmentCase {
    std::string what;
    std::function<void(v1::AugmentRequest&)> mutate;
    grpc::StatusCode code;
    std::string needle;
  };
  const std::vector<AugmentCase> augment_cases = {
      {"unknown session", [](auto& r) { r.set_session_id("s77-1"); }, grpc::StatusCode::NOT_FOUND, "session_id"},
      {"dataset session", [&](auto& r) {
         r.set_session_id(dataset_id);
         r.set_session_token(TokenOf(dataset_id));
       }, grpc::StatusCode::FAILED_PRECONDITION,
       "dataset mode"},
      {"short inline data", [](auto& r) { r.mutable_image()->mutable_inline_data()->resize(10); },
       grpc::StatusCode::INVALID_ARGUMENT, "image.inline_data"},
      {"wrong patch shape",
       [](auto& r) {
         r.mutable_image()->set_shape(2, 5);
         r.mutable_image()->mutable_inline_data()->resize(2 * 5 * r.image().shape(3) * r.image().shape(4) * 4);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "image.shape"},
      {"no dtype", [](auto& r) { r.mutable_segmentation()->set_dtype(v1::DTYPE_UNSPECIFIED); },
       grpc::StatusCode::INVALID_ARGUMENT, "segmentation.dtype"},
      {"shared-memory input without registered regions",
       [](auto& r) { r.mutable_image()->mutable_host_shm()->set_region("r"); }, grpc::StatusCode::INVALID_ARGUMENT,
       "image.host_shm.region"},
      {"request above max_request_bytes",
       [](auto& r) { r.mutable_image()->mutable_inline_data()->resize(2u << 20); },
       grpc::StatusCode::RESOURCE_EXHAUSTED, ""},
  };
  for (const AugmentCase& c : augment_cases) {
    SCOPED_TRACE(c.what);
    v1::AugmentRequest request = good;
    c.mutate(request);
    v1::AugmentResponse response;
    const grpc::Status s = tcp_client_->stub().Augment(Ctx().get(), request, &response);
    EXPECT_EQ(s.error_code(), c.code) << s.error_message();
    EXPECT_TRUE(absl::StrContains(s.error_message(), c.needle)) << s.error_message();
    ++checked;
  }

  // StreamBatches.
  auto stream_status = [&](const std::vector<v1::StreamBatchesRequest>& messages) {
    auto ctx = Ctx();
    auto stream = uds_client_->stub().StreamBatches(ctx.get());
    for (const auto& m : messages) stream->Write(m);
    stream->WritesDone();
    v1::StreamBatchesResponse response;
    while (stream->Read(&response)) {
    }
    return stream->Finish();
  };
  v1::StreamBatchesRequest credit;
  credit.mutable_credit()->set_credits(1);
  const v1::StreamBatchesRequest start_unknown = StartRequest("s5-unknown", 0);
  const v1::StreamBatchesRequest start_patch = StartRequest(patch_id, 0);
  const v1::StreamBatchesRequest start_ok = StartRequest(dataset_id, 0);
  EXPECT_EQ(stream_status({credit}).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(stream_status({start_unknown}).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(stream_status({start_patch}).error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(stream_status({start_ok, start_ok}).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(stream_status({v1::StreamBatchesRequest()}).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(stream_status({}).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  checked += 6;
  EXPECT_GE(checked, 20);

  // Still healthy, and the good sessions still work.
  absl::StatusOr<HealthStatus> health = tcp_client_->CheckHealth();
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, HealthStatus::kServing);
  StreamResult r = Stream(*tcp_client_, dataset_id, 0, 2);
  EXPECT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.batches.size(), 2u);
  v1::AugmentResponse response;
  EXPECT_TRUE(tcp_client_->stub().Augment(Ctx().get(), good, &response).ok());
}

}  // namespace
}  // namespace augmentd
