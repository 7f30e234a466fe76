// Region modes on pipeline entries (augment/region_mode.h): config checks, the draw order and its distribution, and
// the CPU blend against a hand-computed m·t' + (1 − m)·x.
#include "augment/region_mode.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "augment/engine.h"
#include "augment/pipeline.h"
#include "gtest/gtest.h"

namespace augmentd {
namespace {

using nlohmann::json;

json Brightness(json region) {
  return {{"kind", "multiplicative_brightness"},
          {"config", {{"multiplier_range", {0.5, 2.0}}, {"synchronize_channels", false}, {"p_per_channel", 1.0}}},
          {"region_mode", std::move(region)}};
}

TEST(RegionModeConfig, ChecksProbabilitiesAndKinds) {
  EXPECT_TRUE(TransformSpec::FromJson(Brightness({{"in_seg", 0.5}, {"out_seg", 0.5}, {"mix_in_out", true}})).ok());
  auto bad = TransformSpec::FromJson(Brightness({{"in_seg", 1.5}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("region_mode.in_seg"), std::string::npos) << bad.status();
  EXPECT_FALSE(TransformSpec::FromJson(Brightness({{"inseg", 0.5}})).ok());  // unknown key
  auto mirror = TransformSpec::FromJson({{"kind", "mirror"}, {"config", {{"allowed_axes", {0}}}},
                                         {"region_mode", {{"in_seg", 0.5}}}});
  ASSERT_FALSE(mirror.ok());
  EXPECT_NE(mirror.status().message().find("transform.region_mode"), std::string::npos) << mirror.status();
  // off (both probabilities 0): serialised as before, accepted on any kind
  auto off = TransformSpec::FromJson(Brightness({{"in_seg", 0.0}}));
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->ToJson().contains("region_mode"));
  auto on = TransformSpec::FromJson(Brightness({{"out_seg", 0.25}}));
  ASSERT_TRUE(on.ok());
  EXPECT_EQ(on->ToJson()["region_mode"]["out_seg"], 0.25);
}

TEST(RegionModeDraw, CoinsAfterTheTransformsDrawsAndMixPerChannel) {
  RegionModeConfig c{0.5, 0.5, true};
  int counts[3] = {0, 0, 0};
  int kept = 0, mixed = 0;
  for (uint64_t s = 0; s < 4000; ++s) {
    RandomStream coins(7, s, 3), mix(7, s, 3, kRegionMixSubstream);
    RandomStream ref(7, s, 3);
    const RegionDraw r = DrawRegion(c, 2, coins, mix);
    const bool in = ref.Uniform() < 0.5, out = ref.Uniform() < 0.5;
    EXPECT_EQ(r.mode, in && !out ? region_mode::kIn : (out && !in ? region_mode::kOut : region_mode::kAll));
    ++counts[r.mode];
    if (r.mode != region_mode::kAll) {
      mixed += 2;
      kept += static_cast<int>((r.keep & 1u) + ((r.keep >> 1) & 1u));
    } else {
      EXPECT_EQ(r.keep, region_mode::kKeepAll);
    }
  }
  // P(in) = P(out) = 1/4, P(all) = 1/2; each seg channel kept with 1/2 (bounds: > 6 sigma)
  EXPECT_NEAR(counts[region_mode::kIn] / 4000.0, 0.25, 0.045);
  EXPECT_NEAR(counts[region_mode::kOut] / 4000.0, 0.25, 0.045);
  EXPECT_NEAR(kept / static_cast<double>(mixed), 0.5, 0.05);
}

TEST(RegionModeDraw, JsonRoundTripAndErrors) {
  RegionDraw r;
  r.mode = region_mode::kOut;
  r.keep = 0b10;
  r.seg_channels = 2;
  const json j = RegionDrawToJson(r);
  EXPECT_EQ(j, (json{{"mode", "out"}, {"keep", {false, true}}}));
  auto back = RegionDrawFromJson(j, 2);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->mode, r.mode);
  EXPECT_EQ(back->keep & 3u, r.keep);
  EXPECT_FALSE(RegionDrawFromJson({{"mode", "inside"}}, 1).ok());
  EXPECT_FALSE(RegionDrawFromJson({{"mode", "in"}, {"keep", {true}}}, 2).ok());
}

struct Data {
  std::vector<float> image;
  std::vector<int16_t> seg;
  std::vector<int64_t> ishape, sshape;
  BatchInput In() const {
    return {TensorView{image.data(), ishape, DType::kFloat32}, TensorView{seg.data(), sshape, DType::kInt16}};
  }
};

Data MakeData(int64_t b, int64_t c, int64_t sc, int64_t n) {
  Data d;
  d.ishape = {b, c, n, n + 1, n + 2};
  d.sshape = {b, sc, n, n + 1, n + 2};
  std::mt19937 gen(3);
  std::normal_distribution<float> g(0.0f, 2.0f);
  std::uniform_int_distribution<int> l(0, 2);
  d.image.resize(NumElements(d.ishape));
  for (float& v : d.image) v = g(gen);
  d.seg.resize(NumElements(d.sshape));
  for (int16_t& v : d.seg) v = static_cast<int16_t>(l(gen));
  return d;
}

// The reference: the region blend written out in doubles from its definition.
std::vector<double> Expected(const float* x, const float* t, const int16_t* seg, int64_t n, int64_t sc,
                             const std::string& mode, const std::vector<bool>& keep) {
  const auto [xl, xh] = std::minmax_element(x, x + n);
  const auto [tl, th] = std::minmax_element(t, t + n);
  std::vector<double> out(n);
  for (int64_t v = 0; v < n; ++v) {
    double m = 0;
    for (int64_t k = 0; k < sc; ++k)
      if (keep[k]) m += mode == "in" ? seg[k * n + v] : 1.0 - seg[k * n + v];
    const double tr = (t[v] - *tl) / (double(*th) - *tl + 1e-8) * (double(*xh) - *xl) + *xl;
    out[v] = m * tr + (1 - m) * x[v];
  }
  return out;
}

TEST(RegionModeApply, BlendsChangedChannelsByLabelValues) {
  const Data d = MakeData(2, 2, 2, 6);
  const int64_t n = 6 * 7 * 8;
  for (const std::string mode : {"in", "out", "all"}) {
    for (const std::vector<bool>& keep : {std::vector<bool>{true, true}, std::vector<bool>{false, true}}) {
      auto spec = PipelineSpec::FromJson(
          {{"transforms", {Brightness({{"in_seg", 0.5}, {"out_seg", 0.5}, {"mix_in_out", true}})}}});
      ASSERT_TRUE(spec.ok()) << spec.status();
      // channel 0 scaled by 1.5 (so t' rescales back to x's range), channel 1 left alone (multiplier 1)
      const json params = {{"apply_to_channel", {0, 1}}, {"multipliers", {1.5, 1.0}}};
      std::vector<std::vector<json>> inj(2);
      for (auto& s : inj) s = {{{"applied", true}, {"params", params}, {"region", {{"mode", mode}, {"keep", keep}}}}};
      RunOptions opt;
      opt.injected = &inj;
      auto out = AugmentBatch(*spec, d.In(), opt);
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_EQ(out->ParamsJson(*spec)[0]["transforms"][0]["region"]["mode"], mode);
      for (int64_t b = 0; b < 2; ++b) {
        const float* x = d.image.data() + (b * 2) * n;
        const float* got = out->image.data<float>() + (b * 2) * n;
        std::vector<float> t(x, x + n);
        for (float& v : t) v *= 1.5f;
        if (mode == "all") {
          for (int64_t v = 0; v < n; ++v) ASSERT_EQ(got[v], t[v]);
        } else {
          const std::vector<double> e = Expected(x, t.data(), d.seg.data() + b * 2 * n, n, 2, mode, keep);
          for (int64_t v = 0; v < n; ++v) ASSERT_NEAR(got[v], e[v], 1e-5 * (1 + std::abs(e[v]))) << mode << " " << v;
        }
        // the unchanged channel stays bit-identical
        for (int64_t v = 0; v < n; ++v) ASSERT_EQ(got[n + v], x[n + v]);
      }
    }
  }
}

TEST(RegionModeApply, SameOnBatchSharesCoinsNotMix) {
  const Data d = MakeData(4, 1, 3, 4);
  auto j = Brightness({{"in_seg", 0.5}, {"out_seg", 0.5}, {"mix_in_out", true}});
  j["same_on_batch"] = true;
  auto spec = PipelineSpec::FromJson({{"transforms", {j}}});
  ASSERT_TRUE(spec.ok()) << spec.status();
  bool keeps_differ = false;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    RunOptions opt;
    opt.seed = seed;
    auto out = AugmentBatch(*spec, d.In(), opt);
    ASSERT_TRUE(out.ok()) << out.status();
    const json p = out->ParamsJson(*spec);
    for (int b = 1; b < 4; ++b) {
      EXPECT_EQ(p[b]["transforms"][0]["region"]["mode"], p[0]["transforms"][0]["region"]["mode"]);
      keeps_differ |= p[b]["transforms"][0]["region"]["keep"] != p[0]["transforms"][0]["region"]["keep"];
    }
  }
  EXPECT_TRUE(keeps_differ);
}

TEST(RegionModeApply, NoLabelsNoDrawAndAfterDsRefused) {
  Data d = MakeData(1, 1, 1, 4);
  BatchInput in = d.In();
  in.seg = TensorView{};
  auto spec = PipelineSpec::FromJson({{"transforms", {Brightness({{"in_seg", 1.0}})}}});
  ASSERT_TRUE(spec.ok());
  auto out = AugmentBatch(*spec, in, RunOptions{});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->ParamsJson(*spec)[0]["transforms"][0]["region"]["mode"], "all");
  auto after_ds = PipelineSpec::FromJson(
      {{"transforms", {{{"kind", "downsample_seg_for_ds"}, {"config", {{"ds_scales", {{1, 1, 1}, {0.5, 0.5, 0.5}}}}}},
                       Brightness({{"in_seg", 1.0}})}}});
  EXPECT_FALSE(after_ds.ok());
}

}  // namespace
}  // namespace augmentd
