#include "augment/dataset/npz_reader.h"

#include <vector>

#include "augment/dataset/test_util.h"
#include "gtest/gtest.h"

namespace augmentd::dataset {
namespace {

using testing::Bytes;
using testing::Iota;
using testing::NpyBytes;
using testing::ScratchDir;
using testing::WriteFile;
using testing::ZipBytes;

std::string CaseZip(bool deflate) {
  const Shape shape{1, 3, 4, 5};
  std::vector<int8_t> seg(60);
  for (size_t i = 0; i < seg.size(); ++i) seg[i] = static_cast<int8_t>(i % 3 - 1);
  return ZipBytes({{"data.npy", NpyBytes(DType::kFloat32, shape, Bytes(Iota(60)))},
                   {"seg.npy", NpyBytes(DType::kInt8, shape, Bytes(seg))}},
                  deflate);
}

class NpzReaderTest : public ::testing::TestWithParam<bool> {};

TEST_P(NpzReaderTest, ReadsMembersStoredAndDeflated) {
  ScratchDir dir;
  WriteFile(dir.Join("c.npz"), CaseZip(GetParam()));
  absl::StatusOr<std::vector<std::string>> names = ListNpzMembers(dir.Join("c.npz"));
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_EQ(*names, (std::vector<std::string>{"data", "seg"}));

  absl::StatusOr<std::unique_ptr<CaseArray>> data = OpenNpzMember(dir.Join("c.npz"), "data");
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ((*data)->shape(), (Shape{1, 3, 4, 5}));
  Box box{{-1, 2, 3}, {2, 5, 7}};
  std::vector<float> out(static_cast<size_t>((*data)->BoxElements(box)));
  ASSERT_TRUE((*data)->ReadBox(box, 0, DType::kFloat32, out.data(), out.size() * 4).ok());
  // out[x][y][z] with x in [-1,2), y in [2,5), z in [3,7): x=-1 padded; (0,2,3) = 13.
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[3 * 4], 13.0f);

  absl::StatusOr<std::unique_ptr<CaseArray>> seg = OpenNpzMember(dir.Join("c.npz"), "seg");
  ASSERT_TRUE(seg.ok()) << seg.status();
  EXPECT_EQ((*seg)->dtype(), DType::kInt8);
  std::vector<int16_t> s(static_cast<size_t>((*seg)->BoxElements(box)));
  ASSERT_TRUE((*seg)->ReadBox(box, -1, DType::kInt16, s.data(), s.size() * 2).ok());
  EXPECT_EQ(s[0], -1);
  EXPECT_EQ(s[3 * 4], static_cast<int16_t>(13 % 3 - 1));
}

INSTANTIATE_TEST_SUITE_P(StoredAndDeflated, NpzReaderTest, ::testing::Bool());

TEST(NpzErrorsTest, MissingMemberCorruptAndTruncated) {
  ScratchDir dir;
  absl::Status st = OpenNpzMember(dir.Join("none.npz"), "data").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(st.message().find("none.npz"), std::string::npos);

  const std::string good = CaseZip(true);
  WriteFile(dir.Join("c.npz"), good);
  st = OpenNpzMember(dir.Join("c.npz"), "prev").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(st.message().find("prev.npy"), std::string::npos);

  // Truncated: the end-of-central-directory record is gone.
  WriteFile(dir.Join("t.npz"), good.substr(0, good.size() / 2));
  st = OpenNpzMember(dir.Join("t.npz"), "data").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("t.npz"), std::string::npos);

  // Corrupt deflate payload (CRC or stream error), directory intact.
  std::string bad = good;
  for (size_t i = 60; i < 90; ++i) bad[i] = static_cast<char>(bad[i] ^ 0x5a);
  WriteFile(dir.Join("b.npz"), bad);
  st = OpenNpzMember(dir.Join("b.npz"), "data").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;

  WriteFile(dir.Join("z.npz"), std::string(100, '\0'));
  EXPECT_EQ(OpenNpzMember(dir.Join("z.npz"), "data").status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace augmentd::dataset
