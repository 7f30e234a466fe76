// The batch modes of a pipeline entry (TransformSpec::same_on_batch, pipeline.h) as DrawEntry / DrawSampleParams
// (batch.h) draw them for both engines: per sample, per batch (decision and parameters shared) and "decision" (only
// the decision shared, AugLab's RandConv / RedistributeSeg under same_on_batch=True), and where the region coins come
// from in each (region_mode.h). Decisions and region modes are compared exactly; parameters as their JSON, drawn by
// the same code from the same streams.
#include "augment/batch.h"

#include <set>
#include <string>
#include <vector>

#include "augment/pipeline.h"
#include "augment/rng.h"
#include "gtest/gtest.h"

namespace augmentd {
namespace {

using nlohmann::json;

constexpr int kBatch = 4;
constexpr uint64_t kSeed = 11;

json RandConv(const json& same_on_batch, json region = nullptr) {
  json j = {{"kind", "random_convolution"},
            {"apply_probability", 0.5},
            {"config", {{"kernel_sizes", {3, 5, 7}}, {"mix_prob", 0.5}, {"retain_stats", false}}},
            {"same_on_batch", same_on_batch}};
  if (!region.is_null()) j["region_mode"] = std::move(region);
  return j;
}

PipelineSpec Spec(const json& entry) {
  absl::StatusOr<PipelineSpec> s = PipelineSpec::FromJson({{"transforms", {entry}}});
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : PipelineSpec{};
}

struct Drawn {
  bool applied = false;
  std::string params;  // ParamsToJson dump ("" when not applied)
  std::string region;  // RegionDrawToJson dump
};

// Entry 0 of `spec` for samples first .. first + kBatch - 1 (`in_batch`: as one batch; else each drawn alone).
std::vector<Drawn> DrawBatch(const PipelineSpec& spec, uint64_t first, bool in_batch = true) {
  SampleLayout layout{1, {6, 7, 8}, 1};
  std::vector<Drawn> out;
  for (uint64_t b = first; b < first + kBatch; ++b) {
    SampleRecord r;
    absl::Status st = DrawSampleParams(spec, kSeed, b, nullptr, layout, r, in_batch ? first : kNoBatchIndex);
    EXPECT_TRUE(st.ok()) << st;
    if (!st.ok()) return out;
    const AppliedTransform& a = r.transforms[0];
    Drawn d;
    d.applied = a.applied;
    if (a.applied) d.params = spec.transforms[0].transform->ParamsToJson(*a.params).dump();
    d.region = RegionDrawToJson(a.region).dump();
    out.push_back(d);
  }
  return out;
}

TEST(BatchModes, PerSampleDecisionIsDrawZeroOfTheSamplesStream) {
  const PipelineSpec spec = Spec(RandConv(false));
  int mixed = 0;
  for (uint64_t k = 0; k < 20; ++k) {
    const std::vector<Drawn> d = DrawBatch(spec, kBatch * k);
    ASSERT_EQ(d.size(), static_cast<size_t>(kBatch));
    std::set<bool> decisions;
    for (int b = 0; b < kBatch; ++b) {
      RandomStream s(kSeed, kBatch * k + b, 0);
      EXPECT_EQ(d[b].applied, s.Uniform() < 0.5);
      decisions.insert(d[b].applied);
    }
    mixed += decisions.size() > 1;
  }
  EXPECT_GE(mixed, 10);  // P(a batch of 4 agrees) = 1/8
}

TEST(BatchModes, PerBatchSharesDecisionAndParameters) {
  const PipelineSpec spec = Spec(RandConv(true));
  int applied = 0;
  for (uint64_t k = 0; k < 40; ++k) {
    const std::vector<Drawn> d = DrawBatch(spec, kBatch * k);
    ASSERT_EQ(d.size(), static_cast<size_t>(kBatch));
    for (int b = 1; b < kBatch; ++b) {
      EXPECT_EQ(d[b].applied, d[0].applied);
      EXPECT_EQ(d[b].params, d[0].params);
    }
    applied += d[0].applied;
  }
  EXPECT_GT(applied, 8);  // p = 0.5 per batch, 40 batches (±3.2 sd)
  EXPECT_LT(applied, 32);
}

TEST(BatchModes, DecisionModeSharesOnlyTheDecision) {
  const PipelineSpec dec = Spec(RandConv("decision"));
  const PipelineSpec per_sample = Spec(RandConv(false));
  int applied = 0, differing = 0;
  for (uint64_t k = 0; k < 40; ++k) {
    const std::vector<Drawn> d = DrawBatch(dec, kBatch * k);
    const std::vector<Drawn> s = DrawBatch(per_sample, kBatch * k);
    ASSERT_EQ(d.size(), static_cast<size_t>(kBatch));
    ASSERT_EQ(s.size(), static_cast<size_t>(kBatch));
    // the decision: the batch's first sample's draw 0, shared
    RandomStream first(kSeed, kBatch * k, 0);
    const bool decision = first.Uniform() < 0.5;
    std::set<std::string> params;
    for (int b = 0; b < kBatch; ++b) {
      EXPECT_EQ(d[b].applied, decision);
      if (!d[b].applied) continue;
      params.insert(d[b].params);
      // the parameters: the per-sample mode's for that sample (drawn past its draw 0), whatever its own decision
      json always_on = RandConv(false);
      always_on["apply_probability"] = 1.0;
      const PipelineSpec always = Spec(always_on);
      SampleRecord r;
      ASSERT_TRUE(DrawSampleParams(always, kSeed, kBatch * k + b, nullptr, SampleLayout{1, {6, 7, 8}, 1}, r).ok());
      EXPECT_EQ(d[b].params, always.transforms[0].transform->ParamsToJson(*r.transforms[0].params).dump());
      if (s[b].applied) {
        EXPECT_EQ(d[b].params, s[b].params);
      }
    }
    applied += decision;
    differing += params.size() > 1;
  }
  EXPECT_GT(applied, 8);
  EXPECT_LT(applied, 32);
  EXPECT_EQ(differing, applied);  // kernels of 4 samples drawn independently: never all equal
}

TEST(BatchModes, DrawnAloneEveryModeIsPerSample) {
  const PipelineSpec per_sample = Spec(RandConv(false));
  for (const json& mode : {json(true), json("decision")}) {
    const PipelineSpec spec = Spec(RandConv(mode));
    for (uint64_t k = 0; k < 10; ++k) {
      const std::vector<Drawn> d = DrawBatch(spec, kBatch * k, /*in_batch=*/false);
      const std::vector<Drawn> s = DrawBatch(per_sample, kBatch * k);
      for (int b = 0; b < kBatch; ++b) {
        EXPECT_EQ(d[b].applied, s[b].applied);
        EXPECT_EQ(d[b].params, s[b].params);
      }
    }
  }
}

// Region coins: shared per batch in both batch modes (AugLab's per-call coins); per sample with per_sample_coins
// (AugLab's RandomInverseGPU), the decision still shared.
TEST(BatchModes, RegionCoinsPerBatchUnlessPerSampleCoins) {
  const json region = {{"in_seg", 0.5}, {"out_seg", 0.5}};
  json per_coin = region;
  per_coin["per_sample_coins"] = true;
  for (const json& mode : {json(true), json("decision")}) {
    const PipelineSpec shared = Spec(RandConv(mode, region));
    const PipelineSpec own = Spec(RandConv(mode, per_coin));
    int own_mixed = 0, own_applied = 0;
    for (uint64_t k = 0; k < 40; ++k) {
      const std::vector<Drawn> a = DrawBatch(shared, kBatch * k);
      const std::vector<Drawn> b = DrawBatch(own, kBatch * k);
      std::set<std::string> modes;
      for (int i = 0; i < kBatch; ++i) {
        EXPECT_EQ(a[i].region, a[0].region) << mode.dump();
        EXPECT_EQ(b[i].applied, b[0].applied);
        modes.insert(b[i].region);
      }
      if (b[0].applied) {
        ++own_applied;
        own_mixed += modes.size() > 1;  // P(4 samples agree) = 2·(1/4)^4 + (1/2)^4 = 0.07
      }
    }
    EXPECT_GT(own_applied, 8);
    EXPECT_GE(own_mixed, own_applied / 2) << mode.dump();
  }
  // per sample: per_sample_coins changes nothing (the coins are per sample already)
  const std::vector<Drawn> a = DrawBatch(Spec(RandConv(false, region)), 0);
  const std::vector<Drawn> b = DrawBatch(Spec(RandConv(false, per_coin)), 0);
  for (int i = 0; i < kBatch; ++i) EXPECT_EQ(a[i].region, b[i].region);
}

TEST(BatchModes, PerSampleCoinsRoundTrip) {
  auto s = TransformSpec::FromJson(RandConv(true, {{"in_seg", 0.5}, {"per_sample_coins", true}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->region_mode.per_sample_coins);
  EXPECT_EQ(s->ToJson()["region_mode"]["per_sample_coins"], true);
  auto off = TransformSpec::FromJson(RandConv(true, {{"in_seg", 0.5}}));
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->ToJson()["region_mode"].contains("per_sample_coins"));
  auto bad = TransformSpec::FromJson(RandConv(true, {{"in_seg", 0.5}, {"per_sample_coins", "yes"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("region_mode"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace augmentd
