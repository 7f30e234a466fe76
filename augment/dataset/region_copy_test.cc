// Streaming stores (stream_store.h) and the streamed region primitives (region_copy.h): the same bytes as
// memcpy / fills / the ordinary path for every destination alignment, sizes around whole cache lines, every
// element size, and random regions of streamed targets with dtype conversions; bytes outside are untouched.
#include "augment/dataset/region_copy.h"

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "augment/dataset/stream_store.h"
#include "gtest/gtest.h"

namespace augmentd::dataset {
namespace {

constexpr uint8_t kGuard = 0xa5;

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

TEST(StreamStoreTest, CopyMatchesMemcpyAtEveryAlignment) {
  const std::vector<uint8_t> src = RandomBytes(1024, 1);
  for (size_t offset = 0; offset < 64; ++offset) {
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{127}, size_t{128},
                         size_t{200}, size_t{777}}) {
      alignas(64) uint8_t dst[1024 + 128];
      std::memset(dst, kGuard, sizeof(dst));
      StreamCopy(dst + offset, src.data() + 3, bytes);
      StreamFence();
      for (size_t i = 0; i < sizeof(dst); ++i) {
        const bool inside = i >= offset && i < offset + bytes;
        ASSERT_EQ(dst[i], inside ? src[3 + i - offset] : kGuard)
            << "offset " << offset << " bytes " << bytes << " i " << i;
      }
    }
  }
}

TEST(StreamStoreTest, FillMatchesElementFillAtEveryAlignment) {
  const uint8_t pattern[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  for (size_t item : {size_t{1}, size_t{2}, size_t{4}, size_t{8}}) {
    for (size_t offset = 0; offset < 64; ++offset) {
      for (size_t count : {size_t{0}, size_t{3}, size_t{40}, size_t{100}, size_t{333}}) {
        alignas(64) uint8_t dst[8 * 333 + 128];
        std::memset(dst, kGuard, sizeof(dst));
        StreamFill(dst + offset, count, pattern, item);
        StreamFence();
        for (size_t i = 0; i < sizeof(dst); ++i) {
          const bool inside = i >= offset && i < offset + count * item;
          ASSERT_EQ(dst[i], inside ? pattern[(i - offset) % item] : kGuard)
              << "item " << item << " offset " << offset << " count " << count << " i " << i;
        }
      }
    }
  }
}

// A random region of a random source, copied into a random (possibly larger, offset) target, then the outside
// filled: streamed and ordinary targets must hold the same bytes, and nothing outside the target is written.
TEST(RegionCopyStreamTest, StreamedTargetsMatchOrdinaryOnes) {
  std::mt19937 rng(5);
  const std::pair<DType, DType> pairs[] = {{DType::kFloat32, DType::kFloat32}, {DType::kInt8, DType::kInt16},
                                           {DType::kUInt16, DType::kFloat32},  {DType::kFloat64, DType::kInt8},
                                           {DType::kInt16, DType::kInt16},     {DType::kInt32, DType::kFloat64}};
  for (int trial = 0; trial < 120; ++trial) {
    const auto [from, to] = pairs[trial % 6];
    const int n = 1 + trial % 4;
    std::vector<int64_t> src_shape(n), src_origin(n, 0), dst_shape(n), dst_origin(n), lo(n), hi(n);
    for (int d = 0; d < n; ++d) {
      const int64_t extent = d == n - 1 ? 1 + static_cast<int64_t>(rng() % 300) : 1 + static_cast<int64_t>(rng() % 9);
      src_shape[d] = extent;
      lo[d] = static_cast<int64_t>(rng() % static_cast<uint32_t>(extent));
      hi[d] = lo[d] + 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(extent - lo[d]));
      // The target: the region plus up to 20 voxels on either side (or exactly the region).
      const int64_t before = trial % 3 == 0 ? 0 : static_cast<int64_t>(rng() % 21);
      const int64_t after = trial % 3 == 0 ? 0 : static_cast<int64_t>(rng() % 21);
      dst_origin[d] = lo[d] - before;
      dst_shape[d] = hi[d] - lo[d] + before + after;
    }
    int64_t src_n = 1, dst_n = 1;
    for (int d = 0; d < n; ++d) src_n *= src_shape[d], dst_n *= dst_shape[d];
    const std::vector<uint8_t> src = RandomBytes(static_cast<size_t>(src_n) * DTypeSize(from), 100 + trial);
    const size_t out_bytes = static_cast<size_t>(dst_n) * DTypeSize(to), offset = rng() % 64;
    std::vector<uint8_t> outs[2];
    for (int streamed = 0; streamed < 2; ++streamed) {
      std::vector<uint8_t>& out = outs[streamed];
      out.assign(out_bytes + 128, kGuard);
      const RegionTarget dst{out.data() + offset, to, dst_origin.data(), dst_shape.data(), n, streamed == 1};
      CopyRegion(from, src.data(), src_origin.data(), src_shape.data(), dst, lo.data(), hi.data());
      FillOutside(dst, lo.data(), hi.data(), -3.0);
      StreamFence();
      for (size_t i = 0; i < out.size(); ++i) {
        if (i < offset || i >= offset + out_bytes) {
          ASSERT_EQ(out[i], kGuard) << "trial " << trial << " i " << i;
        }
      }
    }
    ASSERT_TRUE(outs[0] == outs[1]) << "trial " << trial << " " << DTypeName(from) << " -> " << DTypeName(to);
  }
}

// RowWriter runs: pieces that continue each other are buffered across rows and flushed in whole lines; a
// piece elsewhere (or longer than the buffer) starts a new run. Same bytes as converting in place.
TEST(RegionCopyStreamTest, RowWriterRunsMatchDirectConversion) {
  const std::vector<uint8_t> src = RandomBytes(40000, 9);
  std::vector<int64_t> origin{0}, shape{20000};
  std::vector<uint8_t> got(2 * 20000 + 64, kGuard), want(got.size(), kGuard);
  const RegionTarget dst{got.data() + 7, DType::kInt16, origin.data(), shape.data(), 1, true};
  RowWriter writer(DType::kInt8, dst);
  std::mt19937 rng(3);
  size_t pos = 0;  // elements written so far (contiguous), with a jump now and then
  while (pos < 19000) {
    const size_t count = rng() % 9 == 0 ? 3000 : 1 + rng() % 200;  // some longer than the 4 KiB buffer
    const size_t at = rng() % 13 == 0 ? pos + 17 : pos;
    if (at + count > 20000) break;
    uint8_t* span = writer.Span(got.data() + 7 + 2 * at, 2 * count);
    if (span != nullptr && rng() % 2 == 0) {
      ConvertElements(DType::kInt8, src.data() + at, DType::kInt16, span, count);
      writer.Commit(2 * count);
    } else {
      writer.Put(src.data() + at, got.data() + 7 + 2 * at, count);
    }
    ConvertElements(DType::kInt8, src.data() + at, DType::kInt16, want.data() + 7 + 2 * at, count);
    pos = at + count;
  }
  writer.Flush();
  StreamFence();
  EXPECT_TRUE(got == want);
}

}  // namespace
}  // namespace augmentd::dataset
