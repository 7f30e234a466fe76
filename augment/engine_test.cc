#include "augment/engine.h"

#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "augment/kernels/cpu_half.h"
#include "augment/pipeline.h"
#include "augment/transforms/spatial/spatial.h"
#include "gtest/gtest.h"

namespace augmentd {
namespace {

struct Batch {
  std::vector<float> image;
  std::vector<int16_t> seg;
  std::vector<int64_t> ishape, sshape;
  BatchInput In() const {
    return {TensorView{image.data(), ishape, DType::kFloat32}, TensorView{seg.data(), sshape, DType::kInt16}};
  }
};

Batch MakeBatch(int64_t b, int64_t c, std::vector<int64_t> spatial, uint32_t seed = 5) {
  Batch x;
  x.ishape = {b, c};
  x.sshape = {b, 1};
  x.ishape.insert(x.ishape.end(), spatial.begin(), spatial.end());
  x.sshape.insert(x.sshape.end(), spatial.begin(), spatial.end());
  std::mt19937 gen(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::uniform_int_distribution<int> l(-1, 3);
  x.image.resize(NumElements(x.ishape));
  for (float& v : x.image) v = n(gen);
  x.seg.resize(NumElements(x.sshape));
  for (int16_t& v : x.seg) v = static_cast<int16_t>(l(gen));
  return x;
}

PipelineSpec Default(std::vector<int64_t> patch) {
  TrainerConfig c;
  c.patch_size = std::move(patch);
  c.num_input_channels = 2;
  c.deep_supervision_scales = {{1, 1, 1}, {0.5, 0.5, 0.5}, {0.25, 0.25, 0.25}};
  auto spec = NnunetDefaultPipeline(c);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

TEST(Engine, OutputsImageAndLabelPyramid) {
  const PipelineSpec spec = Default({16, 16, 16});
  const Batch x = MakeBatch(3, 2, spec.input_patch_size);
  RunOptions opt;
  opt.seed = 1;
  auto out = AugmentBatch(spec, x.In(), opt);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->image.shape(), (std::vector<int64_t>{3, 2, 16, 16, 16}));
  ASSERT_EQ(out->seg.size(), 3u);
  EXPECT_EQ(out->seg[1].shape(), (std::vector<int64_t>{3, 1, 8, 8, 8}));
  EXPECT_EQ(out->seg[2].dtype(), DType::kInt16);
  for (int64_t i = 0; i < out->seg[0].numel(); ++i) EXPECT_GE(out->seg[0].data<int16_t>()[i], 0);  // −1 → 0
  EXPECT_EQ(out->samples.size(), 3u);
  EXPECT_EQ(out->samples[2].sample_index, 2u);
  const nlohmann::json j = out->ParamsJson(spec);
  EXPECT_EQ(j[0]["transforms"].size(), spec.transforms.size());
}

TEST(Engine, DeterministicAcrossThreadCountsAndBatchSplits) {
  const PipelineSpec spec = Default({12, 14, 16});
  const Batch x = MakeBatch(6, 2, spec.input_patch_size);
  RunOptions one;
  one.seed = 42;
  one.first_sample_index = 1000;
  one.num_threads = 1;
  auto a = AugmentBatch(spec, x.In(), one);
  ASSERT_TRUE(a.ok()) << a.status();
  RunOptions four = one;
  four.num_threads = 4;
  auto b = AugmentBatch(spec, x.In(), four);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(0, std::memcmp(a->image.raw_data(), b->image.raw_data(), a->image.nbytes()));
  // Samples 1003..1005 alone (batch of 3 starting at index 1003) equal the tail of the batch of 6.
  Batch tail = x;
  const int64_t per_i = NumElements(x.ishape) / 6, per_s = NumElements(x.sshape) / 6;
  tail.image.assign(x.image.begin() + 3 * per_i, x.image.end());
  tail.seg.assign(x.seg.begin() + 3 * per_s, x.seg.end());
  tail.ishape[0] = tail.sshape[0] = 3;
  RunOptions later = one;
  later.first_sample_index = 1003;
  later.num_threads = 2;
  auto c = AugmentBatch(spec, tail.In(), later);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(0, std::memcmp(c->image.raw_data(), a->image.data<float>() + c->image.numel(), c->image.nbytes()));
  for (size_t l = 0; l < a->seg.size(); ++l) {
    EXPECT_EQ(0, std::memcmp(c->seg[l].raw_data(), a->seg[l].data<int16_t>() + c->seg[l].numel(), c->seg[l].nbytes()));
  }
  // A different seed changes the result.
  RunOptions other = one;
  other.seed = 43;
  auto d = AugmentBatch(spec, x.In(), other);
  ASSERT_TRUE(d.ok());
  EXPECT_NE(0, std::memcmp(a->image.raw_data(), d->image.raw_data(), a->image.nbytes()));
}

TEST(Engine, ImageOnlyBatchSkipsLabelTransforms) {
  const PipelineSpec spec = Default({8, 8, 8});
  const Batch x = MakeBatch(2, 2, spec.input_patch_size);
  BatchInput in = x.In();
  in.seg = TensorView{};
  auto out = AugmentBatch(spec, in, RunOptions{});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->image.shape(), (std::vector<int64_t>{2, 2, 8, 8, 8}));
  EXPECT_TRUE(out->seg.empty());
}

TEST(Engine, InjectedParametersAreUsed) {
  TrainerConfig tc;
  tc.patch_size = {8, 8, 8};
  auto spec = NnunetValidationPipeline(tc);
  ASSERT_TRUE(spec.ok());
  PipelineSpec p;
  auto gamma = TransformSpec::FromJson({{"kind", "mirror"}, {"config", {{"allowed_axes", {0, 1, 2}}}}});
  ASSERT_TRUE(gamma.ok());
  p.transforms.push_back(*gamma);
  const Batch x = MakeBatch(1, 1, {8, 8, 8});
  std::vector<std::vector<nlohmann::json>> inj = {{{{"applied", true}, {"params", {{"axes", {2}}}}}}};
  RunOptions opt;
  opt.injected = &inj;
  auto out = AugmentBatch(p, x.In(), opt);
  ASSERT_TRUE(out.ok()) << out.status();
  for (int k = 0; k < 8; ++k) EXPECT_EQ(out->image.data<float>()[k], x.image[7 - k]);
  inj[0][0]["params"]["axes"] = {5};
  EXPECT_EQ(AugmentBatch(p, x.In(), opt).status().code(), absl::StatusCode::kInvalidArgument);
}

// downsample_seg_for_ds / convert_segmentation_to_regions change the output layout: skipping them for some samples
// of a batch would give samples that cannot be packed, so p < 1, OneOf membership and an injected skip are refused.
TEST(Engine, LayoutChangingEntriesCannotBeSkipped) {
  TrainerConfig tc;
  tc.patch_size = {8, 8, 8};
  tc.regions = std::vector<std::vector<int64_t>>{{1, 2, 3}, {2, 3}};
  tc.deep_supervision_scales = {{1, 1, 1}, {0.5, 0.5, 0.5}};
  auto valid = NnunetValidationPipeline(tc);  // remove_label, regions, DS
  ASSERT_TRUE(valid.ok()) << valid.status();
  ASSERT_EQ(valid->transforms.size(), 3u);
  const Batch x = MakeBatch(4, 1, {8, 8, 8});
  RunOptions opt;
  opt.seed = 3;
  ASSERT_TRUE(AugmentBatch(*valid, x.In(), opt).ok());
  for (size_t i : {size_t{1}, size_t{2}}) {
    PipelineSpec p = *valid;
    p.transforms[i].apply_probability = 0.5;
    const absl::Status st = AugmentBatch(p, x.In(), opt).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    const std::string want = absl::StrCat("pipeline.transforms[", i, "]");
    EXPECT_NE(st.message().find(want), std::string::npos) << st;
    EXPECT_NE(st.message().find("changes the output layout: apply_probability must be 1"), std::string::npos) << st;
    // The JSON form is refused when parsed.
    const absl::Status js = PipelineSpec::FromJson(p.ToJson()).status();
    EXPECT_EQ(js.code(), absl::StatusCode::kInvalidArgument) << js;
    EXPECT_NE(js.message().find(want), std::string::npos) << js;
  }
  // A OneOf member (remove_label | DS): chosen for some samples only.
  PipelineSpec g = *valid;
  g.transforms[0].one_of_group = 1;
  g.transforms[2].one_of_group = 0;
  g.transforms[1].one_of_group = 1;
  ASSERT_TRUE(g.ResolveOneOfGroups().ok());
  const absl::Status gs = g.CheckLayoutStable();
  EXPECT_EQ(gs.code(), absl::StatusCode::kInvalidArgument) << gs;
  EXPECT_NE(gs.message().find("pipeline.transforms[1]: (convert_segmentation_to_regions)"), std::string::npos) << gs;
  EXPECT_EQ(AugmentBatch(g, x.In(), opt).status().code(), absl::StatusCode::kInvalidArgument);
  // An injected skip of DS (index 2); injecting "applied": true stays fine.
  std::vector<std::vector<nlohmann::json>> inj(4, std::vector<nlohmann::json>(3));
  opt.injected = &inj;
  ASSERT_TRUE(AugmentBatch(*valid, x.In(), opt).ok());
  inj[1][2] = {{"applied", false}};
  const absl::Status is = AugmentBatch(*valid, x.In(), opt).status();
  EXPECT_EQ(is.code(), absl::StatusCode::kInvalidArgument) << is;
  EXPECT_NE(is.message().find("transform 2 (downsample_seg_for_ds)"), std::string::npos) << is;
}

// A spatial entry that changes the sample's shape cannot be skipped either (its own probabilities draw the
// augmentation); one that keeps the shape can. After regions it must fill labels with 0 or 1.
TEST(Engine, ShapeChangingSpatialCannotBeSkipped) {
  SpatialConfig c;
  c.patch_size = {6, 6, 6};
  c.bg_style_seg_sampling = false;
  const auto crop = SpatialTransform::Create(c);
  ASSERT_TRUE(crop.ok()) << crop.status();
  PipelineSpec p;
  p.transforms.push_back(*TransformSpec::Make(*crop, 0.5));
  const Batch x = MakeBatch(8, 1, {10, 10, 10});
  RunOptions opt;
  opt.seed = 4;
  const absl::Status st = AugmentBatch(p, x.In(), opt).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_NE(st.message().find("pipeline.transforms[0]: (spatial) changes the sample's shape [10, 10, 10] -> [6, 6, 6]"),
            std::string::npos)
      << st;
  // Known statically once the input size is: FromJson refuses it.
  p.input_patch_size = {10, 10, 10};
  EXPECT_EQ(PipelineSpec::FromJson(p.ToJson()).status().code(), absl::StatusCode::kInvalidArgument);
  // The same entry on inputs of its patch size keeps the shape: skippable.
  const Batch same = MakeBatch(8, 1, {6, 6, 6});
  EXPECT_TRUE(AugmentBatch(p, same.In(), opt).ok());
  // Spatial after regions: padding -1 would make the out-of-bounds voxels foreground; 0 is fine.
  TrainerConfig tc;
  tc.patch_size = {6, 6, 6};
  tc.regions = std::vector<std::vector<int64_t>>{{1, 2}, {2}};
  auto valid = NnunetValidationPipeline(tc);  // remove_label, regions
  ASSERT_TRUE(valid.ok()) << valid.status();
  for (double pad : {-1.0, 0.0}) {
    SpatialConfig r = c;
    r.border_mode_seg = "constant";
    r.padding_value_seg = pad;
    PipelineSpec q = *valid;
    q.transforms.push_back(*TransformSpec::Make(*SpatialTransform::Create(r), 1.0));
    const absl::Status rs = AugmentBatch(q, x.In(), opt).status();
    if (pad == 0) {
      EXPECT_TRUE(rs.ok()) << rs;
    } else {
      EXPECT_EQ(rs.code(), absl::StatusCode::kInvalidArgument) << rs;
      EXPECT_NE(rs.message().find("padding_value_seg"), std::string::npos) << rs;
    }
  }
}

// After downsample_seg_for_ds only image-only entries may follow: the pyramid is the labels where DS stands.
TEST(Engine, DsFollowedByImageOnlyEntriesOnly) {
  const PipelineSpec base = Default({12, 12, 12});
  PipelineSpec after = base;
  for (const TransformSpec& ts : base.transforms)
    if (ts.kind == TransformKind::kGamma || ts.kind == TransformKind::kGaussianNoise) {
      after.transforms.push_back(ts);
      after.transforms.back().apply_probability = 1.0;
    }
  ASSERT_EQ(after.transforms.size(), base.transforms.size() + 3);
  const Batch x = MakeBatch(2, 2, base.input_patch_size);
  RunOptions opt;
  opt.seed = 9;
  auto a = AugmentBatch(base, x.In(), opt), b = AugmentBatch(after, x.In(), opt);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  ASSERT_EQ(a->seg.size(), b->seg.size());
  for (size_t l = 0; l < a->seg.size(); ++l) {  // same draws up to DS (per-entry streams): same pyramid
    ASSERT_EQ(a->seg[l].shape(), b->seg[l].shape());
    EXPECT_EQ(std::memcmp(a->seg[l].raw_data(), b->seg[l].raw_data(), a->seg[l].nbytes()), 0) << "level " << l;
  }
  EXPECT_NE(std::memcmp(a->image.raw_data(), b->image.raw_data(), a->image.nbytes()), 0);  // noise moved the image

  // Entries that use the labels are refused after DS (they would desync the pyramid or fail per sample).
  const std::vector<nlohmann::json> label_entries = {
      {{"kind", "mirror"}, {"config", {{"allowed_axes", {0}}}}},
      {{"kind", "remove_label"}, {"config", {{"label_value", 1}, {"set_to", 0}}}},
      {{"kind", "histogram_equalization"}, {"config", {{"apply_to_channel", {0}}, {"in_seg", 0.5}}}}};
  for (const nlohmann::json& t : label_entries) {
    PipelineSpec bad = base;
    bad.transforms.push_back(*TransformSpec::FromJson(t));
    const absl::Status st = AugmentBatch(bad, x.In(), opt).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << t.dump() << ": " << st;
    EXPECT_NE(st.message().find("uses the labels after downsample_seg_for_ds"), std::string::npos) << st;
  }
  PipelineSpec ok = base;  // AugLab without regions reads no labels
  ok.transforms.push_back(
      *TransformSpec::FromJson({{"kind", "histogram_equalization"}, {"config", {{"apply_to_channel", {0}}}}}));
  EXPECT_TRUE(ok.CheckLayoutStable().ok());
}

TEST(Engine, Float16InputAndBadInputs) {
  const PipelineSpec spec = Default({8, 8, 8});
  Batch x = MakeBatch(2, 2, spec.input_patch_size);
  std::vector<uint16_t> half(x.image.size());
  for (size_t i = 0; i < half.size(); ++i) half[i] = kernels::FloatToHalfBits(x.image[i]);
  BatchInput in = x.In();
  in.image = TensorView{half.data(), x.ishape, DType::kFloat16};
  RunOptions opt;
  EXPECT_TRUE(AugmentBatch(spec, in, opt).ok());

  BatchInput bad = x.In();
  bad.image.shape = {0, 2, 8, 8, 8};
  auto s = AugmentBatch(spec, bad, opt).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("image.shape"), std::string::npos);
  bad = x.In();
  bad.image.shape = {2, 2, 8};
  EXPECT_EQ(AugmentBatch(spec, bad, opt).status().code(), absl::StatusCode::kInvalidArgument);
  bad = x.In();
  bad.image.dtype = DType::kInt16;
  s = AugmentBatch(spec, bad, opt).status();
  EXPECT_NE(s.message().find("image.dtype"), std::string::npos);
  bad = x.In();
  bad.seg.dtype = DType::kFloat32;
  s = AugmentBatch(spec, bad, opt).status();
  EXPECT_NE(s.message().find("seg.dtype"), std::string::npos);
  bad = x.In();
  bad.seg.shape.back() = 3;
  s = AugmentBatch(spec, bad, opt).status();
  EXPECT_NE(s.message().find("seg.shape"), std::string::npos);
  bad = x.In();
  bad.image.shape = {1, 1, 5000, 5000, 5000};
  EXPECT_EQ(AugmentBatch(spec, bad, opt).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
