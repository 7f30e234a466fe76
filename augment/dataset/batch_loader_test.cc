#include "augment/dataset/batch_loader.h"

#include <filesystem>
#include <thread>

#include "augment/dataset/test_util.h"
#include "gtest/gtest.h"

namespace augmentd::dataset {
namespace {

using testing::ScratchDir;

class BatchLoaderTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    DatasetOptions o;
    o.dataset_dir = testing::MakeTinyDataset(dir_.Join("pre"), {{"c0", {5, 6, 7}}, {"c1", {12, 4, 9}}},
                                             /*b2nd=*/GetParam(), /*patch=*/{6, 6, 6}, /*batch=*/3);
    absl::StatusOr<std::shared_ptr<NnunetDataset>> ds = NnunetDataset::Open(o);
    ASSERT_TRUE(ds.ok()) << ds.status();
    ds_ = *ds;
  }
  ScratchDir dir_;
  std::shared_ptr<NnunetDataset> ds_;
};

TEST_P(BatchLoaderTest, CropsMatchReferenceWithPadding) {
  SamplerOptions so = SamplerOptions::ForTraining({6, 6, 6}, {10, 9, 11}, 3, false);
  absl::StatusOr<PatchSampler> sampler = PatchSampler::Create(so, ds_->case_ids(), 5);
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  BatchLoader loader(ds_, *std::move(sampler));
  int forced_with_fg = 0, forced = 0;
  for (uint64_t batch = 0; batch < 40; ++batch) {
    absl::StatusOr<HostBatch> b = loader.LoadBatch(batch);
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_EQ(b->data_shape, (Shape{3, 1, 10, 9, 11}));
    ASSERT_EQ(b->seg_shape, (Shape{3, 1, 10, 9, 11}));
    const size_t per = 10 * 9 * 11;
    for (size_t j = 0; j < 3; ++j) {
      const SamplePlan& p = b->samples[j];
      EXPECT_EQ(p.force_fg, j == 2);  // B=3: one forced slot, the last
      const Shape spatial(p.case_shape.begin() + 1, p.case_shape.end());
      EXPECT_EQ(std::vector<float>(b->data.begin() + static_cast<std::ptrdiff_t>(j * per),
                                   b->data.begin() + static_cast<std::ptrdiff_t>((j + 1) * per)),
                testing::ExpectedIotaBox(p.case_shape, p.box, 0.0f))
          << "batch " << batch << " slot " << j;
      // Seg: TinySeg inside, −1 outside.
      const std::vector<int16_t> seg = testing::TinySeg(spatial);
      bool has_fg = false;
      for (int64_t x = 0; x < 10; ++x)
        for (int64_t y = 0; y < 9; ++y)
          for (int64_t z = 0; z < 11; ++z) {
            const int64_t gx = x + p.box.lb[0], gy = y + p.box.lb[1], gz = z + p.box.lb[2];
            const bool in = gx >= 0 && gy >= 0 && gz >= 0 && gx < spatial[0] && gy < spatial[1] && gz < spatial[2];
            const int16_t want = in ? seg[static_cast<size_t>((gx * spatial[1] + gy) * spatial[2] + gz)] : -1;
            const int16_t got = b->seg[j * per + static_cast<size_t>((x * 9 + y) * 11 + z)];
            ASSERT_EQ(got, want);
            has_fg |= got > 0;
          }
      if (p.force_fg) {
        ++forced;
        forced_with_fg += has_fg;
      }
    }
  }
  EXPECT_EQ(forced, 40);
  EXPECT_EQ(forced_with_fg, 40);
}

TEST_P(BatchLoaderTest, DeterministicAndPlanMatchesLoad) {
  SamplerOptions so = SamplerOptions::ForValidation({6, 6, 6}, 3, false);
  BatchLoader a(ds_, *PatchSampler::Create(so, ds_->case_ids(), 9));
  BatchLoader b(ds_, *PatchSampler::Create(so, ds_->case_ids(), 9));
  absl::StatusOr<HostBatch> x = a.LoadBatch(17), y = b.LoadBatch(17);
  ASSERT_TRUE(x.ok() && y.ok());
  EXPECT_EQ(x->data, y->data);
  EXPECT_EQ(x->seg, y->seg);
  absl::StatusOr<std::vector<SamplePlan>> plans = a.PlanBatch(17);
  ASSERT_TRUE(plans.ok());
  for (size_t j = 0; j < 3; ++j) {
    EXPECT_EQ((*plans)[j].case_id, x->samples[j].case_id);
    EXPECT_EQ((*plans)[j].box.lb, x->samples[j].box.lb);
    // Validation crops are plan-patch sized.
    EXPECT_EQ((*plans)[j].box.ub[0] - (*plans)[j].box.lb[0], 6);
  }
  std::vector<float> data(216);
  std::vector<int16_t> seg(216);
  ASSERT_TRUE(a.LoadSample((*plans)[1], data.data(), data.size(), seg.data(), seg.size()).ok());
  EXPECT_EQ(std::vector<float>(x->data.begin() + 216, x->data.begin() + 432), data);
  EXPECT_EQ(a.LoadSample((*plans)[1], data.data(), 10, seg.data(), seg.size()).code(),
            absl::StatusCode::kInvalidArgument);
}

// The service decodes cases on a CPU thread pool: concurrent batches over one dataset (shared foreground
// location cache, shared case files) must equal the serial result.
TEST_P(BatchLoaderTest, ConcurrentBatchesEqualSerial) {
  SamplerOptions so = SamplerOptions::ForTraining({6, 6, 6}, {10, 9, 11}, 3, false);
  BatchLoader loader(ds_, *PatchSampler::Create(so, ds_->case_ids(), 21));
  constexpr int kThreads = 4, kPerThread = 8;
  std::vector<std::vector<float>> results(kThreads * kPerThread);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const int batch = t * kPerThread + i;
        absl::StatusOr<HostBatch> b = loader.LoadBatch(static_cast<uint64_t>(batch));
        if (b.ok()) results[static_cast<size_t>(batch)] = b->data;
      }
    });
  }
  for (auto& th : threads) th.join();
  BatchLoader serial(ds_, *PatchSampler::Create(so, ds_->case_ids(), 21));
  for (int batch = 0; batch < kThreads * kPerThread; ++batch) {
    absl::StatusOr<HostBatch> b = serial.LoadBatch(static_cast<uint64_t>(batch));
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(results[static_cast<size_t>(batch)], b->data) << batch;
  }
}

// LoaderOptions::load_threads crops a batch's samples in parallel: the same bytes as one thread.
TEST_P(BatchLoaderTest, ParallelSampleLoadsEqualOneThread) {
  SamplerOptions so = SamplerOptions::ForTraining({6, 6, 6}, {10, 9, 11}, 5, false);
  LoaderOptions parallel;
  parallel.load_threads = 4;
  BatchLoader one(ds_, *PatchSampler::Create(so, ds_->case_ids(), 8));
  BatchLoader four(ds_, *PatchSampler::Create(so, ds_->case_ids(), 8), parallel);
  for (uint64_t batch = 0; batch < 6; ++batch) {
    absl::StatusOr<HostBatch> a = one.LoadBatch(batch), b = four.LoadBatch(batch);
    ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
    EXPECT_EQ(a->data, b->data) << batch;
    EXPECT_EQ(a->seg, b->seg) << batch;
  }
}

TEST_P(BatchLoaderTest, LoadBatchIntoCallerBuffersEqualsLoadBatch) {
  SamplerOptions so = SamplerOptions::ForTraining({6, 6, 6}, {10, 9, 11}, 3, false);
  BatchLoader loader(ds_, *PatchSampler::Create(so, ds_->case_ids(), 4));
  const size_t per = 10 * 9 * 11;
  std::vector<float> data(3 * per, 123.0f);
  std::vector<int16_t> seg(3 * per, 77);
  for (uint64_t batch = 0; batch < 5; ++batch) {
    absl::StatusOr<HostBatch> want = loader.LoadBatch(batch);
    absl::StatusOr<HostBatch> got = loader.LoadBatchInto(batch, data.data(), data.size(), seg.data(), seg.size());
    ASSERT_TRUE(want.ok() && got.ok());
    EXPECT_TRUE(got->data.empty());
    EXPECT_EQ(got->data_shape, want->data_shape);
    EXPECT_EQ(data, want->data);
    EXPECT_EQ(seg, want->seg);
  }
  EXPECT_EQ(loader.LoadBatchInto(0, data.data(), data.size() - 1, seg.data(), seg.size()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(B2ndAndNpz, BatchLoaderTest, ::testing::Bool());

// Cascade: DatasetOptions::previous_stage_dir adds seg channel 1, the previous stage's <id>.npy (here (X, Y, Z)
// int8 with value (x + y + z) % 3) cropped with the same box and padded with −1, as nnUNetDataLoader's
// crop_and_pad_nd(seg_prev, bbox, -1); a missing file is NOT_FOUND naming the case.
TEST(BatchLoaderCascade, PreviousStageIsSegChannelOne) {
  ScratchDir dir;
  DatasetOptions o;
  o.dataset_dir = testing::MakeTinyDataset(dir.Join("pre"), {{"c0", {5, 6, 7}}, {"c1", {12, 4, 9}}}, /*b2nd=*/true,
                                           {6, 6, 6}, 2);
  o.previous_stage_dir = dir.Join("prev");
  std::filesystem::create_directories(o.previous_stage_dir);
  auto prev_of = [](const Shape& sp) {
    std::vector<int8_t> v(static_cast<size_t>(sp[0] * sp[1] * sp[2]));
    for (int64_t x = 0; x < sp[0]; ++x)
      for (int64_t y = 0; y < sp[1]; ++y)
        for (int64_t z = 0; z < sp[2]; ++z) v[static_cast<size_t>((x * sp[1] + y) * sp[2] + z)] = (x + y + z) % 3;
    return v;
  };
  testing::WriteFile(o.previous_stage_dir + "/c0.npy",
                     testing::NpyBytes(DType::kInt8, {5, 6, 7}, testing::Bytes(prev_of({5, 6, 7}))));
  {
    absl::StatusOr<std::shared_ptr<NnunetDataset>> ds = NnunetDataset::Open(o);
    ASSERT_TRUE(ds.ok()) << ds.status();
    EXPECT_EQ((*ds)->OpenCase("c1").status().code(), absl::StatusCode::kNotFound);
  }
  testing::WriteFile(o.previous_stage_dir + "/c1.npy",
                     testing::NpyBytes(DType::kInt8, {12, 4, 9}, testing::Bytes(prev_of({12, 4, 9}))));
  absl::StatusOr<std::shared_ptr<NnunetDataset>> ds = NnunetDataset::Open(o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  absl::StatusOr<PatchSampler> sampler =
      PatchSampler::Create(SamplerOptions::ForTraining({6, 6, 6}, {10, 9, 11}, 2, false), (*ds)->case_ids(), 3);
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  BatchLoader loader(*ds, *std::move(sampler));
  EXPECT_EQ(loader.SampleSegShape(), (Shape{2, 10, 9, 11}));
  for (uint64_t batch = 0; batch < 10; ++batch) {
    absl::StatusOr<HostBatch> b = loader.LoadBatch(batch);
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_EQ(b->seg_shape, (Shape{2, 2, 10, 9, 11}));
    const size_t per = 10 * 9 * 11;
    for (size_t j = 0; j < 2; ++j) {
      const SamplePlan& p = b->samples[j];
      const Shape sp(p.case_shape.begin() + 1, p.case_shape.end());
      const std::vector<int16_t> seg = testing::TinySeg(sp);
      const std::vector<int8_t> prev = prev_of(sp);
      for (int64_t x = 0; x < 10; ++x)
        for (int64_t y = 0; y < 9; ++y)
          for (int64_t z = 0; z < 11; ++z) {
            const int64_t gx = x + p.box.lb[0], gy = y + p.box.lb[1], gz = z + p.box.lb[2];
            const bool in = gx >= 0 && gy >= 0 && gz >= 0 && gx < sp[0] && gy < sp[1] && gz < sp[2];
            const size_t g = static_cast<size_t>((gx * sp[1] + gy) * sp[2] + gz);
            const size_t v = j * 2 * per + static_cast<size_t>((x * 9 + y) * 11 + z);
            ASSERT_EQ(b->seg[v], in ? seg[g] : -1);
            ASSERT_EQ(b->seg[v + per], in ? prev[g] : -1) << "batch " << batch << " slot " << j;
          }
    }
  }
}

}  // namespace
}  // namespace augmentd::dataset
