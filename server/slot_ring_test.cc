// SlotRing lease rules, MemoryBudget admission and ShmSlot / ShmInputRegion (real POSIX shm objects).
#include "server/slot_ring.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "server/shm_region.h"

namespace augmentd {
namespace {

class FakeBuffer final : public SlotBuffer {
 public:
  void* data() override { return bytes_; }
  uint64_t byte_size() const override { return sizeof(bytes_); }
  v1::OutputSlot Export(uint32_t index) const override {
    v1::OutputSlot s;
    s.set_index(index);
    return s;
  }

 private:
  char bytes_[16] = {};
};

std::shared_ptr<SlotRing> Ring(uint32_t n, std::shared_ptr<MemoryBudget> budget = nullptr, uint64_t reserved = 0) {
  std::vector<std::unique_ptr<SlotBuffer>> buffers;
  for (uint32_t i = 0; i < n; ++i) buffers.push_back(std::make_unique<FakeBuffer>());
  return std::make_shared<SlotRing>(v1::DELIVERY_KIND_HOST_SHM, std::move(buffers), std::move(budget), reserved);
}

// The client truncates its input object: a read is a Status naming the region (server/shm_region.h), never SIGBUS.
TEST(ShmRegionTest, InputRegionTruncatedByItsOwnerIsAStatus) {
  const std::string name = "/augmentd-test-cut-" + std::to_string(getpid());
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 8192), 0);
  v1::HostShmRegion region;
  region.set_name("in");
  region.set_key(name);
  region.set_offset(4096);
  region.set_byte_size(4096);
  absl::StatusOr<std::unique_ptr<ShmInputRegion>> in = ShmInputRegion::Open(region, "host_shm_regions[0]");
  ASSERT_TRUE(in.ok()) << in.status();
  std::vector<uint8_t> copy(4096);
  EXPECT_TRUE((*in)->Read(0, 4096, copy.data(), "image.host_shm").ok());
  ASSERT_EQ(ftruncate(fd, 4096 + 100), 0);
  absl::Status cut = (*in)->Read(0, 4096, copy.data(), "image.host_shm");
  EXPECT_EQ(cut.code(), absl::StatusCode::kFailedPrecondition) << cut;
  EXPECT_TRUE(absl::StrContains(cut.message(), "image.host_shm: host_shm_regions[0] 'in'")) << cut;
  EXPECT_TRUE(absl::StrContains(cut.message(), "truncated")) << cut;
  EXPECT_TRUE((*in)->Read(0, 100, copy.data(), "image.host_shm").ok());  // what is left still reads
  close(fd);
  shm_unlink(name.c_str());
}

TEST(SlotRingTest, StreamsOfOneSessionShareTheRing) {
  auto ring = Ring(4);
  int wakeups_a = 0, wakeups_b = 0;
  ring->AddWaiter(1, [&] { ++wakeups_a; });
  EXPECT_EQ(ring->Share(), 4u);  // alone: the whole ring
  std::vector<v1::SlotLease> a;
  for (int i = 0; i < 4; ++i) a.push_back(*ring->Acquire(1));
  ring->Lease(a[0].slot());
  EXPECT_EQ(ring->OverShare(1), 0u);
  // A second stream: the share halves, the first is told (wake-up) and is two over it.
  ring->AddWaiter(2, [&] { ++wakeups_b; });
  EXPECT_EQ(ring->Share(), 2u);
  EXPECT_EQ(wakeups_a, 1);
  EXPECT_EQ(ring->OverShare(1), 2u);
  EXPECT_FALSE(ring->Acquire(2).has_value());  // nothing free until the first gives its unsent batches back
  ring->Abandon(a[3].slot());
  ring->Abandon(a[2].slot());
  EXPECT_EQ(ring->OverShare(1), 0u);
  EXPECT_FALSE(ring->Acquire(1).has_value());  // at its share
  std::optional<v1::SlotLease> b1 = ring->Acquire(2), b2 = ring->Acquire(2);
  ASSERT_TRUE(b1.has_value() && b2.has_value());
  EXPECT_FALSE(ring->Acquire(2).has_value());
  // The second stream leaves: the first may use the whole ring again as slots come free.
  ring->Abandon(b1->slot());
  ring->Abandon(b2->slot());
  ring->RemoveWaiter(2);
  EXPECT_EQ(ring->Share(), 4u);
  EXPECT_TRUE(ring->Acquire(1).has_value());
  EXPECT_TRUE(ring->Acquire(1).has_value());
  EXPECT_GT(wakeups_b, 0);
}

TEST(SlotRingTest, LeasedSlotsAreNeverHandedOutUntilReleased) {
  auto ring = Ring(2);
  int wakeups = 0;
  ring->AddWaiter(1, [&] { ++wakeups; });
  std::optional<v1::SlotLease> a = ring->Acquire(1), b = ring->Acquire(1);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_NE(a->slot(), b->slot());
  EXPECT_FALSE(ring->Acquire(1).has_value());
  ring->Lease(a->slot());
  ring->Lease(b->slot());
  EXPECT_EQ(ring->leased_slots(), 2u);
  // Stale generation, another owner, unknown slot: ignored and counted.
  v1::SlotLease stale = *a;
  stale.set_generation(a->generation() + 1);
  EXPECT_FALSE(ring->Release(1, stale));
  EXPECT_FALSE(ring->Release(2, *a));
  v1::SlotLease unknown;
  unknown.set_slot(7);
  EXPECT_FALSE(ring->Release(1, unknown));
  EXPECT_EQ(ring->stale_releases(), 3u);
  EXPECT_EQ(wakeups, 0);
  EXPECT_FALSE(ring->Acquire(1).has_value());
  EXPECT_TRUE(ring->Release(1, *a));
  EXPECT_FALSE(ring->Release(1, *a));  // twice: already free
  EXPECT_EQ(wakeups, 1);
  std::optional<v1::SlotLease> c = ring->Acquire(1);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->slot(), a->slot());
  EXPECT_GT(c->generation(), a->generation());
  EXPECT_FALSE(ring->Release(1, *c));  // held, not leased yet
}

TEST(SlotRingTest, ReclaimOwnerFreesOnlyThatOwnersLeases) {
  auto ring = Ring(3);
  std::optional<v1::SlotLease> a = ring->Acquire(1), b = ring->Acquire(2), c = ring->Acquire(1);
  ring->Lease(a->slot());
  ring->Lease(b->slot());
  EXPECT_EQ(ring->ReclaimOwner(1), 1u);  // c is held (being written), not leased
  EXPECT_EQ(ring->leased_slots(), 1u);
  EXPECT_EQ(ring->free_slots(), 1u);
  ring->Abandon(c->slot());
  EXPECT_EQ(ring->free_slots(), 2u);
}

TEST(MemoryBudgetTest, RefusesBeyondTheLimitAndReturnsOnRingDestruction) {
  auto budget = std::make_shared<MemoryBudget>(100);
  ASSERT_TRUE(budget->Reserve(60).ok());
  absl::Status s = budget->Reserve(50);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(s.message(), "device_memory_budget_bytes")) << s;
  { auto ring = Ring(1, budget, 60); }
  EXPECT_EQ(budget->used(), 0u);
  EXPECT_TRUE(MemoryBudget(0).Reserve(uint64_t{1} << 60).ok());
}

TEST(ShmRegionTest, SlotIsUnlinkedAndInputRegionsAreSizeChecked) {
  const std::string name = "/augmentd-test-" + std::to_string(getpid());
  absl::StatusOr<std::unique_ptr<ShmSlot>> slot = ShmSlot::Create(name, 8192);
  ASSERT_TRUE(slot.ok()) << slot.status();
  std::memset((*slot)->data(), 7, 8192);
  EXPECT_EQ((*slot)->Export(3).host_shm().key(), name);
  EXPECT_EQ(ShmSlot::Create(name, 4096).status().code(), absl::StatusCode::kInternal);  // EEXIST: never reused

  v1::HostShmRegion region;
  region.set_name("in");
  region.set_key(name);
  region.set_offset(4096);
  region.set_byte_size(4096);
  absl::StatusOr<std::unique_ptr<ShmInputRegion>> in = ShmInputRegion::Open(region, "host_shm_regions[0]");
  ASSERT_TRUE(in.ok()) << in.status();
  uint8_t first = 0;
  ASSERT_TRUE((*in)->Read(0, 1, &first, "image").ok());
  EXPECT_EQ(first, 7);
  EXPECT_EQ((*in)->Read(4000, 200, &first, "x").code(), absl::StatusCode::kInvalidArgument);
  region.set_byte_size(4097);
  absl::Status big = ShmInputRegion::Open(region, "host_shm_regions[0]").status();
  EXPECT_EQ(big.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(big.message(), "host_shm_regions[0].byte_size")) << big;
  region.set_key("/etc/passwd");
  EXPECT_EQ(ShmInputRegion::Open(region, "r").status().code(), absl::StatusCode::kInvalidArgument);
  region.set_key("/augmentd-no-such-object");
  region.set_byte_size(1);
  EXPECT_EQ(ShmInputRegion::Open(region, "r").status().code(), absl::StatusCode::kNotFound);

  (*slot)->Unlink();
  struct stat st {};
  EXPECT_NE(stat(("/dev/shm" + name).c_str(), &st), 0);
  EXPECT_EQ(static_cast<char*>((*slot)->data())[8191], 7);  // the mapping outlives the name
}

}  // namespace
}  // namespace augmentd
