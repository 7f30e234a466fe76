// Dataset mode through the real `augmentd` binary with data echoing and the host case cache (issue 6):
//   - echo_factor 2: the two samples of a batch share case and box (SampleInfo) and differ after augmentation;
//   - resuming a session at batch k reproduces the bytes of the first session's batch k;
//   - the server runs with --dataset_host_cache / --dataset_prefetch_threads (cache shared by the sessions).
#include <grpcpp/client_context.h>
#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/integration/session_tokens.h"
#include "absl/strings/str_cat.h"
#include "augment/dataset/test_util.h"
#include "augmentd/v1/service.grpc.pb.h"
#include "client/client.h"
#include "gtest/gtest.h"
#include "tests/integration/subprocess.h"

namespace augmentd {
namespace {

const std::string kAugmentd = ::augmentd::testing::AugmentdBinary(AUGMENTD_BIN_PATH);
namespace ds = ::augmentd::dataset::testing;

class DatasetEchoCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dataset_dir_ = ds::MakeTinyDataset(scratch_.path(), {{"c0", {12, 10, 14}}, {"c1", {16, 12, 10}}, {"c2", {9, 11, 13}}},
                                       /*b2nd=*/true);
    server_ = ::augmentd::testing::Subprocess::Start(
        {kAugmentd, "--listen=127.0.0.1:0", "--device=cpu", "--dataset_root=" + scratch_.path(),
         "--dataset_host_cache=16MiB", "--dataset_prefetch_threads=1", "--batch_workers=2"});
    ASSERT_NE(server_, nullptr);
    ASSERT_TRUE(server_->WaitForOutput("serving on", absl::Seconds(30))) << server_->Output();
    const std::vector<std::string> addresses = ::augmentd::testing::ServingAddresses(server_->Output());
    ASSERT_FALSE(addresses.empty()) << server_->Output();
    absl::StatusOr<std::unique_ptr<Client>> c = Client::Connect(addresses[0]);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = *std::move(c);
  }
  void TearDown() override {
    client_.reset();
    if (server_ != nullptr) {
      server_->Signal(SIGTERM);
      EXPECT_EQ(server_->WaitForExit(absl::Seconds(30)), 0) << server_->Output();
    }
  }

  std::string Open(uint32_t echo, uint64_t start) {
    v1::OpenSessionRequest request;
    v1::SessionConfig* c = request.mutable_config();
    c->mutable_pipeline()->set_preset(v1::PRESET_NNUNET_DEFAULT);
    c->mutable_dataset()->set_dataset_path(dataset_dir_);
    c->mutable_dataset()->set_echo_factor(echo);
    c->set_batch_size(2);
    c->set_seed(5);
    request.set_start_batch_index(start);
    v1::OpenSessionResponse response;
    grpc::ClientContext ctx;
    const grpc::Status s = client_->stub().OpenSession(&ctx, request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    RememberToken(response);
    return response.session_id();
  }

  std::vector<v1::Batch> Stream(const std::string& id, uint32_t count) {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
    auto stream = client_->stub().StreamBatches(&ctx);
    v1::StreamBatchesRequest req;
    req.mutable_start()->set_session_id(id);
    req.mutable_start()->set_session_token(TokenOf(id));
    req.mutable_start()->set_initial_credits(count);
    req.mutable_start()->set_max_batches(count);
    stream->Write(req);
    std::vector<v1::Batch> out;
    v1::StreamBatchesResponse response;
    while (stream->Read(&response)) {
      if (response.has_batch()) out.push_back(response.batch());
    }
    stream->WritesDone();
    const grpc::Status s = stream->Finish();
    EXPECT_TRUE(s.ok()) << s.error_message() << server_->Output();
    return out;
  }

  ds::ScratchDir scratch_;
  std::string dataset_dir_;
  std::unique_ptr<::augmentd::testing::Subprocess> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(DatasetEchoCacheTest, EchoedPairsShareTheCropDifferAfterAugmentationAndResume) {
  const std::vector<v1::Batch> run = Stream(Open(2, 0), 4);
  ASSERT_EQ(run.size(), 4u);
  for (const v1::Batch& b : run) {
    ASSERT_EQ(b.samples_size(), 2);
    EXPECT_EQ(b.samples(0).case_id(), b.samples(1).case_id());
    EXPECT_EQ(std::vector<int64_t>(b.samples(0).bbox_lower().begin(), b.samples(0).bbox_lower().end()),
              std::vector<int64_t>(b.samples(1).bbox_lower().begin(), b.samples(1).bbox_lower().end()));
    const std::string& image = b.image().inline_data();
    EXPECT_NE(image.substr(0, image.size() / 2), image.substr(image.size() / 2)) << "batch " << b.batch_index();
  }
  const std::vector<v1::Batch> resumed = Stream(Open(2, 2), 2);
  ASSERT_EQ(resumed.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(resumed[i].batch_index(), run[i + 2].batch_index());
    EXPECT_EQ(resumed[i].image().inline_data(), run[i + 2].image().inline_data());
    ASSERT_EQ(resumed[i].targets_size(), run[i + 2].targets_size());
    EXPECT_EQ(resumed[i].targets(0).inline_data(), run[i + 2].targets(0).inline_data());
  }
  // Without echoing the two samples of a batch are independent loads (different boxes in general).
  const std::vector<v1::Batch> plain = Stream(Open(1, 0), 4);
  ASSERT_EQ(plain.size(), 4u);
  int differing_boxes = 0;
  for (const v1::Batch& b : plain) {
    differing_boxes += b.samples(0).case_id() != b.samples(1).case_id() ||
                       b.samples(0).bbox_lower(0) != b.samples(1).bbox_lower(0) ||
                       b.samples(0).bbox_lower(1) != b.samples(1).bbox_lower(1) ||
                       b.samples(0).bbox_lower(2) != b.samples(1).bbox_lower(2);
  }
  EXPECT_GT(differing_boxes, 0);
}

}  // namespace
}  // namespace augmentd
