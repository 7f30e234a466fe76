// tests/fuzz/make_seeds.cc — writes the seed corpora of the fuzz targets into <out>/<target>/ (tiny files:
// valid inputs of each format, from the dataset layer's test writers and the proto messages). Usage:
//   fuzz_make_seeds tests/fuzz/corpus
#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <vector>

#include "augment/dataset/test_util.h"
#include "augmentd/v1/batch.pb.h"
#include "augmentd/v1/session.pb.h"

namespace ds = augmentd::dataset;
namespace dt = augmentd::dataset::testing;
namespace v1 = ::augmentd::v1;

namespace {

std::string g_out;

void Seed(const std::string& target, const std::string& name, const std::string& bytes) {
  ::mkdir((g_out + "/" + target).c_str(), 0755);
  dt::WriteFile(g_out + "/" + target + "/" + name, bytes);
}

v1::OpenSessionRequest PatchRequest() {
  v1::OpenSessionRequest r;
  v1::SessionConfig* c = r.mutable_config();
  c->set_name("seed");
  c->set_batch_size(2);
  c->set_seed(7);
  c->mutable_pipeline()->set_preset(v1::PRESET_NNUNET_DEFAULT);
  for (int i = 0; i < 3; ++i) c->mutable_pipeline()->mutable_trainer()->add_patch_size(8);
  c->mutable_patch()->set_num_image_channels(1);
  for (int i = 0; i < 3; ++i) c->mutable_patch()->add_input_patch_size(12);
  return r;
}

v1::PipelineSpec ExplicitPipeline() {
  v1::PipelineSpec p;
  v1::TransformSpec* noise = p.add_transforms();
  noise->set_kind(v1::GAUSSIAN_NOISE);
  noise->set_apply_probability(0.5);
  noise->mutable_gaussian_noise()->mutable_noise_variance()->mutable_uniform()->set_min(0);
  noise->mutable_gaussian_noise()->mutable_noise_variance()->mutable_uniform()->set_max(0.1);
  v1::TransformSpec* mirror = p.add_transforms();
  mirror->set_kind(v1::MIRROR);
  for (int a : {0, 1, 2}) mirror->mutable_mirror()->add_allowed_axes(a);
  return p;
}

v1::Tensor InlineTensor(v1::DType dtype, const std::vector<int64_t>& shape, size_t element_size) {
  v1::Tensor t;
  t.set_dtype(dtype);
  size_t n = 1;
  for (int64_t d : shape) {
    t.add_shape(d);
    n *= static_cast<size_t>(d);
  }
  t.set_inline_data(std::string(n * element_size, '\0'));
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  g_out = argv[1];
  ::mkdir(g_out.c_str(), 0755);
  dt::ScratchDir scratch;

  // .npy
  Seed("npy_fuzz", "f32_1x3x3x2.npy", dt::NpyBytes(ds::DType::kFloat32, {1, 3, 3, 2}, dt::Bytes(dt::Iota(18))));
  Seed("npy_fuzz", "i16_2x2.npy", dt::NpyBytes(ds::DType::kInt16, {2, 2}, dt::Bytes(std::vector<int16_t>{1, -1, 0, 2})));
  Seed("npy_fuzz", "i8_fortran.npy", dt::NpyBytes(ds::DType::kInt8, {2, 2}, std::string(4, '\1'), /*fortran=*/true));

  // .npz: stored and deflated data/seg members.
  const std::string data = dt::NpyBytes(ds::DType::kFloat32, {1, 2, 2, 2}, dt::Bytes(dt::Iota(8)));
  const std::string seg = dt::NpyBytes(ds::DType::kInt8, {1, 2, 2, 2}, std::string(8, '\1'));
  Seed("npz_fuzz", "stored.npz", dt::ZipBytes({{"data.npy", data}, {"seg.npy", seg}}, /*deflate=*/false));
  Seed("npz_fuzz", "deflated.npz", dt::ZipBytes({{"data.npy", data}, {"seg.npy", seg}}, /*deflate=*/true));

  // .b2nd: LZ4HC + shuffle and ZSTD without filter, with partial edge chunks.
  const std::string b1 = scratch.Join("a.b2nd"), b2 = scratch.Join("b.b2nd");
  dt::WriteB2nd(b1, ds::DType::kFloat32, {1, 5, 4, 3}, dt::Bytes(dt::Iota(60)), {1, 4, 4, 2}, {1, 2, 2, 2});
  dt::WriteB2nd(b2, ds::DType::kInt16, {1, 3, 3, 3}, dt::Bytes(std::vector<int16_t>(27, 1)), {1, 2, 2, 2},
                {1, 1, 2, 2}, dt::B2ndCodec::kZstd, /*shuffle=*/false);
  Seed("b2nd_fuzz", "f32_lz4hc.b2nd", dt::ReadFile(b1));
  Seed("b2nd_fuzz", "i16_zstd.b2nd", dt::ReadFile(b2));

  // JSON: the miniature dataset's plans, dataset.json and splits.
  const std::string dir = dt::MakeTinyDataset(scratch.path(), {{"c0", {8, 8, 8}}, {"c1", {9, 8, 7}}}, true);
  Seed("json_fuzz", "plans.json", dt::ReadFile(dir + "/nnUNetPlans.json"));
  Seed("json_fuzz", "dataset.json", dt::ReadFile(dir + "/dataset.json"));
  Seed("json_fuzz", "splits.json", dt::ReadFile(dir + "/splits_final.json"));
  Seed("json_fuzz", "regions.json",
       R"({"labels": {"background": 0, "whole": [1, 2], "core": 2, "ignore": 3}, "regions_class_order": [1, 2]})");

  // Paths (relative to the guard's root, or absolute).
  int i = 0;
  for (const char* p : {"ds", "ds/a", "ds/./a/", "link_in/a", "link_out/secret", "link_sibling", "../outside",
                        "/etc/passwd", "//ds//a", "ds/a/.."}) {
    Seed("path_guard_fuzz", "p" + std::to_string(i++), p);
  }

  // Requests: selector byte, then the message.
  Seed("request_fuzz", "open_patch", std::string(1, '\0') + PatchRequest().SerializeAsString());
  v1::OpenSessionRequest dsr = PatchRequest();
  dsr.mutable_config()->mutable_pipeline()->mutable_trainer()->clear_patch_size();
  dsr.mutable_config()->mutable_dataset()->set_dataset_path("/tmp/augmentd-fuzz-request/Dataset001_Tiny");
  dsr.set_start_batch_index(3);
  Seed("request_fuzz", "open_dataset", std::string(1, '\0') + dsr.SerializeAsString());
  v1::OpenSessionRequest ex = PatchRequest();
  *ex.mutable_config()->mutable_pipeline() = ExplicitPipeline();
  Seed("request_fuzz", "open_explicit", std::string(1, '\0') + ex.SerializeAsString());
  v1::OpenSessionRequest shm = PatchRequest();
  shm.add_host_shm_regions()->set_name("in");
  Seed("request_fuzz", "open_shm", std::string(1, '\0') + shm.SerializeAsString());
  v1::AugmentRequest aug;
  aug.set_session_id("fuzz");
  aug.set_batch_index(5);
  *aug.mutable_image() = InlineTensor(v1::DTYPE_FLOAT32, {1, 1, 8, 8, 8}, 4);
  *aug.mutable_segmentation() = InlineTensor(v1::DTYPE_INT16, {1, 1, 8, 8, 8}, 2);
  Seed("request_fuzz", "augment", std::string(1, '\1') + aug.SerializeAsString());
  v1::AugmentRequest shm_aug = aug;
  shm_aug.mutable_image()->mutable_host_shm()->set_region("in");
  shm_aug.mutable_image()->mutable_host_shm()->set_byte_size(2048);
  Seed("request_fuzz", "augment_shm", std::string(1, '\1') + shm_aug.SerializeAsString());
  Seed("request_fuzz", "pipeline", std::string(1, '\2') + ExplicitPipeline().SerializeAsString());
  std::printf("seeds written to %s\n", g_out.c_str());
  return 0;
}
