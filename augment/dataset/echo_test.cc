// Data echoing (LoaderOptions::echo_factor): E consecutive global samples share one load (same case and box)
// and differ after augmentation (streams keyed by the global sample index); batches are a pure function of
// (config, seed, batch index); E = 1 is the loader without echoing.
#include <cstring>

#include "augment/dataset/batch_loader.h"
#include "augment/dataset/test_util.h"
#include "augment/engine.h"
#include "augment/pipeline.h"
#include "gtest/gtest.h"

namespace augmentd::dataset {
namespace {

using testing::ScratchDir;

class EchoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DatasetOptions o;
    o.dataset_dir = testing::MakeTinyDataset(dir_.Join("pre"), {{"c0", {9, 10, 11}}, {"c1", {12, 8, 9}}, {"c2", {10, 10, 10}}},
                                             /*b2nd=*/true, /*patch=*/{8, 8, 8}, /*batch=*/2);
    ds_ = *NnunetDataset::Open(o);
    TrainerConfig tc;
    tc.patch_size = {8, 8, 8};
    absl::StatusOr<PipelineSpec> spec = NnunetDefaultPipeline(tc);
    ASSERT_TRUE(spec.ok()) << spec.status();
    spec_ = *spec;
  }
  BatchLoader Loader(int64_t echo, int64_t batch_size = 2, int load_threads = 1) const {
    SamplerOptions so = SamplerOptions::ForTraining({8, 8, 8}, spec_.input_patch_size, batch_size, false);
    LoaderOptions lo;
    lo.echo_factor = echo;
    lo.load_threads = load_threads;
    return BatchLoader(ds_, *PatchSampler::Create(so, ds_->case_ids(), 77), lo);
  }
  BatchResult Augment(const HostBatch& b, uint64_t batch_index) const {
    BatchInput in;
    in.image = TensorView{b.data.data(), b.data_shape, augmentd::DType::kFloat32};
    in.seg = TensorView{b.seg.data(), b.seg_shape, augmentd::DType::kInt16};
    RunOptions ro;
    ro.seed = 77;
    ro.first_sample_index = batch_index * static_cast<uint64_t>(b.data_shape[0]);
    absl::StatusOr<BatchResult> r = AugmentBatch(spec_, in, ro);
    EXPECT_TRUE(r.ok()) << r.status();
    return *std::move(r);
  }
  static std::string SampleBytes(const HostTensor& t, int64_t j) {
    const size_t per = t.nbytes() / static_cast<size_t>(t.shape()[0]);
    return std::string(static_cast<const char*>(t.raw_data()) + static_cast<size_t>(j) * per, per);
  }

  ScratchDir dir_;
  std::shared_ptr<NnunetDataset> ds_;
  PipelineSpec spec_;
};

TEST_F(EchoTest, PairsShareTheCropAndDifferAfterAugmentation) {
  BatchLoader loader = Loader(2);
  int differing = 0;
  for (uint64_t batch = 0; batch < 6; ++batch) {
    absl::StatusOr<HostBatch> b = loader.LoadBatch(batch);
    ASSERT_TRUE(b.ok()) << b.status();
    const SamplePlan &p0 = b->samples[0], &p1 = b->samples[1];
    EXPECT_EQ(p0.load_index, batch);  // B = 2, E = 2: global samples 2b, 2b+1 → load b
    EXPECT_EQ(p1.load_index, batch);
    EXPECT_EQ(p0.case_id, p1.case_id);
    EXPECT_EQ(p0.box.lb, p1.box.lb);
    EXPECT_EQ(p0.box.ub, p1.box.ub);
    const size_t per = b->data.size() / 2;
    EXPECT_EQ(0, std::memcmp(b->data.data(), b->data.data() + per, per * sizeof(float)));
    BatchResult r = Augment(*b, batch);
    differing += SampleBytes(r.image, 0) != SampleBytes(r.image, 1);
  }
  EXPECT_EQ(differing, 6);
}

TEST_F(EchoTest, LoadIndexFollowsTheGlobalSampleAcrossBatches) {
  BatchLoader loader = Loader(3);  // B = 2: samples 0,1,2 → load 0; 3,4,5 → load 1
  absl::StatusOr<HostBatch> b0 = loader.LoadBatch(0), b1 = loader.LoadBatch(1), b2 = loader.LoadBatch(2);
  ASSERT_TRUE(b0.ok() && b1.ok() && b2.ok());
  EXPECT_EQ(b1->samples[0].load_index, 0u);
  EXPECT_EQ(b1->samples[1].load_index, 1u);
  EXPECT_EQ(b2->samples[0].load_index, 1u);
  EXPECT_EQ(b2->samples[1].load_index, 1u);
  const size_t per = b0->data.size() / 2;
  EXPECT_EQ(std::vector<float>(b1->data.begin(), b1->data.begin() + static_cast<std::ptrdiff_t>(per)),
            std::vector<float>(b0->data.begin(), b0->data.begin() + static_cast<std::ptrdiff_t>(per)));
  EXPECT_EQ(std::vector<float>(b2->data.begin(), b2->data.begin() + static_cast<std::ptrdiff_t>(per)),
            std::vector<float>(b1->data.begin() + static_cast<std::ptrdiff_t>(per), b1->data.end()));
  // Load 1 is the sampler's slot 1 of its batch 0.
  const PatchSampler& s = loader.sampler();
  EXPECT_EQ(b2->samples[0].case_index, s.ChooseCase(0, 1));
  EXPECT_EQ(b2->samples[0].force_fg, s.ForceForeground(0, 1));
}

TEST_F(EchoTest, ResumeAtAnyBatchReproducesTheBytes) {
  BatchLoader first = Loader(2);
  std::vector<HostBatch> run;
  for (uint64_t b = 0; b < 5; ++b) run.push_back(*first.LoadBatch(b));
  for (uint64_t start : {1u, 3u, 4u}) {
    BatchLoader resumed = Loader(2);  // a new session resuming at `start`
    for (uint64_t b = start; b < 5; ++b) {
      absl::StatusOr<HostBatch> again = resumed.LoadBatch(b);
      ASSERT_TRUE(again.ok());
      EXPECT_EQ(again->data, run[b].data) << "start " << start << " batch " << b;
      EXPECT_EQ(again->seg, run[b].seg);
      BatchResult x = Augment(run[b], b), y = Augment(*again, b);
      EXPECT_EQ(SampleBytes(x.image, 0) + SampleBytes(x.image, 1), SampleBytes(y.image, 0) + SampleBytes(y.image, 1));
    }
  }
}

TEST_F(EchoTest, EchoOneIsTheLoaderWithoutEchoing) {
  SamplerOptions so = SamplerOptions::ForTraining({8, 8, 8}, spec_.input_patch_size, 3, false);
  BatchLoader plain(ds_, *PatchSampler::Create(so, ds_->case_ids(), 77));
  BatchLoader echo1 = Loader(1, 3), echo0 = Loader(0, 3);
  EXPECT_EQ(echo0.options().echo_factor, 1);
  for (uint64_t b = 0; b < 8; ++b) {
    absl::StatusOr<HostBatch> x = plain.LoadBatch(b), y = echo1.LoadBatch(b), z = echo0.LoadBatch(b);
    ASSERT_TRUE(x.ok() && y.ok() && z.ok());
    EXPECT_EQ(x->data, y->data);
    EXPECT_EQ(x->seg, y->seg);
    EXPECT_EQ(x->data, z->data);
    for (int64_t j = 0; j < 3; ++j) {
      const SamplePlan& p = y->samples[static_cast<size_t>(j)];
      EXPECT_EQ(p.load_index, b * 3 + static_cast<uint64_t>(j));
      EXPECT_EQ(p.case_index, plain.sampler().ChooseCase(b, j));
      EXPECT_EQ(p.force_fg, plain.sampler().ForceForeground(b, j));
    }
  }
}

// Echoed slots copy their predecessor after the parallel crops (load_threads): the same bytes as one thread,
// including batches that start in the middle of an echo group (batch size 3, echo 2).
TEST_F(EchoTest, ParallelLoadsKeepEchoedSlotsIdentical) {
  const BatchLoader one = Loader(2, 3, 1), four = Loader(2, 3, 4);
  for (uint64_t b = 0; b < 6; ++b) {
    absl::StatusOr<HostBatch> x = one.LoadBatch(b), y = four.LoadBatch(b);
    ASSERT_TRUE(x.ok() && y.ok()) << x.status() << y.status();
    EXPECT_EQ(x->data, y->data) << b;
    EXPECT_EQ(x->seg, y->seg) << b;
  }
}

}  // namespace
}  // namespace augmentd::dataset
