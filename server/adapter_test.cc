// Tests for server/adapter.h: proto <-> engine conversions.
#include "server/adapter.h"

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "augment/cuda/engine.h"
#include "augment/registry.h"
#include "augment/testing/kind_list.h"
#include "gtest/gtest.h"

namespace augmentd {
namespace {

TEST(AdapterTest, TransformNamesAreLowerCaseEnumNamesAndRoundTrip) {
  EXPECT_EQ(TransformName(v1::SPATIAL), "spatial");
  EXPECT_EQ(TransformName(v1::GAUSSIAN_NOISE), "gaussian_noise");
  EXPECT_EQ(TransformName(v1::CONVERT_SEGMENTATION_TO_REGIONS), "convert_segmentation_to_regions");
  EXPECT_EQ(TransformName(v1::DOWNSAMPLE_SEG_FOR_DS), "downsample_seg_for_ds");
  EXPECT_EQ(TransformName(v1::RICIAN_NOISE), "rician_noise");
  EXPECT_EQ(TransformName(v1::TRANSFORM_KIND_UNSPECIFIED), "");
  EXPECT_EQ(TransformName(static_cast<v1::TransformKind>(999)), "");

  const google::protobuf::EnumDescriptor* kinds = v1::TransformKind_descriptor();
  for (int i = 0; i < kinds->value_count(); ++i) {
    const auto kind = static_cast<v1::TransformKind>(kinds->value(i)->number());
    if (kind == v1::TRANSFORM_KIND_UNSPECIFIED) continue;
    absl::StatusOr<v1::TransformKind> back = TransformKindFromName(TransformName(kind));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, kind);
  }
  EXPECT_EQ(TransformKindFromName("no_such_transform").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TransformKindFromName("transform_kind_unspecified").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TransformKindFromName("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AdapterTest, PresetNamesMatchTheEngine) {
  EXPECT_EQ(PresetName(v1::PRESET_NNUNET_DEFAULT), "nnunet_default");
  EXPECT_EQ(PresetName(v1::PRESET_NNUNET_DA5), "nnunet_da5");
  EXPECT_EQ(PresetName(v1::PRESET_NNUNET_VALIDATION), "nnunet_validation");
  EXPECT_EQ(PresetName(v1::PRESET_UNSPECIFIED), "");
  EXPECT_FALSE(EnginePresets().empty());
}

TEST(AdapterTest, TransformSupportListCoversEveryKindOnce) {
  const std::vector<v1::TransformSupport> list = TransformSupportList({"spatial", "gamma"}, {});
  EXPECT_EQ(static_cast<int>(list.size()), v1::TransformKind_descriptor()->value_count() - 1);
  std::set<int> seen;
  for (const v1::TransformSupport& t : list) {
    EXPECT_TRUE(seen.insert(t.kind()).second);
    EXPECT_EQ(t.name(), TransformName(t.kind()));
    EXPECT_EQ(t.cpu(), t.kind() == v1::SPATIAL || t.kind() == v1::GAMMA) << t.name();
    EXPECT_FALSE(t.cuda());
  }
  for (const v1::TransformSupport& t : TransformSupportList({"mirror", "gamma"}, {"mirror"})) {
    EXPECT_EQ(t.cpu(), t.kind() == v1::MIRROR || t.kind() == v1::GAMMA) << t.name();
    EXPECT_EQ(t.cuda(), t.kind() == v1::MIRROR) << t.name();
  }
}

TEST(AdapterTest, EveryEngineTransformIsAKindOfTheContract) {
  // The engine registry and the proto enum must agree on names (lower-case enum names).
  const std::vector<std::string> names = EngineTransformNames();
  EXPECT_FALSE(names.empty());
  for (const std::string& name : names) {
    EXPECT_TRUE(TransformKindFromName(name).ok()) << name;
  }
  int cpu = 0;
  for (const v1::TransformSupport& t : TransformSupportList(names, EngineCudaTransformNames())) cpu += t.cpu();
  EXPECT_EQ(cpu, static_cast<int>(names.size()));
  // Both ways: registry == proto TransformKind values == TransformSpec's `params` oneof fields (a kind needs its
  // enum value and its oneof line; the adapter maps the oneof by field name).
  const std::set<std::string> registry(names.begin(), names.end());
  std::set<std::string> enum_names, oneof_names;
  const google::protobuf::EnumDescriptor* kinds = v1::TransformKind_descriptor();
  for (int i = 0; i < kinds->value_count(); ++i) {
    const std::string name = TransformName(static_cast<v1::TransformKind>(kinds->value(i)->number()));
    if (!name.empty()) enum_names.insert(name);
  }
  const google::protobuf::OneofDescriptor* oneof = v1::TransformSpec::descriptor()->FindOneofByName("params");
  ASSERT_NE(oneof, nullptr);
  for (int i = 0; i < oneof->field_count(); ++i) oneof_names.insert(oneof->field(i)->name());
  EXPECT_EQ(enum_names, registry);
  EXPECT_EQ(oneof_names, registry);
  EXPECT_EQ(static_cast<int>(registry.size()), kNumTransformKinds);
}

// GetServerInfo documents each field of a kind's schema (augment/schema.h): type, default as JSON, range, doc.
TEST(AdapterTest, TransformSupportDocumentsTheSchemaFields) {
  bool found = false;
  for (const v1::TransformSupport& t : TransformSupportList(EngineTransformNames(), {})) {
    if (t.name() != "gamma") continue;
    found = true;
    ASSERT_EQ(t.fields_size(), 5);
    const v1::TransformField& g = t.fields(0);
    EXPECT_EQ(g.name(), "gamma");
    EXPECT_EQ(g.type(), "random_scalar");
    EXPECT_TRUE(g.required());
    EXPECT_EQ(g.default_json(), "");
    EXPECT_EQ(g.range(), "> 0");
    EXPECT_FALSE(g.doc().empty());
    for (const v1::TransformField& f : t.fields()) EXPECT_FALSE(f.doc().empty()) << f.name();
  }
  EXPECT_TRUE(found);
  for (const v1::TransformSupport& t : TransformSupportList(EngineTransformNames(), {})) {
    if (t.name() != "gaussian_noise") continue;
    ASSERT_EQ(t.fields_size(), 3);
    EXPECT_EQ(t.fields(1).name(), "p_per_channel");
    EXPECT_EQ(t.fields(1).default_json(), "1.0");
    EXPECT_EQ(t.fields(1).range(), "[0, 1]");
  }
}

// GetServerInfo's backends come from the registry: no registered CUDA backend may be reported missing (the list was
// empty before, so every transform said cuda=false).
TEST(AdapterTest, CudaSupportIsTheRegistrysBackends) {
  const std::vector<std::string> cuda_names = EngineCudaTransformNames();
  int cuda = 0;
  for (const v1::TransformSupport& t : TransformSupportList(EngineTransformNames(), cuda_names)) {
    auto kind = ParseTransformKind(t.name());
    ASSERT_TRUE(kind.ok()) << t.name();
    EXPECT_EQ(t.cuda(), HasCudaImplementation(*kind)) << t.name();
    cuda += t.cuda();
  }
  EXPECT_EQ(cuda, static_cast<int>(cuda_names.size()));
  if (CudaEngineBuilt()) {
    // Every kind but the CPU-only ones has a CUDA stage in CUDA builds; only the k-space MRI stages depend on cuFFT.
    for (const char* name : {"spatial", "gaussian_noise", "gamma", "mirror", "downsample_seg_for_ds", "median_filter",
                             "bias_field", "histogram_equalization"})
      EXPECT_NE(std::find(cuda_names.begin(), cuda_names.end(), name), cuda_names.end()) << name;
    // The one list's CPU_ONLY kinds (augment/transforms/kinds.inc) report cuda=false; every other kind but the
    // k-space stages (CUFFT: only in builds with cuFFT) reports cuda=true.
    int listed_cuda = 0;
    for (const testing::KindRow& row : testing::kKindRows) {
      const bool reported = std::find(cuda_names.begin(), cuda_names.end(), row.name) != cuda_names.end();
      if (row.cpu_only()) {
        EXPECT_FALSE(reported) << row.name;
      } else if (row.cuda != "CUFFT") {
        EXPECT_TRUE(reported) << row.name;
      }
      listed_cuda += !row.cpu_only();
    }
    EXPECT_LE(cuda, listed_cuda);
  } else {
    EXPECT_EQ(cuda, 0);
  }
}

v1::TrainerConfig Default3dFullres() {
  v1::TrainerConfig t;
  for (int i = 0; i < 3; ++i) t.add_patch_size(128);
  for (double f : {1.0, 0.5, 0.25}) {
    v1::Scale* s = t.add_deep_supervision_scales();
    for (int i = 0; i < 3; ++i) s->add_factors(f);
  }
  t.set_num_input_channels(2);
  t.add_use_mask_for_norm(false);
  t.add_use_mask_for_norm(true);
  return t;
}

TEST(AdapterTest, TrainerConfigFromProtoFeedsTheEnginePresets) {
  absl::StatusOr<TrainerConfig> c = FromProto(Default3dFullres());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->patch_size, (std::vector<int64_t>{128, 128, 128}));
  EXPECT_FALSE(c->rotation_for_da.has_value());  // unset: nnU-Net's rule
  EXPECT_FALSE(c->mirror_axes.has_value());
  ASSERT_TRUE(c->deep_supervision_scales.has_value());
  EXPECT_EQ(c->deep_supervision_scales->size(), 3u);
  EXPECT_EQ(c->num_input_channels, 2);
  EXPECT_EQ(c->use_mask_for_norm, (std::vector<bool>{false, true}));

  // The engine expands the preset named by the contract (reference §2.2: 128³ → initial patch 205³).
  absl::StatusOr<PipelineSpec> spec = PresetPipeline(PresetName(v1::PRESET_NNUNET_DEFAULT), *c);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->input_patch_size, (std::vector<int64_t>{205, 205, 205}));
  EXPECT_FALSE(spec->transforms.empty());
  for (v1::Preset preset : EnginePresets()) {
    EXPECT_TRUE(PresetPipeline(PresetName(preset), *c).ok()) << PresetName(preset);
  }

  v1::TrainerConfig t = Default3dFullres();
  t.mutable_rotation()->set_min(-0.1);
  t.mutable_rotation()->set_max(0.2);
  t.mutable_mirror_axes();  // set and empty: no mirroring
  t.set_ignore_label(3);
  t.add_regions()->add_labels(1);
  c = FromProto(t);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rotation_for_da, std::make_pair(-0.1, 0.2));
  ASSERT_TRUE(c->mirror_axes.has_value());
  EXPECT_TRUE(c->mirror_axes->empty());
  EXPECT_EQ(c->ignore_label, 3);
  ASSERT_TRUE(c->regions.has_value());
  EXPECT_EQ(c->regions->size(), 1u);
}

TEST(AdapterTest, TrainerConfigFromProtoNamesTheBadField) {
  struct Case {
    std::function<void(v1::TrainerConfig&)> mutate;
    absl::StatusCode code;
    std::string field;
  };
  const std::vector<Case> cases = {
      {[](v1::TrainerConfig& t) { t.clear_patch_size(); }, absl::StatusCode::kInvalidArgument, "trainer.patch_size"},
      {[](v1::TrainerConfig& t) { t.set_patch_size(1, 0); }, absl::StatusCode::kInvalidArgument,
       "trainer.patch_size"},
      {[](v1::TrainerConfig& t) { t.mutable_rotation()->set_min(1); }, absl::StatusCode::kInvalidArgument,
       "trainer.rotation"},
      {[](v1::TrainerConfig& t) { t.mutable_mirror_axes()->add_axes(3); }, absl::StatusCode::kInvalidArgument,
       "trainer.mirror_axes"},
      {[](v1::TrainerConfig& t) { t.mutable_deep_supervision_scales(1)->add_factors(0.5); },
       absl::StatusCode::kInvalidArgument, "trainer.deep_supervision_scales"},
      {[](v1::TrainerConfig& t) { t.mutable_deep_supervision_scales(1)->set_factors(0, 2.0); },
       absl::StatusCode::kInvalidArgument, "trainer.deep_supervision_scales"},
      {[](v1::TrainerConfig& t) { t.add_regions(); }, absl::StatusCode::kInvalidArgument, "trainer.regions"},
      {[](v1::TrainerConfig& t) { t.add_use_mask_for_norm(true); }, absl::StatusCode::kInvalidArgument,
       "trainer.use_mask_for_norm"},
      {[](v1::TrainerConfig& t) { t.set_is_cascaded(true); }, absl::StatusCode::kUnimplemented,
       "trainer.is_cascaded"},
      {[](v1::TrainerConfig& t) { t.add_initial_patch_size(205); }, absl::StatusCode::kUnimplemented,
       "trainer.initial_patch_size"},
  };
  for (const Case& c : cases) {
    v1::TrainerConfig t = Default3dFullres();
    c.mutate(t);
    const absl::Status s = FromProto(t).status();
    EXPECT_EQ(s.code(), c.code) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), c.field)) << s;
  }
}

TEST(AdapterTest, DeviceAndLimitsToProto) {
  DeviceInfo gpu{DeviceKind::kCuda, 1, "cuda:1", "NVIDIA H200", "GPU-0123", 141ull << 30, 100ull << 30};
  const v1::Device d = ToProto(gpu);
  EXPECT_EQ(d.kind(), v1::DEVICE_KIND_CUDA);
  EXPECT_EQ(d.index(), 1);
  EXPECT_EQ(d.name(), "cuda:1");
  EXPECT_EQ(d.model(), "NVIDIA H200");
  EXPECT_EQ(d.uuid(), "GPU-0123");
  EXPECT_EQ(d.total_memory_bytes(), 141ull << 30);
  EXPECT_EQ(d.free_memory_bytes(), 100ull << 30);
  EXPECT_EQ(ToProto(DeviceInfo{}).kind(), v1::DEVICE_KIND_CPU);

  ServerLimitsOptions limits;
  limits.max_sessions = 3;
  limits.max_request_bytes = 1234;
  limits.max_response_bytes = 5678;
  limits.max_batch_size = 7;
  limits.max_prefetch_depth = 9;
  limits.max_session_memory_bytes = 11;
  limits.max_streams_per_session = 2;
  limits.allow_client_shared_memory = true;
  const v1::ServerLimits l = ToProto(limits);
  EXPECT_EQ(l.max_sessions(), 3u);
  EXPECT_EQ(l.max_request_bytes(), 1234u);
  EXPECT_EQ(l.max_response_bytes(), 5678u);
  EXPECT_EQ(l.max_batch_size(), 7u);
  EXPECT_EQ(l.max_prefetch_depth(), 9u);
  EXPECT_EQ(l.max_session_memory_bytes(), 11u);
  EXPECT_EQ(l.max_streams_per_session(), 2u);
  EXPECT_TRUE(l.client_shared_memory_allowed());
}

TEST(AdapterTest, DTypesRoundTripAndUnsupportedOnesNameTheField) {
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt8, DType::kInt16, DType::kBool}) {
    absl::StatusOr<DType> back = DTypeFromProto(ToProto(t), "x");
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, t);
  }
  for (v1::DType t : {v1::DTYPE_UNSPECIFIED, v1::DTYPE_INT32, v1::DTYPE_INT64, v1::DTYPE_UINT8}) {
    absl::StatusOr<DType> r = DTypeFromProto(t, "config.image_dtype");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(r.status().message(), "config.image_dtype")) << r.status();
  }
}

TEST(AdapterTest, InlineTensorViewsAreSizeChecked) {
  v1::Tensor t;
  t.set_dtype(v1::DTYPE_INT16);
  t.add_shape(2);
  t.add_shape(3);
  t.set_inline_data(std::string(12, '\1'));
  absl::StatusOr<TensorView> v = TensorViewFromProto(t, "segmentation");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(v->dtype, DType::kInt16);
  EXPECT_EQ(v->data, t.inline_data().data());
  t.set_inline_data(std::string(11, '\1'));
  v = TensorViewFromProto(t, "segmentation");
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(v.status().message(), "segmentation.inline_data")) << v.status();
  t.add_shape(-1);
  EXPECT_EQ(TensorViewFromProto(t, "segmentation").status().code(), absl::StatusCode::kInvalidArgument);
  v1::Tensor shm;
  shm.set_dtype(v1::DTYPE_FLOAT32);
  shm.mutable_host_shm()->set_region("r");
  EXPECT_EQ(TensorViewFromProto(shm, "image").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TensorViewFromProto(v1::Tensor(), "image").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AdapterTest, LabelTensorsConvertToTheRequestedDType) {
  HostTensor labels = HostTensor::Empty({4}, DType::kInt16);
  const int16_t values[] = {-1, 0, 2, 100};
  std::copy(values, values + 4, labels.data<int16_t>());
  v1::Tensor out;
  ASSERT_TRUE(ToProto(labels, "target_0", DType::kInt8, &out).ok());
  EXPECT_EQ(out.dtype(), v1::DTYPE_INT8);
  EXPECT_EQ(out.inline_data(), std::string("\xff\x00\x02\x64", 4));
  ASSERT_TRUE(ToProto(labels, "target_0", DType::kInt16, &out).ok());
  EXPECT_EQ(out.inline_data().size(), 8u);
  HostTensor image = HostTensor::Empty({2}, DType::kFloat32);
  EXPECT_EQ(ToProto(image, "image", DType::kInt8, &out).code(), absl::StatusCode::kInvalidArgument);
}

TEST(AdapterTest, RegionModesReachTheEngineEntry) {
  v1::PipelineSpec spec;
  v1::TransformSpec* t = spec.add_transforms();
  t->set_kind(v1::CLAMP);
  t->mutable_clamp();
  t->mutable_region_mode()->set_in_seg(0.5);
  t->mutable_region_mode()->set_out_seg(0.25);
  t->mutable_region_mode()->set_mix_in_out(true);
  absl::StatusOr<PipelineSpec> p = PipelineFromProto(spec);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_DOUBLE_EQ(p->transforms[0].region_mode.in_seg, 0.5);
  EXPECT_DOUBLE_EQ(p->transforms[0].region_mode.out_seg, 0.25);
  EXPECT_TRUE(p->transforms[0].region_mode.mix_in_out);
  t->set_kind(v1::MIRROR);  // not an intensity kind: refused, naming the field
  t->mutable_mirror()->add_allowed_axes(0);
  p = PipelineFromProto(spec);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("region_mode"), std::string::npos) << p.status();
}

// same_on_batch_decision_only (field 78) beside same_on_batch (79), and the region coins' per_sample_coins.
TEST(AdapterTest, DecisionOnlyBatchModeAndPerSampleCoinsReachTheEngine) {
  v1::PipelineSpec spec;
  v1::TransformSpec* t = spec.add_transforms();
  t->set_kind(v1::RANDOM_CONVOLUTION);
  t->mutable_random_convolution();
  t->set_same_on_batch(true);
  t->set_same_on_batch_decision_only(true);
  t = spec.add_transforms();
  t->set_kind(v1::INTENSITY_FUNCTION);
  t->mutable_intensity_function();
  t->set_same_on_batch(true);
  t->mutable_region_mode()->set_in_seg(0.5);
  t->mutable_region_mode()->set_per_sample_coins(true);
  absl::StatusOr<PipelineSpec> p = PipelineFromProto(spec);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->transforms[0].same_on_batch, TransformSpec::BatchMode::kPerBatchDecision);
  EXPECT_EQ(p->transforms[0].ToJson()["same_on_batch"], "decision");
  EXPECT_EQ(p->transforms[1].same_on_batch, TransformSpec::BatchMode::kPerBatch);
  EXPECT_TRUE(p->transforms[1].region_mode.per_sample_coins);
  EXPECT_FALSE(p->transforms[0].region_mode.per_sample_coins);
  // decision_only without same_on_batch: refused, naming the field
  spec.mutable_transforms(0)->set_same_on_batch(false);
  p = PipelineFromProto(spec);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("pipeline.transforms[0].same_on_batch_decision_only"), std::string::npos)
      << p.status();
}

TEST(AdapterTest, ExplicitTransformListsBecomeEnginePipelines) {
  v1::PipelineSpec spec;
  v1::TransformSpec* t = spec.add_transforms();
  t->set_kind(v1::CONTRAST);
  t->set_apply_probability(0.15);
  t->mutable_contrast()->mutable_contrast_range()->mutable_bg_contrast()->set_min(0.75);
  t->mutable_contrast()->mutable_contrast_range()->mutable_bg_contrast()->set_max(1.25);
  t->mutable_contrast()->set_preserve_range(true);
  t = spec.add_transforms();
  t->set_kind(v1::MIRROR);
  t->mutable_mirror()->add_allowed_axes(0);
  t->set_same_on_batch(true);
  absl::StatusOr<PipelineSpec> p = PipelineFromProto(spec);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->transforms.size(), 2u);
  EXPECT_EQ(p->transforms[0].same_on_batch, TransformSpec::BatchMode::kPerSample);
  EXPECT_EQ(p->transforms[1].same_on_batch, TransformSpec::BatchMode::kPerBatch);
  EXPECT_DOUBLE_EQ(p->transforms[0].apply_probability, 0.15);
  EXPECT_DOUBLE_EQ(p->transforms[1].apply_probability, 1.0);
  const nlohmann::json j = p->transforms[0].ToJson();
  EXPECT_EQ(j["config"]["preserve_range"], true) << j.dump();
  spec.mutable_transforms(1)->set_kind(v1::TRANSFORM_KIND_UNSPECIFIED);
  EXPECT_EQ(PipelineFromProto(spec).status().code(), absl::StatusCode::kInvalidArgument);
}

// AugLab's affine (wire number 91) and the per-entry channel selection (TransformSpec.channels, field 4): the proto
// reaches the engine config / TransformSpec; an unset resample is the engine's default; channels on a label kind are
// refused with the field named.
TEST(AdapterTest, AuglabAffineAndChannelSelectionReachTheEngine) {
  v1::PipelineSpec spec;
  v1::TransformSpec* t = spec.add_transforms();
  t->set_kind(v1::AUGLAB_AFFINE);
  for (double v : {-5.0, 5.0, -15.0, 15.0, -25.0, 25.0}) t->mutable_auglab_affine()->add_degrees(v);
  for (double v : {0.2, 0.0, 0.05}) t->mutable_auglab_affine()->add_translate(v);
  t = spec.add_transforms();
  t->set_kind(v1::GAUSSIAN_NOISE);
  t->mutable_gaussian_noise();
  t->add_channels(2);
  t->add_channels(0);
  absl::StatusOr<PipelineSpec> p = PipelineFromProto(spec);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->transforms.size(), 2u);
  const nlohmann::json a = p->transforms[0].transform->ConfigToJson();
  EXPECT_EQ(a["degrees"], nlohmann::json({-5.0, 5.0, -15.0, 15.0, -25.0, 25.0})) << a.dump();
  EXPECT_EQ(a["translate"], nlohmann::json({0.2, 0.0, 0.05}));
  EXPECT_EQ(a["resample"], "bilinear");
  EXPECT_TRUE(p->transforms[0].channels.empty());
  EXPECT_EQ(p->transforms[1].channels, (std::vector<int64_t>{2, 0}));
  spec.mutable_transforms(0)->add_channels(0);  // auglab_affine moves the labels: no selection
  const absl::Status refused = PipelineFromProto(spec).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("transform.channels"), std::string::npos) << refused;
}

// nnUNetTrainerDAExt's CPU transforms (wire numbers 80..84): the proto messages reach the engine configs, with the
// repeated single values ([d]) read as TorchIO's numbers and unset optional fields left to the engine's defaults.
TEST(AdapterTest, DaextCpuTransformsReachTheEngine) {
  v1::PipelineSpec spec;
  v1::TransformSpec* t = spec.add_transforms();
  t->set_kind(v1::SWAP);
  t->mutable_swap()->add_patch_size(4);
  t = spec.add_transforms();
  t->set_kind(v1::SHAPE_CROP);
  t->mutable_shape_crop()->add_ignore_axes(1);
  t->mutable_shape_crop()->add_ignore_axes(2);
  t = spec.add_transforms();
  t->set_kind(v1::ANISOTROPY);
  t->mutable_anisotropy()->add_downsampling(7);
  t = spec.add_transforms();
  t->set_kind(v1::TORCHIO_AFFINE);
  t->mutable_torchio_affine()->add_degrees(10);
  for (int i = 0; i < 3; ++i) t->mutable_torchio_affine()->add_translation(0.1);
  t->mutable_torchio_affine()->add_scales(0.9);
  t->mutable_torchio_affine()->add_scales(1.1);
  t = spec.add_transforms();
  t->set_kind(v1::ELASTIC_DEFORMATION);
  t->mutable_elastic_deformation()->add_max_displacement(40);
  absl::StatusOr<PipelineSpec> p = PipelineFromProto(spec);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->transforms.size(), 5u);
  auto config = [&](int i) { return p->transforms[static_cast<size_t>(i)].transform->ConfigToJson(); };
  EXPECT_EQ(config(0)["patch_size"], nlohmann::json({4, 4, 4}));
  EXPECT_EQ(config(0)["num_iterations"], 100);
  EXPECT_EQ(config(1)["ignore_axes"], nlohmann::json({1, 2}));
  EXPECT_EQ(config(2)["downsampling"], nlohmann::json({1.0, 7.0}));
  EXPECT_EQ(config(3)["degrees"], nlohmann::json({-10.0, 10.0, -10.0, 10.0, -10.0, 10.0}));
  EXPECT_EQ(config(3)["scales"], nlohmann::json({0.9, 1.1, 0.9, 1.1, 0.9, 1.1}));
  EXPECT_EQ(config(3)["default_pad_value"], "minimum");
  EXPECT_EQ(config(4)["max_displacement"], nlohmann::json({40.0, 40.0, 40.0}));
  EXPECT_EQ(config(4)["num_control_points"], nlohmann::json({7, 7, 7}));
}

TEST(AdapterTest, Bgv2VersionOfThePipelineAndOfASpatialEntry) {
  v1::PipelineSpec spec;
  for (int i = 0; i < 2; ++i) {
    v1::TransformSpec* t = spec.add_transforms();
    t->set_kind(v1::SPATIAL);
    for (int d = 0; d < 3; ++d) t->mutable_spatial()->add_patch_size(8);
  }
  spec.mutable_transforms(1)->mutable_spatial()->set_bgv2_version("0.3.6");
  spec.mutable_transforms(1)->mutable_spatial()->set_seg_tiebreak("highest");
  auto config = [](const PipelineSpec& p, int i) { return p.transforms[i].transform->ConfigToJson(); };
  absl::StatusOr<PipelineSpec> p = PipelineFromProto(spec);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(config(*p, 0)["bgv2_version"], "0.3.6");  // unset everywhere: today's release
  EXPECT_EQ(config(*p, 0)["seg_tiebreak"], "nearest");
  spec.set_bgv2_version("0.3.5");
  p = PipelineFromProto(spec);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(config(*p, 0)["bgv2_version"], "0.3.5");
  EXPECT_EQ(config(*p, 0)["seg_tiebreak"], "lowest");
  EXPECT_EQ(config(*p, 1)["bgv2_version"], "0.3.6");  // the entry's own wins
  EXPECT_EQ(config(*p, 1)["seg_tiebreak"], "highest");
  spec.set_bgv2_version("0.2");
  p = PipelineFromProto(spec);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(p.status().message(), "bgv2_version")) << p.status();
  EXPECT_EQ(EngineBgv2Versions(), (std::vector<std::string>{"0.3.5", "0.3.6"}));
}

// What a translated nnUNetTrainerDA5 pipeline sends: OneOf groups, DA5's scale / strength / gamma distributions and
// the torch.mean rectangle value reach the engine in its own JSON forms (equal to the nnunet_da5 preset's entries).
TEST(AdapterTest, Da5TranslationFormsReachTheEngine) {
  v1::PipelineSpec spec;
  for (int k = 0; k < 2; ++k) {
    v1::TransformSpec* t = spec.add_transforms();
    t->set_kind(v1::CONTRAST);
    t->set_apply_probability(0.2);
    t->set_one_of_group(2);
    t->mutable_contrast()->mutable_contrast_range()->mutable_bg_contrast()->set_min(0.5);
    t->mutable_contrast()->mutable_contrast_range()->mutable_bg_contrast()->set_max(2.0);
    t->mutable_contrast()->set_preserve_range(k == 0);
    t->mutable_contrast()->set_p_per_channel(0.5);
  }
  v1::TransformSpec* t = spec.add_transforms();
  t->set_kind(v1::BRIGHTNESS_GRADIENT_ADDITIVE);
  v1::BrightnessGradientAdditiveParams* b = t->mutable_brightness_gradient_additive();
  b->mutable_scale()->mutable_axis_size_log_uniform()->set_low_divisor(6);
  b->mutable_scale()->mutable_axis_size_log_uniform()->set_high_divisor(1);
  b->mutable_loc()->mutable_uniform()->set_min(-0.5);
  b->mutable_loc()->mutable_uniform()->set_max(1.5);
  for (double lo : {-5.0, 1.0}) {
    v1::WeightedRange* c = b->mutable_max_strength()->mutable_mixture()->add_components();
    c->set_weight(0.5);
    c->mutable_range()->set_min(lo);
    c->mutable_range()->set_max(lo + 4);
  }
  b->set_same_for_all_channels(false);
  b->set_mean_centered(false);
  b->set_p_per_channel(0.5);
  t = spec.add_transforms();
  t->set_kind(v1::BLANK_RECTANGLE);
  v1::BlankRectangleParams* r = t->mutable_blank_rectangle();
  for (int a = 0; a < 3; ++a) {
    v1::IntRange* s = r->add_rectangle_size();
    s->set_min(4);
    s->set_max(13);
  }
  r->mutable_rectangle_value()->set_rectangle_mean(true);
  r->mutable_num_rectangles()->set_min(1);
  r->mutable_num_rectangles()->set_max(5);
  absl::StatusOr<PipelineSpec> p = PipelineFromProto(spec);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->transforms.size(), 4u);
  EXPECT_EQ(p->transforms[0].one_of_group, 2u);
  EXPECT_EQ(p->transforms[1].one_of_group, 2u);
  EXPECT_EQ(p->transforms[2].one_of_group, 0u);
  EXPECT_EQ(p->transforms[0].one_of_size, 2);
  EXPECT_EQ(p->transforms[1].one_of_index, 1);
  const nlohmann::json g = p->transforms[2].ToJson()["config"];
  EXPECT_EQ(g["scale"], nlohmann::json::parse(R"({"axis_size_log_uniform": [6.0, 1.0]})")) << g.dump();
  EXPECT_EQ(g["max_strength"], nlohmann::json::parse(
      R"({"mixture": [{"range": [-5.0, -1.0], "weight": 0.5}, {"range": [1.0, 5.0], "weight": 0.5}]})")) << g.dump();
  EXPECT_EQ(p->transforms[3].ToJson()["config"]["rectangle_value"], "mean");
  r->mutable_rectangle_value()->set_constant(0.25);
  p = PipelineFromProto(spec);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_DOUBLE_EQ(p->transforms[3].ToJson()["config"]["rectangle_value"].get<double>(), 0.25);
  // A group member that is not consecutive is the engine's INVALID_ARGUMENT, not silently accepted.
  spec.mutable_transforms(2)->set_one_of_group(2);
  spec.mutable_transforms(3)->set_one_of_group(0);
  spec.mutable_transforms(1)->set_one_of_group(0);
  p = PipelineFromProto(spec);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << p.status();
  EXPECT_TRUE(absl::StrContains(p.status().message(), "one_of_group")) << p.status();
}

}  // namespace
}  // namespace augmentd
