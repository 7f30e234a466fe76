// Files truncated under an open reader (issue 20): a read of a .npy, .npz (stored member) or .b2nd array whose
// file was cut to half after it was opened must be DATA_LOSS naming the file, not SIGBUS; other arrays and a
// fresh open of the rewritten file read fine; a SIGBUS outside any guarded read still kills (death test).
#include "augment/dataset/mapping_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "augment/dataset/b2nd_reader.h"
#include "augment/dataset/mapped_file.h"
#include "augment/dataset/npy_reader.h"
#include "augment/dataset/npz_reader.h"
#include "augment/dataset/test_util.h"
#include "gtest/gtest.h"

namespace augmentd::dataset {
namespace {

using testing::Bytes;
using testing::Iota;
using testing::ScratchDir;

const Shape kShape = {1, 64, 64, 64};  // 1 MiB of float32: the second half spans many pages

void CheckTruncatedReadIsDataLoss(const std::string& path, const std::string& kind) {
  SCOPED_TRACE(kind);
  const std::string full = testing::ReadFile(path);
  auto open = [&]() { return kind == "npz" ? OpenNpzMember(path, "data") : OpenCaseArray(path); };
  absl::StatusOr<std::unique_ptr<CaseArray>> a = open();
  ASSERT_TRUE(a.ok()) << a.status();
  std::vector<float> out(static_cast<size_t>(NumElements(kShape)));
  ASSERT_TRUE((*a)->ReadAll(DType::kFloat32, out.data(), out.size() * 4).ok());
  ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(full.size() / 2)), 0);
  const uint64_t faults = MappingFaults();
  absl::Status st = (*a)->ReadAll(DType::kFloat32, out.data(), out.size() * 4);
  EXPECT_TRUE(absl::IsDataLoss(st)) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), path)) << st;
  EXPECT_GT(MappingFaults(), faults);
  // Poisoned for good: a second read fails the same way, without a fault.
  st = (*a)->ReadAll(DType::kFloat32, out.data(), out.size() * 4);
  EXPECT_TRUE(absl::IsDataLoss(st)) << st;
  // Rewritten in full: a fresh open maps it afresh (the shared mapping cache never hands out a poisoned one).
  testing::WriteFile(path, full);
  absl::StatusOr<std::unique_ptr<CaseArray>> b = open();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE((*b)->ReadAll(DType::kFloat32, out.data(), out.size() * 4).ok());
  EXPECT_EQ(out[out.size() - 1], Iota(NumElements(kShape)).back());
}

TEST(MappingGuardTest, TruncatedNpyIsDataLoss) {
  ScratchDir dir;
  const std::string path = dir.path() + "/c.npy";
  testing::WriteFile(path, testing::NpyBytes(DType::kFloat32, kShape, Bytes(Iota(NumElements(kShape)))));
  CheckTruncatedReadIsDataLoss(path, "npy");
}

TEST(MappingGuardTest, TruncatedNpzStoredMemberIsDataLoss) {
  ScratchDir dir;
  const std::string path = dir.path() + "/c.npz";
  const std::string npy = testing::NpyBytes(DType::kFloat32, kShape, Bytes(Iota(NumElements(kShape))));
  testing::WriteFile(path, testing::ZipBytes({{"data.npy", npy}}, /*deflate=*/false));
  CheckTruncatedReadIsDataLoss(path, "npz");
}

TEST(MappingGuardTest, TruncatedB2ndIsDataLoss) {
  ScratchDir dir;
  const std::string path = dir.path() + "/c.b2nd";
  testing::WriteB2nd(path, DType::kFloat32, kShape, Bytes(Iota(NumElements(kShape))), {1, 32, 32, 32},
                     {1, 16, 16, 16});
  CheckTruncatedReadIsDataLoss(path, "b2nd");
}

TEST(MappingGuardTest, SigbusOutsideAGuardedReadStillKills) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ScratchDir dir;
  const std::string path = dir.path() + "/c.npy";
  testing::WriteFile(path, testing::NpyBytes(DType::kFloat32, kShape, Bytes(Iota(NumElements(kShape)))));
  EXPECT_EXIT(
      {
        absl::StatusOr<std::shared_ptr<const MappedFile>> f = MappedFile::Open(path);
        { MappingRead installs_the_handler((*f)->range()); }
        if (truncate(path.c_str(), 0) != 0) _exit(3);
        // The "threadsafe" style runs this test again in a child, whose ScratchDir is never destroyed: the child
        // removes its file and folder itself, best effort (the mapping keeps the truncated file: the read still faults).
        (void)unlink(path.c_str());
        (void)rmdir(dir.path().c_str());
        volatile uint8_t x = (*f)->data()[(*f)->size() - 1];  // unguarded: must die as before
        (void)x;
        _exit(0);
      },
      // Killed by SIGBUS, or (under ASan, whose handler we chain to) its report and a non-zero exit, not the
      // truncate failure's 3.
      [](int status) {
        return WIFSIGNALED(status) ? WTERMSIG(status) == SIGBUS
                                   : WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 3;
      },
      "");
}

}  // namespace
}  // namespace augmentd::dataset
