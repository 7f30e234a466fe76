// Corruption sweep over all three readers: random byte flips, overwritten runs and truncations of valid
// files must give OK (damage the format cannot see, e.g. in an LZ4 payload or raw .npy elements),
// DATA_LOSS or UNIMPLEMENTED naming the file — never a crash, hang or other code.
#include <random>
#include <string>

#include "augment/dataset/b2nd_reader.h"
#include "augment/dataset/npy_reader.h"
#include "augment/dataset/npz_reader.h"
#include "augment/dataset/test_util.h"
#include "gtest/gtest.h"

namespace augmentd::dataset {
namespace {

using testing::Bytes;
using testing::Iota;
using testing::ScratchDir;

std::string Damage(const std::string& good, std::mt19937* rng) {
  std::string b = good;
  std::uniform_int_distribution<size_t> pos(0, b.size() - 1);
  switch ((*rng)() % 3) {
    case 0:
      for (int i = 0, n = 1 + static_cast<int>((*rng)() % 16); i < n; ++i) b[pos(*rng)] = static_cast<char>((*rng)());
      break;
    case 1:
      b.resize(pos(*rng));
      break;
    default: {
      const size_t p = pos(*rng);
      for (size_t i = p; i < std::min(b.size(), p + 64); ++i) b[i] = static_cast<char>((*rng)());
    }
  }
  return b;
}

absl::Status OpenAndRead(const std::string& path, const std::string& kind) {
  absl::StatusOr<std::unique_ptr<CaseArray>> a = kind == "npz" ? OpenNpzMember(path, "seg") : OpenCaseArray(path);
  if (!a.ok()) return a.status();
  Box box{{-2, -2, -2}, {10, 11, 12}};
  std::vector<int16_t> out(static_cast<size_t>((*a)->BoxElements(box)));
  return (*a)->ReadBox(box, -1, DType::kInt16, out.data(), out.size() * 2);
}

TEST(ReaderCorruptionTest, RandomDamageNeverCrashes) {
  ScratchDir dir;
  const Shape shape{1, 9, 10, 11};
  std::vector<int16_t> seg(990);
  for (size_t i = 0; i < seg.size(); ++i) seg[i] = static_cast<int16_t>(i % 5 - 1);
  testing::WriteB2nd(dir.Join("g.b2nd"), DType::kInt16, shape, Bytes(seg), {1, 4, 4, 4}, {1, 2, 2, 2});
  const std::string npy = testing::NpyBytes(DType::kInt16, shape, Bytes(seg));
  const std::string npz = testing::ZipBytes(
      {{"data.npy", testing::NpyBytes(DType::kFloat32, shape, Bytes(Iota(990)))}, {"seg.npy", npy}}, true);
  const std::pair<std::string, std::string> files[] = {
      {"b2nd", testing::ReadFile(dir.Join("g.b2nd"))}, {"npy", npy}, {"npz", npz}};
  std::mt19937 rng(12345);
  for (const auto& [kind, good] : files) {
    const std::string path = dir.Join("d." + kind);
    int damaged = 0;
    for (int trial = 0; trial < 150; ++trial) {
      testing::WriteFile(path, Damage(good, &rng));
      const absl::Status st = OpenAndRead(path, kind);
      if (st.ok()) continue;
      ++damaged;
      EXPECT_TRUE(st.code() == absl::StatusCode::kDataLoss || st.code() == absl::StatusCode::kUnimplemented)
          << kind << " trial " << trial << ": " << st;
      EXPECT_NE(st.message().find("d." + kind), std::string::npos) << st;
    }
    EXPECT_GT(damaged, 30) << kind;  // most damage is detected
  }
}

}  // namespace
}  // namespace augmentd::dataset
