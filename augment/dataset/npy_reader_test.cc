#include "augment/dataset/npy_reader.h"

#include <cstdint>
#include <vector>

#include "augment/dataset/npy_format.h"
#include "augment/dataset/test_util.h"
#include "gtest/gtest.h"

namespace augmentd::dataset {
namespace {

using testing::Bytes;
using testing::ExpectedIotaBox;
using testing::Iota;
using testing::NpyBytes;
using testing::ScratchDir;
using testing::WriteFile;

class NpyReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    shape_ = {2, 5, 6, 7};
    path_ = dir_.Join("a.npy");
    WriteFile(path_, NpyBytes(DType::kFloat32, shape_, Bytes(Iota(NumElements(shape_)))));
  }
  ScratchDir dir_;
  Shape shape_;
  std::string path_;
};

TEST_F(NpyReaderTest, HeaderShapeAndDtype) {
  absl::StatusOr<std::unique_ptr<CaseArray>> a = OpenNpy(path_);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ((*a)->shape(), shape_);
  EXPECT_EQ((*a)->dtype(), DType::kFloat32);
}

TEST_F(NpyReaderTest, BoxesInsideAtEdgesCornersAndOutside) {
  absl::StatusOr<std::unique_ptr<CaseArray>> a = OpenNpy(path_);
  ASSERT_TRUE(a.ok()) << a.status();
  const std::vector<Box> boxes = {
      {{1, 2, 3}, {4, 5, 6}},      // inside
      {{0, 0, 0}, {5, 6, 7}},      // exactly the array
      {{-2, 0, 0}, {3, 6, 7}},     // low edge of axis 0
      {{3, 4, 5}, {8, 9, 10}},     // high corner
      {{-3, -3, -3}, {8, 9, 10}},  // bigger than the array on every side
      {{-1, 5, -2}, {2, 8, 1}},    // mixed
      {{1, 1}, {3, 9}},            // 2 trailing axes only
  };
  for (const Box& box : boxes) {
    std::vector<float> out(static_cast<size_t>((*a)->BoxElements(box)));
    ASSERT_TRUE((*a)->ReadBox(box, -7.0, DType::kFloat32, out.data(), out.size() * 4).ok());
    EXPECT_EQ(out, ExpectedIotaBox(shape_, box, -7.0f)) << "box lb[0]=" << box.lb[0];
  }
}

TEST_F(NpyReaderTest, FullyOutsideIsAllPadding) {
  absl::StatusOr<std::unique_ptr<CaseArray>> a = OpenNpy(path_);
  ASSERT_TRUE(a.ok());
  for (const Box& box : {Box{{5, 0, 0}, {8, 2, 2}}, Box{{0, -4, 0}, {2, 0, 2}}, Box{{-9, -9, 10}, {-1, -1, 12}}}) {
    std::vector<int16_t> out(static_cast<size_t>((*a)->BoxElements(box)), 5);
    ASSERT_TRUE((*a)->ReadBox(box, -1.0, DType::kInt16, out.data(), out.size() * 2).ok());
    for (int16_t v : out) EXPECT_EQ(v, -1);
  }
}

TEST_F(NpyReaderTest, ConvertsDtype) {
  absl::StatusOr<std::unique_ptr<CaseArray>> a = OpenNpy(path_);
  ASSERT_TRUE(a.ok());
  Box box{{0, 0, 0}, {1, 1, 3}};
  std::vector<int16_t> out(static_cast<size_t>((*a)->BoxElements(box)));
  ASSERT_TRUE((*a)->ReadBox(box, 0, DType::kInt16, out.data(), out.size() * 2).ok());
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[2], 2);
  EXPECT_EQ(out[3], 5 * 6 * 7);  // channel 1
}

TEST_F(NpyReaderTest, RejectsBadBoxesAndShortBuffers) {
  absl::StatusOr<std::unique_ptr<CaseArray>> a = OpenNpy(path_);
  ASSERT_TRUE(a.ok());
  std::vector<float> out(1000);
  EXPECT_EQ((*a)->ReadBox(Box{{0, 0, 0}, {1, 1}}, 0, DType::kFloat32, out.data(), 4000).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*a)->ReadBox(Box{{3, 0, 0}, {1, 1, 1}}, 0, DType::kFloat32, out.data(), 4000).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*a)->ReadBox(Box{{0, 0, 0, 0, 0}, {1, 1, 1, 1, 1}}, 0, DType::kFloat32, out.data(), 4000).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*a)->ReadBox(Box{{INT64_MIN, 0, 0}, {INT64_MAX, 1, 1}}, 0, DType::kFloat32, out.data(), 4000).code(),
            absl::StatusCode::kInvalidArgument);
  // 2 channels × 210 voxels × 4 bytes = 1680 bytes needed.
  EXPECT_EQ((*a)->ReadBox(Box{{0, 0, 0}, {5, 6, 7}}, 0, DType::kFloat32, out.data(), 1679).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(NpyFormatTest, Int8AndV2Headers) {
  ScratchDir dir;
  std::vector<int8_t> v = {1, -2, 3, -4, 5, -6};
  WriteFile(dir.Join("s.npy"), NpyBytes(DType::kInt8, {1, 2, 3}, Bytes(v)));
  absl::StatusOr<std::unique_ptr<CaseArray>> a = OpenNpy(dir.Join("s.npy"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ((*a)->dtype(), DType::kInt8);
  std::vector<int16_t> out(6);
  ASSERT_TRUE((*a)->ReadAll(DType::kInt16, out.data(), 12).ok());
  EXPECT_EQ(out, (std::vector<int16_t>{1, -2, 3, -4, 5, -6}));

  // Version 2.0: 4-byte header length.
  std::string h = "{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }";
  h.append((64 - (12 + h.size() + 1) % 64) % 64, ' ');
  h.push_back('\n');
  std::string file = std::string("\x93NUMPY\x02\x00", 8);
  for (int i = 0; i < 4; ++i) file.push_back(static_cast<char>((h.size() >> (8 * i)) & 0xff));
  std::vector<int16_t> w = {7, 8, 9};
  WriteFile(dir.Join("v2.npy"), file + h + Bytes(w));
  a = OpenNpy(dir.Join("v2.npy"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ((*a)->shape(), Shape{3});
  ASSERT_TRUE((*a)->ReadAll(DType::kInt16, out.data(), 12).ok());
  EXPECT_EQ(out[2], 9);
}

TEST(NpyFormatTest, ErrorsNameTheFile) {
  ScratchDir dir;
  absl::Status st = OpenNpy(dir.Join("missing.npy")).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(st.message().find("missing.npy"), std::string::npos);

  const std::string good = NpyBytes(DType::kFloat32, {1, 4, 4, 4}, Bytes(Iota(64)));
  WriteFile(dir.Join("trunc.npy"), good.substr(0, good.size() - 10));
  st = OpenNpy(dir.Join("trunc.npy")).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("trunc.npy"), std::string::npos);

  WriteFile(dir.Join("header_only.npy"), good.substr(0, 30));
  EXPECT_EQ(OpenNpy(dir.Join("header_only.npy")).status().code(), absl::StatusCode::kDataLoss);
  WriteFile(dir.Join("garbage.npy"), "hello world, not an npy file at all");
  EXPECT_EQ(OpenNpy(dir.Join("garbage.npy")).status().code(), absl::StatusCode::kDataLoss);
  WriteFile(dir.Join("empty.npy"), "");
  EXPECT_EQ(OpenNpy(dir.Join("empty.npy")).status().code(), absl::StatusCode::kDataLoss);
  std::string broken = good;
  broken[10] = '#';  // the dict literal's opening brace
  WriteFile(dir.Join("broken.npy"), broken);
  EXPECT_EQ(OpenNpy(dir.Join("broken.npy")).status().code(), absl::StatusCode::kDataLoss);

  WriteFile(dir.Join("f.npy"), NpyBytes(DType::kFloat32, {2, 2}, Bytes(Iota(4)), /*fortran=*/true));
  st = OpenNpy(dir.Join("f.npy")).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("Fortran"), std::string::npos);

  // A damaged header announcing extents whose byte count overflows int64.
  WriteFile(dir.Join("huge.npy"), NpyBytes(DType::kFloat32, {int64_t{1} << 40, int64_t{1} << 30}, "abcd"));
  EXPECT_EQ(OpenNpy(dir.Join("huge.npy")).status().code(), absl::StatusCode::kDataLoss);

  std::string be = NpyBytes(DType::kFloat32, {2}, Bytes(Iota(2)));
  be[be.find("<f4")] = '>';
  WriteFile(dir.Join("be.npy"), be);
  EXPECT_EQ(OpenNpy(dir.Join("be.npy")).status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace augmentd::dataset
