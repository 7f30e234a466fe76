#include "augment/pipeline.h"

#include <cmath>

#include "augment/transforms/simulate_low_resolution/simulate_low_resolution.h"
#include "augment/transforms/spatial/spatial.h"
#include "gtest/gtest.h"

namespace augmentd {
namespace {

TEST(Pipeline, InitialPatchSizeMatchesNnunetTable) {
  // Reference §2.2 (default trainer, /0.85).
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> table = {{{128, 128, 128}, {205, 205, 205}},
                                                                                    {{96, 160, 160}, {191, 257, 219}},
                                                                                    {{80, 192, 160}, {194, 289, 210}},
                                                                                    {{64, 192, 192}, {178, 308, 233}},
                                                                                    {{20, 320, 256}, {20, 376, 376}}};
  for (const auto& [patch, expect] : table) {
    TrainerConfig c;
    c.patch_size = patch;
    auto g = ConfigureGeometry(c);
    ASSERT_TRUE(g.ok());
    EXPECT_EQ(g->initial_patch_size, expect);
    EXPECT_EQ(g->do_dummy_2d_data_aug, patch[0] == 20);
  }
}

TEST(Pipeline, DefaultPresetOrderAndProbabilities) {
  TrainerConfig c;
  c.patch_size = {64, 64, 64};
  c.deep_supervision_scales = {{1, 1, 1}, {0.5, 0.5, 0.5}};
  c.use_mask_for_norm = {true};
  auto spec = NnunetDefaultPipeline(c);
  ASSERT_TRUE(spec.ok()) << spec.status();
  std::vector<std::string> names;
  std::vector<double> probs;
  for (const auto& t : spec->transforms) {
    names.emplace_back(TransformKindName(t.kind));
    probs.push_back(t.apply_probability);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"spatial", "gaussian_noise", "gaussian_blur", "multiplicative_brightness",
                                             "contrast", "simulate_low_resolution", "gamma", "gamma", "mirror",
                                             "mask_image", "remove_label", "downsample_seg_for_ds"}));
  EXPECT_EQ(probs, (std::vector<double>{1, 0.1, 0.2, 0.15, 0.15, 0.25, 0.1, 0.3, 1, 1, 1, 1}));
  EXPECT_EQ(spec->input_patch_size, (std::vector<int64_t>{102, 102, 102}));
  EXPECT_EQ(spec->OutputShape(spec->input_patch_size), (std::vector<int64_t>{64, 64, 64}));
}

TEST(Pipeline, DummyTwoDAndRegionsAndValidation) {
  TrainerConfig c;
  c.patch_size = {20, 320, 256};
  c.regions = {{1, 2}, {2}};
  c.ignore_label = 3;
  auto spec = NnunetDefaultPipeline(c);
  ASSERT_TRUE(spec.ok());
  const auto& sp = static_cast<const SpatialTransform&>(*spec->transforms[0].transform);
  EXPECT_TRUE(sp.config().dummy_2d);
  EXPECT_EQ(sp.config().patch_size, (std::vector<int64_t>{320, 256}));
  EXPECT_NEAR(sp.config().rotation.hi, M_PI, 1e-12);
  const auto& lr = static_cast<const SimulateLowResolutionTransform&>(*spec->transforms[5].transform);
  ASSERT_TRUE(lr.config().ignore_axes.has_value());
  EXPECT_EQ(*lr.config().ignore_axes, (std::vector<int64_t>{0}));
  EXPECT_EQ(TransformKindName(spec->transforms.back().kind), "convert_segmentation_to_regions");
  EXPECT_EQ(spec->transforms.back().ToJson()["config"]["regions"], nlohmann::json::parse("[[1, 2], [2], [3]]"));
  auto val = NnunetValidationPipeline(c);
  ASSERT_TRUE(val.ok());
  ASSERT_EQ(val->transforms.size(), 2u);
  EXPECT_EQ(val->input_patch_size, c.patch_size);
}

TEST(Pipeline, TrainerConfigFromJsonComputesDsScales) {
  auto c = TrainerConfig::FromJson(
      {{"patch_size", {64, 64, 64}}, {"pool_op_kernel_sizes", {{1, 1, 1}, {2, 2, 2}, {2, 2, 1}, {2, 2, 2}}}});
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->deep_supervision_scales.has_value());
  EXPECT_EQ(*c->deep_supervision_scales,
            (std::vector<std::vector<double>>{{1, 1, 1}, {0.5, 0.5, 0.5}, {0.25, 0.25, 0.5}}));
  EXPECT_EQ(TrainerConfig::FromJson({{"patch_size", {64, 64}}, {"bogus", 1}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  TrainerConfig big;
  big.patch_size = {4096, 64, 64};
  EXPECT_EQ(NnunetDefaultPipeline(big).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Pipeline, SpecJsonRoundTrip) {
  TrainerConfig c;
  c.patch_size = {32, 40, 48};
  auto spec = NnunetDefaultPipeline(c);
  ASSERT_TRUE(spec.ok());
  auto again = PipelineSpec::FromJson(spec->ToJson());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->ToJson(), spec->ToJson());
  auto bad = PipelineSpec::FromJson(
      {{"transforms", {{{"kind", "gamma"}, {"apply_probability", 1.5}, {"config", nlohmann::json::object()}}}}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Pipeline, Bgv2VersionReachesTheSpatialEntries) {
  TrainerConfig c;
  c.patch_size = {32, 40, 48};
  auto spatial_version = [](const PipelineSpec& spec) {
    for (const TransformSpec& t : spec.transforms)
      if (t.kind == TransformKind::kSpatial) return t.transform->ConfigToJson()["bgv2_version"].get<std::string>();
    return std::string();
  };
  EXPECT_EQ(spatial_version(*NnunetDefaultPipeline(c)), "0.3.6");  // default: today's release
  c.bgv2_version = "0.3.5";
  EXPECT_EQ(spatial_version(*NnunetDefaultPipeline(c)), "0.3.5");
  EXPECT_EQ(spatial_version(*NnunetDa5Pipeline(c)), "0.3.5");
  auto tc = TrainerConfig::FromJson({{"patch_size", {32, 40, 48}}, {"bgv2_version", "0.3.5"}});
  ASSERT_TRUE(tc.ok());
  EXPECT_EQ(tc->bgv2_version, "0.3.5");
  c.bgv2_version = "9.9";
  EXPECT_EQ(NnunetDefaultPipeline(c).status().code(), absl::StatusCode::kInvalidArgument);
  // a pipeline's bgv2_version is the default of its spatial entries; an entry's own wins
  const nlohmann::json entry = {{"kind", "spatial"}, {"config", {{"patch_size", {8, 8, 8}}}}};
  nlohmann::json own = entry;
  own["config"]["bgv2_version"] = "0.3.6";
  auto spec = PipelineSpec::FromJson({{"bgv2_version", "0.3.5"}, {"transforms", {entry, own}}});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->transforms[0].transform->ConfigToJson()["bgv2_version"], "0.3.5");
  EXPECT_EQ(spec->transforms[1].transform->ConfigToJson()["bgv2_version"], "0.3.6");
  EXPECT_EQ(spatial_version(*PipelineSpec::FromJson({{"transforms", {entry}}})), "0.3.6");
}

TEST(Pipeline, Da5PresetHasTwoOneOfGroupsAndPicksExactlyOneMember) {
  TrainerConfig c;
  c.patch_size = {64, 64, 64};
  auto spec = NnunetDa5Pipeline(c);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->input_patch_size, GetPatchSize({64, 64, 64}, M_PI / 6, M_PI / 6, M_PI / 6, {0.7, 1.43}));
  std::vector<size_t> g1, g2;
  for (size_t t = 0; t < spec->transforms.size(); ++t) {
    if (spec->transforms[t].one_of_group == 1) g1.push_back(t);
    if (spec->transforms[t].one_of_group == 2) g2.push_back(t);
  }
  ASSERT_EQ(g1.size(), 2u);
  ASSERT_EQ(g2.size(), 2u);
  int first = 0;
  for (uint64_t s = 0; s < 2000; ++s) {
    const bool a = spec->transforms[g1[0]].SelectedFor(7, s), b = spec->transforms[g1[1]].SelectedFor(7, s);
    EXPECT_NE(a, b);
    first += a;
  }
  EXPECT_NEAR(first / 2000.0, 0.5, 0.05);
  auto again = PipelineSpec::FromJson(spec->ToJson());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->ToJson(), spec->ToJson());
  EXPECT_EQ(again->transforms[g2[1]].one_of_index, 1);
  EXPECT_EQ(again->transforms[g2[1]].one_of_size, 2);
  EXPECT_EQ(PresetPipeline("nnunet_da5", c).status().code(), absl::StatusCode::kOk);
}

}  // namespace
}  // namespace augmentd

namespace augmentd {
namespace {
TEST(Pipeline, ChannelSelectionRoundTripsAndIsRefusedForLabelKinds) {
  const nlohmann::json noise = {{"kind", "gaussian_noise"}, {"channels", {2, 0}}, {"config", nlohmann::json::object()}};
  auto s = TransformSpec::FromJson(noise);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->channels, (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(s->ToJson()["channels"], nlohmann::json({2, 0}));
  auto d = TransformSpec::FromJson({{"kind", "gaussian_noise"}, {"config", nlohmann::json::object()}});
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->channels.empty());
  EXPECT_FALSE(d->ToJson().contains("channels"));
  for (const nlohmann::json& bad :
       {nlohmann::json({{"kind", "mirror"}, {"channels", {0}}, {"config", {{"allowed_axes", {0}}}}}),
        nlohmann::json({{"kind", "gaussian_noise"}, {"channels", nlohmann::json::array()}}),
        nlohmann::json({{"kind", "gaussian_noise"}, {"channels", {1, 1}}}),
        nlohmann::json({{"kind", "gaussian_noise"}, {"channels", {-1}}}),
        nlohmann::json({{"kind", "gaussian_noise"}, {"channels", "0"}})}) {
    auto r = TransformSpec::FromJson(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad.dump();
    EXPECT_NE(r.status().message().find("transform.channels"), std::string::npos) << r.status();
  }
}

TEST(Pipeline, SameOnBatchRoundTripsAndIsRefusedForOtherValues) {
  using BatchMode = TransformSpec::BatchMode;
  auto s = TransformSpec::FromJson({{"kind", "zscore_normalization"}, {"apply_probability", 0.3}, {"same_on_batch", true},
                                    {"config", nlohmann::json::object()}});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->same_on_batch, BatchMode::kPerBatch);
  EXPECT_EQ(s->ToJson()["same_on_batch"], true);
  auto d = TransformSpec::FromJson({{"kind", "zscore_normalization"}, {"config", nlohmann::json::object()}});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->same_on_batch, BatchMode::kPerSample);
  EXPECT_FALSE(d->ToJson().contains("same_on_batch"));
  auto f = TransformSpec::FromJson({{"kind", "zscore_normalization"}, {"same_on_batch", false},
                                    {"config", nlohmann::json::object()}});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->same_on_batch, BatchMode::kPerSample);
  // "decision": AugLab's share-the-decision-only mode (RandConv / RedistributeSeg under same_on_batch=True)
  auto dec = TransformSpec::FromJson({{"kind", "zscore_normalization"}, {"same_on_batch", "decision"},
                                      {"config", nlohmann::json::object()}});
  ASSERT_TRUE(dec.ok()) << dec.status();
  EXPECT_EQ(dec->same_on_batch, BatchMode::kPerBatchDecision);
  EXPECT_EQ(dec->ToJson()["same_on_batch"], "decision");
  auto back = TransformSpec::FromJson(dec->ToJson());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->same_on_batch, BatchMode::kPerBatchDecision);
  for (const nlohmann::json& bad : {nlohmann::json("yes"), nlohmann::json(1), nlohmann::json("Decision")}) {
    auto r = TransformSpec::FromJson({{"kind", "zscore_normalization"}, {"same_on_batch", bad},
                                      {"config", nlohmann::json::object()}});
    ASSERT_FALSE(r.ok()) << bad.dump();
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("transform.same_on_batch"), std::string::npos) << r.status();
  }
}
}  // namespace
}  // namespace augmentd
