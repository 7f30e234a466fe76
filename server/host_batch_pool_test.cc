#include "server/host_batch_pool.h"

#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace augmentd {
namespace {

TEST(HostBatchPool, ReusesReturnedBuffers) {
  HostBatchPool pool(1000, 100, /*max_idle=*/2, dataset::PlainHostAllocator());
  float* first = nullptr;
  {
    absl::StatusOr<HostBatchPool::Lease> a = pool.Acquire();
    ASSERT_TRUE(a.ok()) << a.status();
    first = a->data();
    std::memset(a->data(), 0, 1000 * sizeof(float));  // the whole size is writable (ASan checks it)
    std::memset(a->seg(), 0, 100 * sizeof(int16_t));
  }
  EXPECT_EQ(pool.idle(), 1u);
  absl::StatusOr<HostBatchPool::Lease> b = pool.Acquire();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->data(), first);
  EXPECT_EQ(pool.allocated(), 1u);
  EXPECT_EQ(pool.idle(), 0u);
}

TEST(HostBatchPool, ConcurrentLeasesAreDistinctAndIdleIsCapped) {
  HostBatchPool pool(64, 8, /*max_idle=*/2, dataset::PlainHostAllocator());
  {
    std::vector<HostBatchPool::Lease> held;
    for (int i = 0; i < 4; ++i) {
      absl::StatusOr<HostBatchPool::Lease> l = pool.Acquire();
      ASSERT_TRUE(l.ok());
      held.push_back(*std::move(l));
    }
    for (size_t i = 0; i < held.size(); ++i)
      for (size_t j = i + 1; j < held.size(); ++j) {
        EXPECT_NE(held[i].data(), held[j].data());
        EXPECT_NE(held[i].seg(), held[j].seg());
      }
    EXPECT_EQ(pool.allocated(), 4u);
  }
  EXPECT_EQ(pool.idle(), 2u);  // two kept, two freed
}

TEST(HostBatchPool, ThreadsShareThePool) {
  HostBatchPool pool(4096, 512, /*max_idle=*/4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool, t] {
      for (int i = 0; i < 50; ++i) {
        absl::StatusOr<HostBatchPool::Lease> l = pool.Acquire();
        ASSERT_TRUE(l.ok());
        for (int k = 0; k < 4096; ++k) l->data()[k] = static_cast<float>(t);
        for (int k = 0; k < 4096; ++k) ASSERT_EQ(l->data()[k], static_cast<float>(t));  // nobody else wrote it
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(pool.allocated(), 4u);
  EXPECT_LE(pool.idle(), 4u);
}

class FailingAllocator : public dataset::HostAllocator {
 public:
  void* Allocate(size_t) override { return nullptr; }
  void Free(void*, size_t) override {}
  const char* name() const override { return "failing"; }
};

TEST(HostBatchPool, AllocationFailureIsResourceExhausted) {
  HostBatchPool pool(16, 1, 1, std::make_shared<FailingAllocator>());
  absl::StatusOr<HostBatchPool::Lease> l = pool.Acquire();
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace augmentd
