// InputSlots: the lease rules of server-owned patch-mode input slots (real POSIX shm objects), their exported
// regions and ResolveSlotTensor's checks.
#include "server/input_slots.h"

#include <sys/stat.h>

#include <cstring>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace augmentd {
namespace {

std::unique_ptr<InputSlots> Slots(uint32_t n, uint64_t bytes, std::shared_ptr<MemoryBudget> budget = nullptr,
                                  const std::string& session = "t") {
  InputSlotsRequest r;
  r.kind = v1::DELIVERY_KIND_HOST_SHM;
  r.session_id = session;
  r.count = n;
  r.slot_bytes = bytes;
  r.device = DeviceInfo{};
  absl::StatusOr<std::unique_ptr<InputSlots>> slots = InputSlots::Create(r, ServerLimitsOptions{}, std::move(budget));
  EXPECT_TRUE(slots.ok()) << slots.status();
  return slots.ok() ? *std::move(slots) : nullptr;
}

TEST(InputSlotsTest, LeaseTakeRenewReclaim) {
  auto slots = Slots(2, 4096);
  ASSERT_NE(slots, nullptr);
  std::vector<v1::SlotLease> leases = slots->LeaseFree(7);
  ASSERT_EQ(leases.size(), 2u);
  EXPECT_TRUE(slots->LeaseFree(8).empty());  // another stream gets none while stream 7 holds them
  absl::StatusOr<SlotBuffer*> b = slots->Take(7, leases[1], "input_slot");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)->byte_size(), 4096u);
  // Handed over twice before it came back.
  absl::StatusOr<SlotBuffer*> twice = slots->Take(7, leases[1], "input_slot");
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(twice.status().message(), "released twice")) << twice.status();
  // Another stream.
  EXPECT_EQ(slots->Take(8, leases[0], "input_slot").status().code(), absl::StatusCode::kFailedPrecondition);
  // Out of range.
  v1::SlotLease bad;
  bad.set_slot(5);
  EXPECT_EQ(slots->Take(7, bad, "input_slot").status().code(), absl::StatusCode::kInvalidArgument);
  std::optional<v1::SlotLease> back = slots->Renew(1);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->slot(), 1u);
  EXPECT_EQ(back->generation(), leases[1].generation() + 1);
  // The old generation is stale now; the new one works.
  absl::StatusOr<SlotBuffer*> stale = slots->Take(7, leases[1], "input_slot");
  EXPECT_TRUE(absl::StrContains(stale.status().message(), "stale")) << stale.status();
  ASSERT_TRUE(slots->Take(7, *back, "input_slot").ok());
  // The stream ends with slot 1 in use: slot 0 is freed now, slot 1 when its task gives it back.
  EXPECT_EQ(slots->ReclaimOwner(7), 1u);
  EXPECT_EQ(slots->leased_slots(), 1u);
  EXPECT_FALSE(slots->Renew(1).has_value());
  EXPECT_EQ(slots->leased_slots(), 0u);
  EXPECT_EQ(slots->LeaseFree(8).size(), 2u);
}

TEST(InputSlotsTest, AnotherSessionsLeaseIsRefused) {
  auto a = Slots(1, 256, nullptr, "a");
  auto b = Slots(1, 256, nullptr, "b");
  v1::SlotLease la = a->LeaseFree(1)[0];
  v1::SlotLease lb = b->LeaseFree(1)[0];
  ASSERT_NE(la.generation(), lb.generation());  // random per-session generation bases
  absl::StatusOr<SlotBuffer*> s = b->Take(1, la, "input_slot");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(s.status().message(), "another session")) << s.status();
}

TEST(InputSlotsTest, ExportsNamedHostShmRegionsAndUnlinks) {
  auto budget = std::make_shared<MemoryBudget>(0);
  {
    auto slots = Slots(2, 1000, budget, "exp");
    ASSERT_NE(slots, nullptr);
    EXPECT_EQ(budget->used(), 2000u);
    std::vector<v1::OutputSlot> regions = slots->Export();
    ASSERT_EQ(regions.size(), 2u);
    EXPECT_EQ(regions[1].host_shm().name(), "input1");
    const std::string path = "/dev/shm" + regions[1].host_shm().key();
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_size, 1000);
    slots->Unlink();
    EXPECT_NE(stat(path.c_str(), &st), 0);
  }
  EXPECT_EQ(budget->used(), 0u);
}

TEST(InputSlotsTest, BudgetAndLimits) {
  auto budget = std::make_shared<MemoryBudget>(1000);
  InputSlotsRequest r;
  r.session_id = "lim";
  r.count = 2;
  r.slot_bytes = 600;
  EXPECT_EQ(InputSlots::Create(r, ServerLimitsOptions{}, budget).status().code(),
            absl::StatusCode::kResourceExhausted);
  ServerLimitsOptions limits;
  limits.max_session_memory_bytes = 1000;
  absl::Status s = InputSlots::Create(r, limits, nullptr).status();
  EXPECT_TRUE(absl::StrContains(s.message(), "max_session_memory_bytes")) << s;
  r.kind = v1::DELIVERY_KIND_CUDA_IPC;  // on a CPU device
  EXPECT_EQ(InputSlots::Create(r, ServerLimitsOptions{}, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(InputSlotsTest, ResolveSlotTensorChecksRegionSizeAndRange) {
  auto slots = Slots(1, 1024);
  SlotBuffer& buf = slots->buffer(0);
  v1::Tensor t;
  t.set_dtype(v1::DTYPE_FLOAT32);
  for (int64_t d : {1, 1, 4, 4, 4}) t.add_shape(d);
  t.mutable_host_shm()->set_region("input0");
  t.mutable_host_shm()->set_offset(256);
  t.mutable_host_shm()->set_byte_size(256);
  absl::StatusOr<InputTensor> ok = ResolveSlotTensor(t, "patches.image", v1::DELIVERY_KIND_HOST_SHM, "input0", buf);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->view.data, static_cast<const uint8_t*>(buf.data()) + 256);
  EXPECT_FALSE(ok->on_device);
  t.mutable_host_shm()->set_offset(900);  // does not fit
  absl::Status s = ResolveSlotTensor(t, "patches.image", v1::DELIVERY_KIND_HOST_SHM, "input0", buf).status();
  EXPECT_TRUE(absl::StrContains(s.message(), "does not fit input slot 'input0'")) << s;
  t.mutable_host_shm()->set_offset(0);
  t.mutable_host_shm()->set_region("input1");
  s = ResolveSlotTensor(t, "patches.image", v1::DELIVERY_KIND_HOST_SHM, "input0", buf).status();
  EXPECT_TRUE(absl::StrContains(s.message(), "patches.image.host_shm.region")) << s;
  t.mutable_host_shm()->set_region("input0");
  t.mutable_host_shm()->set_byte_size(100);
  s = ResolveSlotTensor(t, "patches.image", v1::DELIVERY_KIND_HOST_SHM, "input0", buf).status();
  EXPECT_TRUE(absl::StrContains(s.message(), "byte_size")) << s;
  t.clear_host_shm();
  t.set_inline_data(std::string(256, '\0'));
  EXPECT_EQ(ResolveSlotTensor(t, "patches.image", v1::DELIVERY_KIND_HOST_SHM, "input0", buf).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
