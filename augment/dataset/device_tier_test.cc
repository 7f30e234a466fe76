// GPU cache tier (label gpu; skips without a GPU): the crop kernel vs the CPU crop (bytes identical, incl.
// padding, boxes past every edge, the all-outside quirk, int8 and int16 labels), device-tier LRU budget,
// LoadBatchToDevice vs LoadBatch, echoing and the host fallback for cases larger than the budget.
#include <cuda_runtime.h>

#include <cstring>

#include "augment/dataset/batch_loader.h"
#include "augment/dataset/case_cache.h"
#include "augment/dataset/test_util.h"
#include "gtest/gtest.h"

namespace augmentd::dataset {
namespace {

using testing::ScratchDir;

// Device buffers for one batch, copied back for comparison.
struct DeviceBuffers {
  explicit DeviceBuffers(size_t image_elems, size_t seg_elems) {
    EXPECT_EQ(cudaMalloc(&image, image_elems * sizeof(float)), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&seg, seg_elems * sizeof(int16_t)), cudaSuccess);
    // Garbage first, so that unwritten voxels show.
    cudaMemset(image, 0x7f, image_elems * sizeof(float));
    cudaMemset(seg, 0x7f, seg_elems * sizeof(int16_t));
    dst = DeviceBatchBuffers{image, image_elems, seg, seg_elems};
  }
  ~DeviceBuffers() {
    cudaFree(image);
    cudaFree(seg);
  }
  std::vector<float> Image() const {
    std::vector<float> v(dst.image_elems);
    EXPECT_EQ(cudaMemcpy(v.data(), image, v.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }
  std::vector<int16_t> Seg() const {
    std::vector<int16_t> v(dst.seg_elems);
    EXPECT_EQ(cudaMemcpy(v.data(), seg, v.size() * sizeof(int16_t), cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }
  float* image = nullptr;
  int16_t* seg = nullptr;
  DeviceBatchBuffers dst;
};

class DeviceTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    DatasetOptions o;
    o.dataset_dir = testing::MakeTinyDataset(dir_.Join("pre"),
                                             {{"c0", {5, 6, 7}}, {"c1", {12, 4, 9}}, {"c2", {7, 7, 7}}, {"big", {20, 20, 20}}},
                                             /*b2nd=*/true, /*patch=*/{6, 6, 6}, /*batch=*/3);
    // c2's labels as int8 (nnU-Net's usual seg dtype): the kernel's int8 path.
    std::vector<int8_t> seg8;
    for (int16_t v : testing::TinySeg({7, 7, 7})) seg8.push_back(static_cast<int8_t>(v));
    testing::WriteB2nd(o.dataset_dir + "/nnUNetPlans_3d_fullres/c2_seg.b2nd", DType::kInt8, {1, 7, 7, 7},
                       testing::Bytes(seg8), {1, 4, 4, 4}, {1, 2, 2, 2});
    ds_ = *NnunetDataset::Open(o);
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  BatchLoader Loader(std::shared_ptr<CaseCache> cache, int64_t echo = 1) const {
    SamplerOptions so = SamplerOptions::ForTraining({6, 6, 6}, {10, 9, 11}, 3, false);
    LoaderOptions lo;
    lo.cache = std::move(cache);
    lo.echo_factor = echo;
    return BatchLoader(ds_, *PatchSampler::Create(so, ds_->case_ids(), 3), lo);
  }
  std::shared_ptr<CaseCache> Cache(uint64_t device_budget, uint64_t host_budget = 64 << 20) const {
    CaseCacheOptions co;
    co.host_budget_bytes = host_budget;
    co.device_budget_bytes = device_budget;
    absl::StatusOr<std::shared_ptr<CaseCache>> c = CaseCache::Create(ds_, co);
    EXPECT_TRUE(c.ok()) << c.status();
    return *c;
  }

  ScratchDir dir_;
  std::shared_ptr<NnunetDataset> ds_;
  cudaStream_t stream_ = nullptr;
};

TEST_F(DeviceTierTest, CropKernelMatchesCpuCropOnEveryKindOfBox) {
  std::shared_ptr<CaseCache> cache = Cache(64 << 20);
  BatchLoader loader = Loader(cache);
  for (const char* id : {"c0", "c1", "c2"}) {
    absl::StatusOr<std::shared_ptr<const DeviceCase>> dev = cache->GetDevice(id);
    ASSERT_TRUE(dev.ok() && *dev != nullptr) << dev.status();
    std::shared_ptr<const HostCase> host = *cache->GetHost(id);
    const Shape spatial(host->data_shape().begin() + 1, host->data_shape().end());
    // Inside, past every edge, negative corners, and boxes missing the case (zeros quirk).
    const std::vector<Box> boxes = {
        {{0, 0, 0}, {3, 3, 3}},
        {{-4, -3, -5}, {6, 5, 4}},
        {{spatial[0] - 2, spatial[1] - 1, spatial[2] - 3}, {spatial[0] + 5, spatial[1] + 4, spatial[2] + 6}},
        {{-2, 1, 1}, {spatial[0] + 3, 3, spatial[2] + 1}},
        {{spatial[0], 0, 0}, {spatial[0] + 4, 3, 3}},
        {{0, -5, 0}, {3, 0, 3}},
    };
    for (const Box& box : boxes) {
      const size_t n = static_cast<size_t>(NumElements(box.extent()));
      std::vector<float> want_data(n);
      std::vector<int16_t> want_seg(n);
      SamplePlan plan;
      plan.case_id = id;
      plan.box = box;
      ASSERT_TRUE(loader.LoadSample(plan, host->handle(), want_data.data(), n, want_seg.data(), n).ok());
      DeviceBuffers out(n, n);
      ASSERT_TRUE(CropOnDevice(**dev, box, out.image, out.seg, stream_).ok());
      ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
      std::vector<float> got = out.Image();
      EXPECT_EQ(0, std::memcmp(got.data(), want_data.data(), n * sizeof(float))) << id;
      EXPECT_EQ(out.Seg(), want_seg) << id;
    }
  }
}

TEST_F(DeviceTierTest, LoadBatchToDeviceMatchesLoadBatch) {
  for (int64_t echo : {1, 2}) {
    std::shared_ptr<CaseCache> cache = Cache(64 << 20);
    BatchLoader gpu = Loader(cache, echo), cpu = Loader(nullptr, echo);
    for (uint64_t batch = 0; batch < 12; ++batch) {
      absl::StatusOr<HostBatch> want = cpu.LoadBatch(batch);
      ASSERT_TRUE(want.ok()) << want.status();
      DeviceBuffers out(want->data.size(), want->seg.size());
      absl::StatusOr<DeviceBatch> got = gpu.LoadBatchToDevice(batch, out.dst, stream_);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
      EXPECT_EQ(got->data_shape, want->data_shape);
      EXPECT_EQ(out.Image(), want->data) << "echo " << echo << " batch " << batch;
      EXPECT_EQ(out.Seg(), want->seg);
      if (echo == 2) {
        EXPECT_GE(got->echoed, 1);
      }
    }
    const CaseCacheStats s = cache->Stats();
    EXPECT_GT(s.device.hits, 0u);
    // The 64 MiB budget holds all four cases: each is uploaded at most once, later batches hit.
    EXPECT_LE(s.device.misses - s.device.uncacheable, 4u);
    EXPECT_LE(s.device.resident_entries, 4u);
  }
}

TEST_F(DeviceTierTest, BudgetEvictsAndOversizedCasesFallBackToTheHost) {
  // 7x7x7 int8 seg case = 343·5 bytes; c0 = 210·6; c1 = 432·6; big = 8000·6 (larger than the budget).
  const uint64_t budget = 343 * 5 + 432 * 6;
  std::shared_ptr<CaseCache> cache = Cache(budget);
  for (const char* id : {"c2", "c1", "c0", "c2"}) ASSERT_TRUE(cache->GetDevice(id).ok());
  CaseCacheStats s = cache->Stats();
  EXPECT_LE(s.device.resident_bytes, budget);
  EXPECT_GE(s.device.evictions, 1u);
  absl::StatusOr<std::shared_ptr<const DeviceCase>> big = cache->GetDevice("big");
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(*big, nullptr);  // not resident: the loader crops it on the host
  BatchLoader gpu = Loader(cache), cpu = Loader(nullptr);
  int64_t from_host = 0;
  for (uint64_t batch = 0; batch < 12; ++batch) {
    absl::StatusOr<HostBatch> want = cpu.LoadBatch(batch);
    DeviceBuffers out(want->data.size(), want->seg.size());
    absl::StatusOr<DeviceBatch> got = gpu.LoadBatchToDevice(batch, out.dst, stream_);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    EXPECT_EQ(out.Image(), want->data);
    EXPECT_EQ(out.Seg(), want->seg);
    from_host += got->copied_from_host;
  }
  EXPECT_GT(from_host, 0);
  EXPECT_LE(cache->Stats().device.resident_bytes, budget);
  DeviceBuffers small(4, 4);
  EXPECT_EQ(gpu.LoadBatchToDevice(0, small.dst, stream_).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(DeviceTierTest, DevicePrefetchAndPinnedHostMemory) {
  std::shared_ptr<CaseCache> cache = Cache(64 << 20);
  EXPECT_STREQ(cache->Stats().host_allocator.c_str(), "pinned");
  cache->Prefetch({"c0", "c1"});
  cache->WaitForPrefetches();
  CaseCacheStats s = cache->Stats();
  EXPECT_EQ(s.prefetch_loaded, 2u);
  EXPECT_EQ(s.device.resident_entries, 2u);
  EXPECT_EQ(s.host.resident_entries, 2u);  // uploaded from the host tier
}

}  // namespace
}  // namespace augmentd::dataset
