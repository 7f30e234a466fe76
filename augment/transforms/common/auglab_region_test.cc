// AugLab's in_seg / out_seg / mix_in_out (auglab_region.h) on the three AugLab transforms: config validation, the
// draw's frequencies, inside-only / outside-only restriction, label masks, seg_channel, params round trip, and that
// the defaults leave every transform as before.
#include "augment/transforms/common/auglab_region.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "augment/kernels/common/auglab_math.h"
#include "augment/registry.h"
#include "augment/testing/test_util.h"
#include "augment/transforms/intensity_function/intensity_function.h"

namespace augmentd {
namespace {

using json = nlohmann::json;
namespace al = cuda::auglab;

const char* const kKinds[] = {"histogram_equalization", "random_convolution", "intensity_function"};

// Configs that change every voxel of channel 0 when applied everywhere (so restriction is visible).
json Base(const std::string& kind) {
  if (kind == "random_convolution") return {{"kernel_sizes", {3}}, {"mix_prob", 0.0}};
  if (kind == "intensity_function") return {{"functions", {"sqrt"}}, {"p_function", 1.0}, {"p_inverse", 0.0}};
  return json::object();
}

json With(json j, const json& extra) {
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

std::shared_ptr<const Transform> Make(const std::string& kind, const json& j) {
  auto t = TransformFromJson(kind, j);
  EXPECT_TRUE(t.ok()) << kind << " " << j.dump() << ": " << t.status();
  return t.ok() ? *t : nullptr;
}

// A sample with labels −1..3 in seg channel 0 and 0..1 in seg channel 1.
SampleData Sample(int64_t seg_channels = 2, uint32_t seed = 5) {
  SampleData s = testing::RandomSample(2, {9, 8, 7}, seg_channels, -1, 3, seed);
  if (seg_channels > 1)
    for (int64_t v = 0; v < s.voxels(); ++v) s.seg[s.voxels() + v] = static_cast<int16_t>(v % 2);
  return s;
}

// Output of `t` on `s` with `params`.
SampleData ApplyTo(const Transform& t, const TransformParams& params, SampleData s) {
  EXPECT_TRUE(t.Apply(params, s).ok());
  return s;
}

TEST(AuglabRegion, ValidationNamesTheField) {
  for (const char* kind : kKinds) {
    for (const auto& [key, value] : std::vector<std::pair<std::string, json>>{
             {"in_seg", 1.5}, {"out_seg", -0.1}, {"seg_channel", -1}, {"mix_in_out", "yes"}, {"seg_channel", 5000}}) {
      auto t = TransformFromJson(kind, {{key, value}});
      ASSERT_FALSE(t.ok()) << kind << " " << key;
      EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(t.status().message().find(std::string(kind) + "." + key), std::string::npos) << t.status();
    }
    // seg_channel beyond the sample's seg channels: when applying (the seg channels at that point of the pipeline),
    // naming the field; a sample without segmentation is fine.
    auto t = Make(kind, With(Base(kind), {{"in_seg", 0.5}, {"seg_channel", 2}}));
    SampleData s = Sample();
    auto p = testing::DrawFor(*t, s.layout(), 1);
    const absl::Status st = t->Apply(*p, s);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find(std::string(kind) + ".seg_channel"), std::string::npos) << st;
    SampleData bare = Sample(0);
    EXPECT_TRUE(t->Apply(*testing::DrawFor(*t, bare.layout(), 1), bare).ok()) << kind;
  }
}

TEST(AuglabRegion, DefaultsKeepConfigParamsAndOutput) {
  for (const char* kind : kKinds) {
    auto plain = Make(kind, Base(kind));
    auto zero = Make(kind, With(Base(kind), {{"in_seg", 0.0}, {"out_seg", 0}, {"mix_in_out", false}}));
    EXPECT_EQ(plain->ConfigToJson(), zero->ConfigToJson()) << kind;
    EXPECT_FALSE(plain->ConfigToJson().contains("in_seg")) << kind;
    const SampleData s = Sample();
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      auto a = testing::DrawFor(*plain, s.layout(), seed), b = testing::DrawFor(*zero, s.layout(), seed);
      EXPECT_EQ(plain->ParamsToJson(*a), zero->ParamsToJson(*b)) << kind;
      EXPECT_FALSE(plain->ParamsToJson(*a).contains("region")) << kind;
      EXPECT_EQ(ApplyTo(*plain, *a, s).image, ApplyTo(*zero, *b, s).image) << kind;
    }
    // Config round trip keeps non-default region keys.
    auto r = Make(kind, With(Base(kind), {{"out_seg", 0.25}, {"mix_in_out", true}, {"seg_channel", 1}}));
    auto again = Make(kind, r->ConfigToJson());
    EXPECT_EQ(again->ConfigToJson(), r->ConfigToJson());
    EXPECT_EQ(r->ConfigToJson()["seg_channel"], 1);
  }
}

TEST(AuglabRegion, ModeFrequenciesFollowTheTwoCoins) {
  // P(in) = p_in (1 − p_out), P(out) = p_out (1 − p_in), P(all) = the rest.
  const AuglabRegionConfig c{0.3, 0.5, false, 0};
  const int n = 20000;
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < n; ++i) {
    RandomStream rng(7, static_cast<uint64_t>(i), 3);
    for (const AuglabRegion& r : auglab_region::Draw(c, 2, rng)) {
      ++counts[r.mode];
      EXPECT_EQ(r.keep, al::kKeepAllLabels);
    }
  }
  const double want[3] = {0.5, 0.15, 0.35};
  for (int m = 0; m < 3; ++m) {
    const double sd = std::sqrt(want[m] * (1 - want[m]) / (2 * n));
    EXPECT_NEAR(counts[m] / (2.0 * n), want[m], 5 * sd) << m;
  }
}

TEST(AuglabRegion, MixInOutKeepsEachLabelWithHalfProbability) {
  const AuglabRegionConfig c{1.0, 0.0, true, 0};
  const int n = 4000;
  int kept[4] = {0, 0, 0, 0};
  for (int i = 0; i < n; ++i) {
    RandomStream rng(11, static_cast<uint64_t>(i), 0);
    const AuglabRegion r = auglab_region::Draw(c, 1, rng)[0];
    ASSERT_EQ(r.mode, al::kRegionIn);
    for (int l = 1; l <= 3; ++l) kept[l] += al::TakesTransformed(l, r.mode, r.keep) ? 1 : 0;
  }
  for (int l = 1; l <= 3; ++l) EXPECT_NEAR(kept[l] / double(n), 0.5, 5 * std::sqrt(0.25 / n)) << l;
}

// Inside-only changes only voxels with label > 0 (and those as the unrestricted transform does); outside-only only
// the others — for every transform, with and without retain_stats.
TEST(AuglabRegion, InsideAndOutsideOnlyRestrictTheChange) {
  for (const char* kind : kKinds) {
    for (bool retain : {false, true}) {
      json base = Base(kind);
      base["retain_stats"] = retain;
      auto whole = Make(kind, base);
      auto in = Make(kind, With(base, {{"in_seg", 1.0}}));
      auto out = Make(kind, With(base, {{"out_seg", 1.0}}));
      const SampleData s = Sample();
      const int64_t n = s.voxels();
      for (uint64_t seed = 1; seed <= 3; ++seed) {
        auto pw = testing::DrawFor(*whole, s.layout(), seed);
        auto pi = testing::DrawFor(*in, s.layout(), seed);
        auto po = testing::DrawFor(*out, s.layout(), seed);
        // The region draws come after the transform's own: same kernels / coins as without regions.
        json ji = in->ParamsToJson(*pi);
        ji.erase("region");
        ji.erase("region_labels");
        EXPECT_EQ(ji, whole->ParamsToJson(*pw)) << kind;
        const SampleData w = ApplyTo(*whole, *pw, s), a = ApplyTo(*in, *pi, s), b = ApplyTo(*out, *po, s);
        int64_t fg = 0, changed_in = 0, changed_out = 0;
        for (int64_t v = 0; v < n; ++v) {
          const bool inside = s.seg[v] > 0;
          fg += inside;
          ASSERT_EQ(a.image[v], inside ? w.image[v] : s.image[v]) << kind << " v=" << v;
          ASSERT_EQ(b.image[v], inside ? s.image[v] : w.image[v]) << kind << " v=" << v;
          changed_in += a.image[v] != s.image[v];
          changed_out += b.image[v] != s.image[v];
        }
        EXPECT_GT(fg, n / 4);
        EXPECT_LT(fg, n);
        EXPECT_GT(changed_in, fg * 9 / 10) << kind;  // the base configs change (almost) every voxel
        EXPECT_GT(changed_out, (n - fg) * 9 / 10) << kind;
        for (int64_t v = n; v < 2 * n; ++v) ASSERT_EQ(a.image[v], s.image[v]);  // channel 1 not applied
      }
    }
  }
}

TEST(AuglabRegion, SegChannelLabelMaskAndNoSegmentation) {
  for (const char* kind : kKinds) {
    auto whole = Make(kind, Base(kind));
    auto t = Make(kind, With(Base(kind), {{"in_seg", 1.0}, {"seg_channel", 1}}));
    const SampleData s = Sample();
    const int64_t n = s.voxels();
    auto pw = testing::DrawFor(*whole, s.layout(), 2);
    auto p = testing::DrawFor(*t, s.layout(), 2);
    const SampleData w = ApplyTo(*whole, *pw, s), a = ApplyTo(*t, *p, s);
    for (int64_t v = 0; v < n; ++v) ASSERT_EQ(a.image[v], v % 2 == 1 ? w.image[v] : s.image[v]) << kind;

    // Injected params: label mask keeps labels 2 only (bit 2), in seg channel 0.
    auto t0 = Make(kind, With(Base(kind), {{"in_seg", 1.0}}));
    json j = t0->ParamsToJson(*testing::DrawFor(*t0, s.layout(), 2));
    for (auto& k : j["region_labels"]) k = uint64_t{1} << 2;
    auto injected = t0->ParamsFromJson(j, s.layout());
    ASSERT_TRUE(injected.ok()) << injected.status();
    EXPECT_EQ(t0->ParamsToJson(**injected), j);
    const SampleData m = ApplyTo(*t0, **injected, s);
    for (int64_t v = 0; v < n; ++v) ASSERT_EQ(m.image[v], s.seg[v] == 2 ? w.image[v] : s.image[v]) << kind;

    // A sample without segmentation is transformed everywhere.
    const SampleData bare = Sample(0);
    auto pb = testing::DrawFor(*t0, bare.layout(), 2);
    auto pwb = testing::DrawFor(*whole, bare.layout(), 2);
    EXPECT_EQ(ApplyTo(*t0, *pb, bare).image, ApplyTo(*whole, *pwb, bare).image) << kind;
  }
}

// intensity_function: each step (function, then inverse) is restricted on its own, the later step's statistics
// coming from the partly transformed channel.
TEST(AuglabRegion, IntensityStepsEachRestrictTheirOwnRegion) {
  auto t = Make("intensity_function",
                {{"functions", {"sqrt"}}, {"p_function", 1.0}, {"p_inverse", 1.0}, {"in_seg", 1.0}, {"out_seg", 0.0}});
  const SampleData s = Sample();
  json j = t->ParamsToJson(*testing::DrawFor(*t, s.layout(), 3));
  ASSERT_EQ(j["region"], json({"in", "in"}));
  j["region"][1] = "out";  // function inside, inverse outside
  auto p = t->ParamsFromJson(j, s.layout());
  ASSERT_TRUE(p.ok()) << p.status();
  const SampleData got = ApplyTo(*t, **p, s);
  const int64_t n = s.voxels();
  std::vector<float> x(s.image.begin(), s.image.begin() + n), step(x);
  ApplyIntensityStep(step.data(), n, al::kFnSqrt, false);
  for (int64_t v = 0; v < n; ++v) x[v] = s.seg[v] > 0 ? step[v] : x[v];
  step = x;
  ApplyIntensityStep(step.data(), n, -1, false);
  for (int64_t v = 0; v < n; ++v) x[v] = s.seg[v] > 0 ? x[v] : step[v];
  for (int64_t v = 0; v < n; ++v) ASSERT_EQ(got.image[v], x[v]) << v;
}

TEST(AuglabRegion, ParamsJsonErrors) {
  for (const char* kind : kKinds) {
    auto t = Make(kind, With(Base(kind), {{"in_seg", 1.0}}));
    const SampleData s = Sample();
    json j = t->ParamsToJson(*testing::DrawFor(*t, s.layout(), 1));
    json bad = j;
    bad["region"][0] = "inside";
    auto r = t->ParamsFromJson(bad, s.layout());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("params.region"), std::string::npos) << r.status();
    bad = j;
    bad["region"].push_back("all");
    EXPECT_FALSE(t->ParamsFromJson(bad, s.layout()).ok()) << kind;
    bad = j;
    bad["region_labels"][0] = -1;
    r = t->ParamsFromJson(bad, s.layout());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("params.region_labels"), std::string::npos) << r.status();
    bad = j;
    bad.erase("region");
    EXPECT_FALSE(t->ParamsFromJson(bad, s.layout()).ok()) << kind;  // region_labels without region
  }
}

}  // namespace
}  // namespace augmentd
