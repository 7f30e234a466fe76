// tests/fuzz/request_fuzz.cc — libFuzzer target: request decoding and validation on the server side.
//
// Input byte 0 selects the message; the rest is its protobuf wire encoding:
//   0  OpenSessionRequest → BuildSession (server/session_config.h): every config field, limits, dtypes,
//      device, preset/explicit pipeline (PipelineFromProto), trainer config, patch mode, dataset mode against
//      a miniature dataset under kDatasetRoot (path confinement, plans/dataset.json), shm/IPC references.
//   1  AugmentRequest → TensorViewFromProto (dtypes, shapes, sizes, shm/IPC references) for image and
//      segmentation, then Session::AugmentPatches of a fixed small patch-mode session when both decode
//      (layout check against the session; the engine runs only for a matching, tiny layout).
//   2  PipelineSpec → PipelineFromProto (explicit transform lists, typed parameters → engine JSON).
// Oracle: no crash, no sanitizer report, no uncaught exception; an OK session has batch_size within limits.
#include <cstdlib>
#include <memory>
#include <string>

#include "augment/dataset/test_util.h"
#include "augment/device.h"
#include "augmentd/v1/batch.pb.h"
#include "augmentd/v1/session.pb.h"
#include "server/adapter.h"
#include "server/session_config.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace v1 = ::augmentd::v1;

// Fixed so that seed requests can name the dataset (tests/fuzz/corpus/request_fuzz/*).
constexpr char kDatasetRoot[] = "/tmp/augmentd-fuzz-request";

struct Fixture {
  augmentd::ServerOptions options;
  augmentd::DeviceInfo cpu;
  std::shared_ptr<augmentd::Session> patch_session;

  Fixture() {
    augmentd::dataset::testing::MakeTinyDataset(kDatasetRoot, {{"c0", {12, 10, 9}}, {"c1", {9, 12, 10}}},
                                                /*b2nd=*/true);
    options.dataset_roots = {kDatasetRoot};
    options.limits.max_batch_size = 8;
    cpu = augmentd::ResolveDevice("cpu").value();
    v1::OpenSessionRequest request;
    v1::SessionConfig* config = request.mutable_config();
    config->set_batch_size(1);
    config->mutable_pipeline()->set_preset(v1::PRESET_NNUNET_DEFAULT);
    for (int i = 0; i < 3; ++i) config->mutable_pipeline()->mutable_trainer()->add_patch_size(8);
    config->mutable_patch()->set_num_image_channels(1);
    for (int i = 0; i < 3; ++i) config->mutable_patch()->add_input_patch_size(8);
    absl::StatusOr<std::shared_ptr<augmentd::Session>> s = augmentd::BuildSession(request, options, cpu, "fuzz", 1);
    if (s.ok()) patch_session = *s;
  }
};

void FuzzOpenSession(const Fixture& f, const std::string& bytes) {
  v1::OpenSessionRequest request;
  if (!request.ParseFromString(bytes)) return;
  absl::StatusOr<std::shared_ptr<augmentd::Session>> s = augmentd::BuildSession(request, f.options, f.cpu, "s", 1);
  if (s.ok()) {
    const augmentd::SessionSettings& st = (*s)->settings();
    if (st.batch_size == 0 || st.batch_size > f.options.limits.max_batch_size) std::abort();
    (void)augmentd::MakeOpenSessionResponse(**s);
  }
}

void FuzzAugment(const Fixture& f, const std::string& bytes) {
  v1::AugmentRequest request;
  if (!request.ParseFromString(bytes)) return;
  absl::StatusOr<augmentd::TensorView> image = augmentd::TensorViewFromProto(request.image(), "image");
  absl::StatusOr<augmentd::TensorView> seg = augmentd::TensorViewFromProto(request.segmentation(), "segmentation");
  if (!image.ok() || !seg.ok() || f.patch_session == nullptr) return;
  // The engine only runs for the session's exact layout (1, 1, 8, 8, 8) — keep the executions cheap.
  if (image->numel() > 8 * 8 * 8 || seg->numel() > 8 * 8 * 8) return;
  absl::StatusOr<augmentd::ProducedBatch> batch = f.patch_session->AugmentPatches(request.batch_index(), *image, *seg);
  if (batch.ok()) (void)f.patch_session->MakeBatchProto(*batch);
}

void FuzzPipeline(const std::string& bytes) {
  v1::PipelineSpec spec;
  if (!spec.ParseFromString(bytes)) return;
  (void)augmentd::PipelineFromProto(spec);
  (void)augmentd::FromProto(spec.trainer());
}

}  // namespace

int augmentd::fuzz::FuzzRequest(const uint8_t* data, size_t size) {
  static const Fixture fixture;
  if (size == 0) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: FuzzOpenSession(fixture, bytes); break;
    case 1: FuzzAugment(fixture, bytes); break;
    default: FuzzPipeline(bytes); break;
  }
  return 0;
}

#ifdef AUGMENTD_LIBFUZZER_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return augmentd::fuzz::FuzzRequest(data, size); }
#endif
