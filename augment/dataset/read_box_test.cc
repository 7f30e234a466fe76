// CaseArray::ReadBox's direct-to-output copy paths (region_copy.h; .b2nd block path, whole-chunk slice path,
// memory-mapped .npy) against a voxel-by-voxel reference crop_and_pad: every stored dtype × several output
// dtypes, boxes inside, partly outside on each side, larger than the array and fully outside, nonzero pads,
// all-zero chunks, and concurrent reads of one array.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "augment/dataset/b2nd_reader.h"
#include "augment/dataset/mapped_file.h"
#include "augment/dataset/npy_reader.h"
#include "augment/dataset/test_util.h"
#include "gtest/gtest.h"

namespace augmentd::dataset {
namespace {

using testing::NpyBytes;
using testing::ScratchDir;
using testing::WriteB2nd;
using testing::WriteFile;

constexpr DType kAllTypes[] = {DType::kInt8,  DType::kUInt8, DType::kInt16,   DType::kUInt16,
                               DType::kInt32, DType::kInt64, DType::kFloat32, DType::kFloat64};

// Value of element i: small integers (exact in every type), zero for the first `zeros` elements.
double ValueAt(int64_t i, int64_t zeros) { return i < zeros ? 0.0 : static_cast<double>((i * 7) % 101); }

template <typename T>
void Store(double v, uint8_t* p) {
  // Integers through int64 (a defined two's-complement wrap: pad -1 in uint8 is 255, dataset/dtype.cc's rule for
  // values that fit int64); a direct double -> unsigned cast of -1 is undefined (UBSan).
  T t;
  if constexpr (std::is_integral_v<T>) {
    t = static_cast<T>(static_cast<int64_t>(v));
  } else {
    t = static_cast<T>(v);
  }
  std::memcpy(p, &t, sizeof(T));
}

// Writes `v` (small integers, -1 or -7.5 pads) as one element of type `t` at `p`, independent of dtype.cc.
void StoreAs(DType t, double v, uint8_t* p) {
  switch (t) {
    case DType::kInt8: return Store<int8_t>(v, p);
    case DType::kUInt8: return Store<uint8_t>(v, p);
    case DType::kInt16: return Store<int16_t>(v, p);
    case DType::kUInt16: return Store<uint16_t>(v, p);
    case DType::kInt32: return Store<int32_t>(v, p);
    case DType::kInt64: return Store<int64_t>(v, p);
    case DType::kFloat32: return Store<float>(v, p);
    case DType::kFloat64: return Store<double>(v, p);
  }
}

std::string Elements(DType t, const Shape& shape, int64_t zeros) {
  const int64_t n = NumElements(shape);
  std::string bytes(static_cast<size_t>(n) * DTypeSize(t), '\0');
  for (int64_t i = 0; i < n; ++i) StoreAs(t, ValueAt(i, zeros), reinterpret_cast<uint8_t*>(&bytes[0]) + i * DTypeSize(t));
  return bytes;
}

// crop_and_pad_nd voxel by voxel: output element (lead..., box...) reads the array at (lead..., lb + offset).
std::string Reference(const Shape& shape, int64_t zeros, const Box& box, double pad, DType out) {
  const Shape os = BoxShape(shape, box);
  const int64_t total = NumElements(os);
  const size_t k = shape.size(), lead = k - box.rank();
  std::string bytes(static_cast<size_t>(total) * DTypeSize(out), '\0');
  std::vector<int64_t> idx(k, 0);
  for (int64_t o = 0; o < total; ++o) {
    int64_t rem = o, src = 0;
    bool inside = true;
    for (size_t a = k; a-- > 0;) {
      idx[a] = rem % os[a];
      rem /= os[a];
    }
    for (size_t a = 0; a < k; ++a) {
      const int64_t g = a < lead ? idx[a] : box.lb[a - lead] + idx[a];
      inside &= g >= 0 && g < shape[a];
      src = src * shape[a] + g;
    }
    StoreAs(out, inside ? ValueAt(src, zeros) : pad, reinterpret_cast<uint8_t*>(&bytes[0]) + o * DTypeSize(out));
  }
  return bytes;
}

// Boxes over the trailing 3 axes of a (2, 13, 11, 9) array: inside, past each side of each axis, past every side,
// fully outside (beyond one side, before another), and thin boxes.
std::vector<Box> Boxes() {
  const Shape s{13, 11, 9};
  std::vector<Box> boxes;
  boxes.push_back({{2, 3, 1}, {9, 8, 7}});  // inside
  boxes.push_back({{0, 0, 0}, {13, 11, 9}});  // exactly the array
  for (int d = 0; d < 3; ++d) {
    Box low{{2, 3, 1}, {9, 8, 7}}, high = low;
    low.lb[d] = -4;
    high.ub[d] = s[d] + 5;
    boxes.push_back(low);
    boxes.push_back(high);
  }
  boxes.push_back({{-3, -2, -5}, {16, 14, 12}});  // larger than the array on every side
  boxes.push_back({{14, 0, 0}, {20, 5, 5}});      // fully outside (past the end)
  boxes.push_back({{0, -9, 0}, {5, -1, 5}});      // fully outside (before the start)
  boxes.push_back({{5, 5, -2}, {6, 6, 12}});      // one row, padded at both ends
  boxes.push_back({{12, 10, 8}, {14, 12, 10}});   // corner voxel plus padding
  return boxes;
}

enum class Source { kNpy, kB2ndBlocks, kB2ndSlice };

const char* SourceName(Source s) {
  return s == Source::kNpy ? "npy" : s == Source::kB2ndBlocks ? "b2nd_blocks" : "b2nd_slice";
}

// A (2, 13, 11, 9) array; its first quarter is zero.
const Shape kShape{2, 13, 11, 9};
constexpr int64_t kZeros = 2 * 13 * 11 * 9 / 4;

std::unique_ptr<CaseArray> OpenSource(const ScratchDir& dir, Source source, DType t, const Shape& shape) {
  const std::string name = std::string(DTypeName(t)) + (source == Source::kNpy ? ".npy" : ".b2nd");
  const std::string path = dir.Join(name);
  if (source == Source::kNpy) {
    WriteFile(path, NpyBytes(t, shape, Elements(t, shape, kZeros)));
  } else {
    // Chunks that do not divide the array, blocks that do not divide chunks.
    WriteB2nd(path, t, shape, Elements(t, shape, kZeros), {1, 5, 4, 4}, {1, 2, 3, 2});
  }
  absl::StatusOr<std::unique_ptr<CaseArray>> a =
      source == Source::kNpy ? OpenNpy(path)
                             : OpenB2nd(path, source == Source::kB2ndBlocks ? B2ndReadMode::kBlocks : B2ndReadMode::kSlice);
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *std::move(a) : nullptr;
}

class ReadBoxTest : public ::testing::TestWithParam<Source> {};

TEST_P(ReadBoxTest, EveryDtypeAndBoxMatchesReference) {
  ScratchDir dir;
  const Shape& shape = kShape;
  for (DType t : kAllTypes) {
    std::unique_ptr<CaseArray> a = OpenSource(dir, GetParam(), t, shape);
    ASSERT_NE(a, nullptr);
    for (size_t threshold : testing::kStreamingSettings) {
      testing::ScopedStreamingThreshold streaming(threshold);
      for (DType out : {t, DType::kFloat32, DType::kInt16, DType::kFloat64}) {
        for (const Box& box : Boxes()) {
          const double pad = out == DType::kFloat32 || out == DType::kFloat64 ? -7.5 : -1.0;
          const std::string want = Reference(shape, kZeros, box, pad, out);
          // Pre-filled with a marker so that voxels the read forgets to write show up; +1 byte: the output starts
          // off its natural alignment (streamed lines then split elements).
          std::string buffer(want.size() + 1, '\x5a');
          const absl::Status st = a->ReadBox(box, pad, out, &buffer[1], want.size());
          ASSERT_TRUE(st.ok()) << st;
          EXPECT_TRUE(buffer.substr(1) == want && buffer[0] == '\x5a')
              << DTypeName(t) << " -> " << DTypeName(out) << " streaming " << (threshold == 0) << " box lb "
              << box.lb[0] << "," << box.lb[1] << "," << box.lb[2] << " ub " << box.ub[0] << "," << box.ub[1] << ","
              << box.ub[2];
        }
      }
    }
  }
}

// Several threads crop the same open array at once (the block path decodes without the array's lock).
TEST_P(ReadBoxTest, ConcurrentReadsOfOneArray) {
  ScratchDir dir;
  const Shape& shape = kShape;
  std::unique_ptr<CaseArray> a = OpenSource(dir, GetParam(), DType::kInt8, shape);
  ASSERT_NE(a, nullptr);
  const std::vector<Box> boxes = Boxes();
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) {
        const Box& box = boxes[static_cast<size_t>(rep + t) % boxes.size()];
        const std::string want = Reference(shape, kZeros, box, -1.0, DType::kInt16);
        std::string got(want.size(), '\0');
        if (!a->ReadBox(box, -1.0, DType::kInt16, &got[0], got.size()).ok() || got != want) ++mismatches[t];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

INSTANTIATE_TEST_SUITE_P(Sources, ReadBoxTest,
                         ::testing::Values(Source::kNpy, Source::kB2ndBlocks, Source::kB2ndSlice),
                         [](const ::testing::TestParamInfo<Source>& info) { return SourceName(info.param); });

// c-blosc2 stores all-zero chunks as a header only (special value ZERO; nnU-Net segmentations have many): the
// block path fills their share of a box without decoding, and must give the same bytes as the reference.
TEST(ReadBoxZeroChunksTest, AllZeroChunksMatchReference) {
  ScratchDir dir;
  const Shape shape{1, 20, 16, 16};
  const int64_t zeros = 8 * 16 * 16;  // x < 8: the first chunk row
  const std::vector<Box> boxes = {{{-3, -2, -4}, {12, 10, 9}}, {{2, 4, 8}, {7, 12, 20}}, {{6, 0, 0}, {20, 16, 16}}};
  for (DType t : {DType::kInt8, DType::kFloat32}) {
    const std::string path = dir.Join(std::string(DTypeName(t)) + ".b2nd");
    WriteB2nd(path, t, shape, Elements(t, shape, zeros), {1, 8, 8, 8}, {1, 4, 8, 8});
    // The file really holds special zero chunks (otherwise this test would not test them).
    EXPECT_TRUE(testing::IsSpecialZeroChunk(path, 0)) << DTypeName(t);
    for (B2ndReadMode mode : {B2ndReadMode::kBlocks, B2ndReadMode::kSlice}) {
      absl::StatusOr<std::unique_ptr<CaseArray>> a = OpenB2nd(path, mode);
      ASSERT_TRUE(a.ok()) << a.status();
      for (size_t threshold : testing::kStreamingSettings) {
        testing::ScopedStreamingThreshold streaming(threshold);
        for (const Box& box : boxes) {
          const std::string want = Reference(shape, zeros, box, -1.0, DType::kInt16);
          std::string got(want.size(), '\x5a');
          ASSERT_TRUE((*a)->ReadBox(box, -1.0, DType::kInt16, &got[0], got.size()).ok());
          EXPECT_TRUE(got == want) << DTypeName(t) << " mode " << static_cast<int>(mode) << " streaming "
                                   << (threshold == 0) << " box lb " << box.lb[0];
        }
      }
    }
  }
}

// Reading into a buffer that is too small, and arrays above the supported rank.
TEST(ReadBoxLimitsTest, ShortBufferAndHighRank) {
  ScratchDir dir;
  const Shape& shape = kShape;
  WriteFile(dir.Join("a.npy"), NpyBytes(DType::kInt16, shape, Elements(DType::kInt16, shape, 0)));
  absl::StatusOr<std::unique_ptr<CaseArray>> a = OpenNpy(dir.Join("a.npy"));
  ASSERT_TRUE(a.ok()) << a.status();
  const Box box{{0, 0, 0}, {2, 2, 2}};
  std::vector<int16_t> out(16);
  EXPECT_EQ((*a)->ReadBox(box, 0, DType::kInt16, out.data(), 31).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE((*a)->ReadBox(box, 0, DType::kInt16, out.data(), 32).ok());
  const Shape deep(33, 1);
  WriteFile(dir.Join("deep.npy"), NpyBytes(DType::kInt8, deep, std::string(1, '\1')));
  absl::StatusOr<std::unique_ptr<CaseArray>> d = OpenNpy(dir.Join("deep.npy"));
  ASSERT_TRUE(d.ok()) << d.status();
  int8_t v = 0;
  EXPECT_EQ((*d)->ReadBox(Box{{0}, {1}}, 0, DType::kInt8, &v, 1).code(), absl::StatusCode::kUnimplemented);
}

// OpenShared hands out the same mapping while the file is unchanged and maps it afresh once it changed.
TEST(MappedFileSharedTest, ReusesMappingUntilTheFileChanges) {
  ScratchDir dir;
  const std::string path = dir.Join("f.bin");
  WriteFile(path, "first");
  absl::StatusOr<std::shared_ptr<const MappedFile>> a = MappedFile::OpenShared(path);
  absl::StatusOr<std::shared_ptr<const MappedFile>> b = MappedFile::OpenShared(path);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
  WriteFile(path, "second!");
  absl::StatusOr<std::shared_ptr<const MappedFile>> c = MappedFile::OpenShared(path);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->get(), c->get());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*c)->data()), (*c)->size()), "second!");
  EXPECT_EQ(MappedFile::OpenShared(dir.Join("missing")).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace augmentd::dataset
