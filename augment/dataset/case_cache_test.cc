// Cache tiers on the CPU: LRU budget/eviction/single-flight, host tier vs disk (bytes identical), prefetch,
// damaged cases through the cache. The GPU tier is tested in device_tier_test.cc (label gpu).
#include "augment/dataset/case_cache.h"

#include <atomic>
#include <cstring>
#include <filesystem>
#include <thread>

#include "augment/dataset/batch_loader.h"
#include "augment/dataset/test_util.h"
#include "gtest/gtest.h"

namespace augmentd::dataset {
namespace {

using testing::ScratchDir;

struct Blob {
  size_t size;
  size_t bytes() const { return size; }
};

LruCache<Blob>::Loader Make(size_t size, std::atomic<int>* calls = nullptr) {
  return [size, calls]() -> absl::StatusOr<std::shared_ptr<const Blob>> {
    if (calls != nullptr) ++*calls;
    return std::make_shared<const Blob>(Blob{size});
  };
}

TEST(LruCacheTest, EvictsLeastRecentlyUsedWithinBudget) {
  LruCache<Blob> c(100);
  bool hit = true;
  ASSERT_TRUE(c.GetOrLoad("a", Make(40), &hit).ok());
  EXPECT_FALSE(hit);
  ASSERT_TRUE(c.GetOrLoad("b", Make(40)).ok());
  ASSERT_TRUE(c.GetOrLoad("a", Make(40), &hit).ok());  // a is now most recent
  EXPECT_TRUE(hit);
  ASSERT_TRUE(c.GetOrLoad("c", Make(40)).ok());        // evicts b
  EXPECT_EQ(c.Keys(), (std::vector<std::string>{"c", "a"}));
  LruCounters n = c.counters();
  EXPECT_EQ(n.hits, 1u);
  EXPECT_EQ(n.misses, 3u);
  EXPECT_EQ(n.evictions, 1u);
  EXPECT_EQ(n.resident_bytes, 80u);
  EXPECT_EQ(n.resident_entries, 2u);
  ASSERT_TRUE(c.GetOrLoad("big", Make(101)).ok());  // served, not kept, nothing evicted
  EXPECT_EQ(c.Keys(), (std::vector<std::string>{"c", "a"}));
  EXPECT_EQ(c.counters().uncacheable, 1u);
  ASSERT_TRUE(c.GetOrLoad("d", Make(100)).ok());  // evicts both
  EXPECT_EQ(c.Keys(), (std::vector<std::string>{"d"}));
  EXPECT_EQ(c.counters().resident_bytes, 100u);
}

TEST(LruCacheTest, ErrorsAndNullValuesAreNotCached) {
  LruCache<Blob> c(100);
  int calls = 0;
  auto failing = [&]() -> absl::StatusOr<std::shared_ptr<const Blob>> {
    ++calls;
    return absl::DataLossError("x.b2nd: corrupt");
  };
  EXPECT_EQ(c.GetOrLoad("x", failing).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(c.GetOrLoad("x", failing).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(calls, 2);
  auto null = []() -> absl::StatusOr<std::shared_ptr<const Blob>> { return std::shared_ptr<const Blob>(); };
  absl::StatusOr<std::shared_ptr<const Blob>> v = c.GetOrLoad("n", null);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, nullptr);
  EXPECT_FALSE(c.Contains("n"));
  EXPECT_EQ(c.counters().resident_entries, 0u);
  EXPECT_EQ(c.counters().uncacheable, 1u);
}

TEST(LruCacheTest, ConcurrentRequestsLoadOnce) {
  LruCache<Blob> c(1000);
  std::atomic<int> calls{0};
  auto slow = [&]() -> absl::StatusOr<std::shared_ptr<const Blob>> {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return std::make_shared<const Blob>(Blob{10});
  };
  std::vector<std::thread> threads;
  std::vector<std::shared_ptr<const Blob>> got(8);
  for (size_t i = 0; i < got.size(); ++i) threads.emplace_back([&, i] { got[i] = *c.GetOrLoad("k", slow); });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(calls.load(), 1);
  for (const auto& g : got) EXPECT_EQ(g, got[0]);
  EXPECT_EQ(c.counters().misses, 1u);
  EXPECT_EQ(c.counters().hits, 7u);
}

TEST(HostAllocatorTest, PlainAllocatesAndFrees) {
  absl::StatusOr<HostBuffer> b = HostBuffer::Allocate(PlainHostAllocator(), 1024);
  ASSERT_TRUE(b.ok());
  EXPECT_NE(b->data(), nullptr);
  EXPECT_EQ(b->size(), 1024u);
  HostBuffer moved = *std::move(b);
  EXPECT_EQ(moved.size(), 1024u);
  EXPECT_STREQ(PlainHostAllocator()->name(), "plain");
  if (CudaDeviceCount() == 0) {
    EXPECT_STREQ(DefaultHostAllocator()->name(), "plain");
  }
}

// Huge-page buffers start on a 2 MiB boundary and are fully writable up to their (unrounded) size.
TEST(HostAllocatorTest, HugePageBuffersAreAlignedAndWritable) {
  EXPECT_STREQ(HugePageHostAllocator()->name(), "huge");
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{3} << 20, (size_t{4} << 20) + 5}) {
    absl::StatusOr<HostBuffer> b = HostBuffer::Allocate(HugePageHostAllocator(), bytes);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % (2u << 20), 0u) << bytes;
    std::memset(b->data(), 0x5a, bytes);
    if (bytes > 0) {
      EXPECT_EQ(static_cast<const uint8_t*>(b->data())[bytes - 1], 0x5a);
    }
  }
}

class CaseCacheTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    DatasetOptions o;
    o.dataset_dir = testing::MakeTinyDataset(dir_.Join("pre"),
                                             {{"c0", {5, 6, 7}}, {"c1", {12, 4, 9}}, {"c2", {7, 7, 7}}, {"c3", {9, 5, 6}}},
                                             /*b2nd=*/GetParam(), /*patch=*/{6, 6, 6}, /*batch=*/3);
    dataset_dir_ = o.dataset_dir;
    absl::StatusOr<std::shared_ptr<NnunetDataset>> ds = NnunetDataset::Open(o);
    ASSERT_TRUE(ds.ok()) << ds.status();
    ds_ = *ds;
  }
  BatchLoader Loader(std::shared_ptr<CaseCache> cache, int64_t prefetch = 0) const {
    SamplerOptions so = SamplerOptions::ForTraining({6, 6, 6}, {10, 9, 11}, 3, false);
    LoaderOptions lo;
    lo.cache = std::move(cache);
    lo.prefetch_batches = prefetch;
    return BatchLoader(ds_, *PatchSampler::Create(so, ds_->case_ids(), 21), lo);
  }
  // LoadBatch through `cache` equals LoadBatch from disk, byte for byte, for batches [0, n).
  void ExpectSameAsDisk(std::shared_ptr<CaseCache> cache, uint64_t n) const {
    BatchLoader disk = Loader(nullptr), cached = Loader(std::move(cache));
    for (uint64_t batch = 0; batch < n; ++batch) {
      absl::StatusOr<HostBatch> a = disk.LoadBatch(batch), b = cached.LoadBatch(batch);
      ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
      ASSERT_EQ(a->data.size(), b->data.size());
      EXPECT_EQ(0, std::memcmp(a->data.data(), b->data.data(), a->data.size() * sizeof(float))) << batch;
      EXPECT_EQ(a->seg, b->seg) << batch;
    }
  }
  // Decoded bytes of a case: float32 data + int16 seg (MakeTinyDataset writes int16 labels).
  static uint64_t CaseBytes(int64_t voxels) { return static_cast<uint64_t>(voxels) * 6; }

  ScratchDir dir_;
  std::string dataset_dir_;
  std::shared_ptr<NnunetDataset> ds_;
};

TEST_P(CaseCacheTest, CachedCropsAreByteIdenticalToDisk) {
  CaseCacheOptions co;
  co.host_budget_bytes = 1 << 20;
  co.prefetch_threads = 0;
  absl::StatusOr<std::shared_ptr<CaseCache>> cache = CaseCache::Create(ds_, co);
  ASSERT_TRUE(cache.ok()) << cache.status();
  ExpectSameAsDisk(*cache, 30);
  const CaseCacheStats s = (*cache)->Stats();
  EXPECT_EQ(s.host.misses, 4u);  // each case decoded once
  EXPECT_EQ(s.host.hits, 30u * 3 - 4);  // one lookup per sample
  EXPECT_EQ(s.host.resident_entries, 4u);
  EXPECT_EQ(s.host.resident_bytes, CaseBytes(5 * 6 * 7 + 12 * 4 * 9 + 7 * 7 * 7 + 9 * 5 * 6));
}

TEST_P(CaseCacheTest, Int8SegmentationStaysInt8AndCropsIdentically) {
  if (!GetParam()) GTEST_SKIP() << "int8 seg written as .b2nd only";
  const Shape spatial{7, 7, 7};
  std::vector<int8_t> seg8;
  for (int16_t v : testing::TinySeg(spatial)) seg8.push_back(static_cast<int8_t>(v));
  testing::WriteB2nd(dataset_dir_ + "/nnUNetPlans_3d_fullres/c2_seg.b2nd", DType::kInt8, {1, 7, 7, 7},
                     testing::Bytes(seg8), {1, 4, 4, 4}, {1, 2, 2, 2});
  CaseCacheOptions co;
  co.host_budget_bytes = 1 << 20;
  std::shared_ptr<CaseCache> cache = *CaseCache::Create(ds_, co);
  absl::StatusOr<std::shared_ptr<const HostCase>> c2 = cache->GetHost("c2");
  ASSERT_TRUE(c2.ok()) << c2.status();
  EXPECT_EQ((*c2)->seg_dtype(), DType::kInt8);
  EXPECT_EQ((*c2)->bytes(), 343u * 5);
  ExpectSameAsDisk(cache, 20);
}

TEST_P(CaseCacheTest, BudgetEvictsLeastRecentlyUsedCases) {
  CaseCacheOptions co;
  co.host_budget_bytes = CaseBytes(12 * 4 * 9) + CaseBytes(7 * 7 * 7);  // c1 + c2 fit, not a third case
  co.prefetch_threads = 0;
  std::shared_ptr<CaseCache> cache = *CaseCache::Create(ds_, co);
  for (const char* id : {"c1", "c2", "c1", "c0", "c3"}) ASSERT_TRUE(cache->GetHost(id).ok());
  CaseCacheStats s = cache->Stats();
  EXPECT_EQ(s.host.misses, 4u);
  EXPECT_EQ(s.host.hits, 1u);
  EXPECT_EQ(s.host.evictions, 2u);  // c0 evicts c2; c3 evicts c1
  EXPECT_LE(s.host.resident_bytes, co.host_budget_bytes);
  EXPECT_EQ(s.host.resident_entries, 2u);
  // Through the loader, every crop stays correct whatever is evicted.
  ExpectSameAsDisk(cache, 20);
  EXPECT_LE(cache->Stats().host.resident_bytes, co.host_budget_bytes);
  EXPECT_GT(cache->Stats().host.evictions, 2u);
}

TEST_P(CaseCacheTest, CasesLargerThanTheBudgetAreCroppedFromDisk) {
  CaseCacheOptions co;
  co.host_budget_bytes = CaseBytes(7 * 7 * 7);  // one of c0 (210 voxels), c2 (343), c3 (270) at a time; c1 (432) never
  co.prefetch_threads = 0;
  std::shared_ptr<CaseCache> cache = *CaseCache::Create(ds_, co);
  absl::StatusOr<std::shared_ptr<const CaseHandle>> c1 = cache->OpenCase("c1");
  ASSERT_TRUE(c1.ok()) << c1.status();
  EXPECT_EQ((*c1)->data().ElementData() == nullptr, GetParam());  // the disk case (.b2nd: decoded on read)
  EXPECT_EQ(cache->Stats().host.uncacheable, 1u);
  EXPECT_EQ(cache->Stats().host.resident_entries, 0u);
  ExpectSameAsDisk(cache, 20);
  EXPECT_LE(cache->Stats().host.resident_bytes, co.host_budget_bytes);
}

TEST_P(CaseCacheTest, PrefetchLoadsUpcomingCases) {
  CaseCacheOptions co;
  co.host_budget_bytes = 1 << 20;
  co.prefetch_threads = 2;
  std::shared_ptr<CaseCache> cache = *CaseCache::Create(ds_, co);
  BatchLoader loader = Loader(cache);
  std::set<std::string> upcoming;
  for (uint64_t b = 0; b < 3; ++b) {
    absl::StatusOr<std::vector<SamplePlan>> plans = loader.PlanBatch(b);
    ASSERT_TRUE(plans.ok()) << plans.status();
    for (const SamplePlan& p : *plans) upcoming.insert(p.case_id);
  }
  // PlanBatch went through the host tier: start from a fresh cache.
  cache = *CaseCache::Create(ds_, co);
  loader = Loader(cache);
  loader.PrefetchBatches(0, 3);
  cache->WaitForPrefetches();
  CaseCacheStats s = cache->Stats();
  EXPECT_EQ(s.prefetch_loaded, upcoming.size());
  EXPECT_EQ(s.prefetch_failed, 0u);
  EXPECT_EQ(s.host.resident_entries, upcoming.size());
  for (uint64_t b = 0; b < 3; ++b) ASSERT_TRUE(loader.LoadBatch(b).ok());
  EXPECT_EQ(cache->Stats().host.misses, upcoming.size());  // only the prefetches missed
  // LoadBatch(b) with prefetch_batches queues the following batches itself.
  cache = *CaseCache::Create(ds_, co);
  BatchLoader ahead = Loader(cache, /*prefetch=*/4);
  ASSERT_TRUE(ahead.LoadBatch(0).ok());
  cache->WaitForPrefetches();
  EXPECT_GT(cache->Stats().prefetch_requested, 0u);
}

TEST_P(CaseCacheTest, DamagedCaseFailsOnlyItsOwnRequests) {
  const std::string file = dataset_dir_ + (GetParam() ? "/nnUNetPlans_3d_fullres/c1.b2nd" : "/nnUNetPlans_3d_fullres/c1.npz");
  std::string bytes = testing::ReadFile(file);
  bytes.resize(bytes.size() / 2);
  testing::WriteFile(file, bytes);
  CaseCacheOptions co;
  co.host_budget_bytes = 1 << 20;
  co.prefetch_threads = 1;
  std::shared_ptr<CaseCache> cache = *CaseCache::Create(ds_, co);
  absl::Status st = cache->GetHost("c1").status();
  EXPECT_TRUE(st.code() == absl::StatusCode::kDataLoss) << st;
  EXPECT_NE(st.message().find(GetParam() ? "c1.b2nd" : "c1.npz"), std::string::npos) << st;
  EXPECT_EQ(cache->GetHost("c1").status().code(), st.code());  // not cached: read (and fail) again
  EXPECT_EQ(cache->Stats().host.misses, 2u);
  EXPECT_TRUE(cache->GetHost("c0").ok());
  cache->Prefetch({"c1", "c2"});
  cache->WaitForPrefetches();
  EXPECT_EQ(cache->Stats().prefetch_failed, 1u);
  EXPECT_EQ(cache->Stats().prefetch_loaded, 1u);
  // Batches without c1 load; batches with c1 fail naming the file.
  BatchLoader loader = Loader(cache);
  int failed = 0, ok = 0;
  for (uint64_t b = 0; b < 20; ++b) {
    absl::StatusOr<HostBatch> r = loader.LoadBatch(b);
    if (r.ok()) {
      ++ok;
      for (const SamplePlan& p : r->samples) EXPECT_NE(p.case_id, "c1");
    } else {
      ++failed;
      EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
    }
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(failed, 0);
  // A missing case file: NOT_FOUND naming it.
  std::filesystem::remove(dataset_dir_ + (GetParam() ? "/nnUNetPlans_3d_fullres/c3_seg.b2nd" : "/nnUNetPlans_3d_fullres/c3.npz"));
  cache = *CaseCache::Create(ds_, co);  // c3 may be resident in the old one
  st = cache->GetHost("c3").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound) << st;
  EXPECT_NE(st.message().find("c3"), std::string::npos) << st;
}

TEST_P(CaseCacheTest, SessionsOfOneDatasetShareACache) {
  CaseCacheOptions co;
  co.host_budget_bytes = 1 << 20;
  std::shared_ptr<CaseCache> a = *SharedCaseCache(ds_, co), b = *SharedCaseCache(ds_, co);
  EXPECT_EQ(a, b);
  co.host_budget_bytes = 2 << 20;
  std::shared_ptr<CaseCache> other = *SharedCaseCache(ds_, co);
  EXPECT_NE(a, other);
  co.host_budget_bytes = 1 << 20;
  ASSERT_TRUE(a->GetHost("c0").ok());
  EXPECT_EQ(b->Stats().host.resident_entries, 1u);
  a.reset();
  b.reset();
  std::shared_ptr<CaseCache> fresh = *SharedCaseCache(ds_, co);  // the old one died with its sessions
  EXPECT_EQ(fresh->Stats().host.resident_entries, 0u);
}

TEST_P(CaseCacheTest, DeviceTierNeedsAGpu) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "a GPU is present (device_tier_test covers it)";
  CaseCacheOptions co;
  co.device_budget_bytes = 1 << 20;
  EXPECT_EQ(CaseCache::Create(ds_, co).status().code(), absl::StatusCode::kFailedPrecondition);
  co.device_budget_bytes = 0;
  std::shared_ptr<CaseCache> cache = *CaseCache::Create(ds_, co);
  EXPECT_EQ(cache->GetDevice("c0").status().code(), absl::StatusCode::kFailedPrecondition);
  DeviceBatchBuffers dst;
  EXPECT_EQ(Loader(cache).LoadBatchToDevice(0, dst, nullptr).status().code(), absl::StatusCode::kFailedPrecondition);
}

INSTANTIATE_TEST_SUITE_P(Formats, CaseCacheTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "b2nd" : "npz"; });

}  // namespace
}  // namespace augmentd::dataset
