#include "augment/dataset/b2nd_reader.h"

#include <thread>
#include <tuple>
#include <vector>

#include "augment/dataset/test_util.h"
#include "gtest/gtest.h"

namespace augmentd::dataset {
namespace {

using testing::B2ndCodec;
using testing::Bytes;
using testing::ExpectedIotaBox;
using testing::Iota;
using testing::ScratchDir;
using testing::WriteB2nd;
using testing::WriteFile;

const Shape kShape{2, 9, 10, 11};

// (codec, shuffle, chunk edge) — nnU-Net writes LZ4HC (≥2.8) or ZSTD (2.6–2.7), SHUFFLE or no filter.
class B2ndReaderTest : public ::testing::TestWithParam<std::tuple<B2ndCodec, bool, int>> {
 protected:
  void SetUp() override {
    const auto [codec, shuffle, chunk] = GetParam();
    path_ = dir_.Join("case.b2nd");
    WriteB2nd(path_, DType::kFloat32, kShape, Bytes(Iota(NumElements(kShape))), {1, chunk, chunk, chunk}, {1, 2, 2, 2},
              codec, shuffle);
  }
  ScratchDir dir_;
  std::string path_;
};

TEST_P(B2ndReaderTest, BoxesMatchReference) {
  absl::StatusOr<std::unique_ptr<CaseArray>> a = OpenB2nd(path_);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ((*a)->shape(), kShape);
  EXPECT_EQ((*a)->dtype(), DType::kFloat32);
  const std::vector<Box> boxes = {
      {{0, 0, 0}, {9, 10, 11}},  {{2, 3, 4}, {7, 8, 9}},       {{-3, 0, 0}, {4, 10, 11}},
      {{5, 6, 7}, {12, 14, 15}}, {{-4, -4, -4}, {13, 14, 15}}, {{-1, 9, 10}, {1, 11, 12}},
      {{8, -2, 3}, {9, 1, 4}},   {{9, 0, 0}, {12, 3, 3}},      {{0, 0}, {10, 11}},
  };
  for (const Box& box : boxes) {
    std::vector<float> out(static_cast<size_t>((*a)->BoxElements(box)));
    ASSERT_TRUE((*a)->ReadBox(box, -5.0, DType::kFloat32, out.data(), out.size() * 4).ok());
    EXPECT_EQ(out, ExpectedIotaBox(kShape, box, -5.0f)) << "lb " << box.lb[0] << "," << box.lb[1];
  }
}

TEST_P(B2ndReaderTest, ConcurrentReadsOfOneHandle) {
  absl::StatusOr<std::unique_ptr<CaseArray>> a = OpenB2nd(path_);
  ASSERT_TRUE(a.ok());
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Box box{{t - 1, 1, 2}, {t + 5, 8, 12}};
      std::vector<float> out(static_cast<size_t>((*a)->BoxElements(box)));
      for (int rep = 0; rep < 20; ++rep) {
        if (!(*a)->ReadBox(box, 0, DType::kFloat32, out.data(), out.size() * 4).ok()) return;
        if (out != ExpectedIotaBox(kShape, box, 0.0f)) return;
      }
      ok[static_cast<size_t>(t)] = 1;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok, std::vector<int>(4, 1));
}

INSTANTIATE_TEST_SUITE_P(CodecsAndFilters, B2ndReaderTest,
                         ::testing::Combine(::testing::Values(B2ndCodec::kLz4hc, B2ndCodec::kZstd), ::testing::Bool(),
                                            ::testing::Values(3, 4, 16)));

TEST(B2ndErrorsTest, Int16SegAndErrors) {
  ScratchDir dir;
  const Shape shape{1, 4, 5, 6};
  std::vector<int16_t> seg(120);
  for (size_t i = 0; i < seg.size(); ++i) seg[i] = static_cast<int16_t>(i % 4 - 1);
  WriteB2nd(dir.Join("s.b2nd"), DType::kInt16, shape, Bytes(seg), {1, 2, 3, 4}, {1, 1, 2, 2});
  absl::StatusOr<std::unique_ptr<CaseArray>> a = OpenB2nd(dir.Join("s.b2nd"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ((*a)->dtype(), DType::kInt16);
  std::vector<int16_t> all(120);
  ASSERT_TRUE((*a)->ReadAll(DType::kInt16, all.data(), 240).ok());
  EXPECT_EQ(all, seg);

  absl::Status st = OpenB2nd(dir.Join("missing.b2nd")).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(st.message().find("missing.b2nd"), std::string::npos);

  const std::string good = testing::ReadFile(dir.Join("s.b2nd"));
  for (size_t cut : {size_t{0}, size_t{10}, good.size() / 2, good.size() - 8}) {
    WriteFile(dir.Join("t.b2nd"), good.substr(0, cut));
    absl::StatusOr<std::unique_ptr<CaseArray>> t = OpenB2nd(dir.Join("t.b2nd"));
    if (t.ok()) {  // damage not visible in the header: the read must report it
      std::vector<int16_t> out(120);
      st = (*t)->ReadAll(DType::kInt16, out.data(), 240);
    } else {
      st = t.status();
    }
    EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << "cut " << cut << ": " << st;
    EXPECT_NE(st.message().find("t.b2nd"), std::string::npos);
  }
  WriteFile(dir.Join("g.b2nd"), std::string(4096, 'x'));
  EXPECT_EQ(OpenB2nd(dir.Join("g.b2nd")).status().code(), absl::StatusCode::kDataLoss);
}

TEST(B2ndErrorsTest, CorruptChunkPayload) {
  ScratchDir dir;
  const Shape shape{1, 16, 16, 16};
  WriteB2nd(dir.Join("c.b2nd"), DType::kFloat32, shape, Bytes(Iota(4096)), {1, 8, 8, 8}, {1, 4, 4, 4});
  std::string bytes = testing::ReadFile(dir.Join("c.b2nd"));
  // Flip bytes in the middle of the frame (chunk data); the header and trailer stay intact.
  for (size_t i = bytes.size() / 3; i < bytes.size() / 3 + 64; ++i) bytes[i] = static_cast<char>(~bytes[i]);
  WriteFile(dir.Join("c.b2nd"), bytes);
  absl::StatusOr<std::unique_ptr<CaseArray>> a = OpenB2nd(dir.Join("c.b2nd"));
  if (!a.ok()) {
    EXPECT_EQ(a.status().code(), absl::StatusCode::kDataLoss);
    return;
  }
  std::vector<float> out(4096);
  absl::Status st = (*a)->ReadAll(DType::kFloat32, out.data(), out.size() * 4);
  // LZ4 has no checksum: damaged payload may decode to wrong values instead of failing; it must not crash.
  if (!st.ok()) {
    EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(st.message().find("c.b2nd"), std::string::npos);
  }
}

}  // namespace
}  // namespace augmentd::dataset
