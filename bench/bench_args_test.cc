// bench/bench_args_test.cc — the benchmarks' strict option values (bench_args.h).
#include "bench/bench_args.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace augmentd::bench {
namespace {

TEST(BenchArgs, IntegerTakesOnlyAWholeNumberInRange) {
  int v = -7;
  EXPECT_TRUE(ParseInteger("--workers", "3", 1, 64, v));
  EXPECT_EQ(v, 3);
  EXPECT_TRUE(ParseInteger("--workers", "64", 1, 64, v));
  EXPECT_EQ(v, 64);
  EXPECT_TRUE(ParseInteger("--seed", "-5", -10, 10, v));
  EXPECT_EQ(v, -5);
  for (const char* bad : {"3x", "x3", "", " ", " 3", "+ 3", "0", "65", "1.5", "3 ", "0x10", "99999999999999999999999"}) {
    v = -7;
    EXPECT_FALSE(ParseInteger("--workers", bad, 1, 64, v)) << "'" << bad << "'";
    EXPECT_EQ(v, -7) << "a refused value leaves the option as it was: '" << bad << "'";
  }
}

TEST(BenchArgs, IntegerIntoWideTypes) {
  int64_t b = 0;
  EXPECT_TRUE(ParseInteger("--batch", "4096", 1, int64_t{1} << 40, b));
  EXPECT_EQ(b, 4096);
}

TEST(BenchArgs, ARangeOutsideTheTypeIsRefused) {
  int8_t small = 5;
  EXPECT_FALSE(ParseInteger("--n", "3", 0, 1000, small));  // 1000 does not fit int8_t: the caller's bug, refused
  EXPECT_EQ(small, 5);
  size_t count = 5;
  EXPECT_FALSE(ParseInteger("--n", "3", -1, 10, count));  // a negative bound for an unsigned option
  EXPECT_TRUE(ParseInteger("--n", "3", 0, 10, count));
  EXPECT_EQ(count, 3u);
  std::vector<uint8_t> sizes;
  EXPECT_FALSE(ParseIntegerList("--sizes", "1,2", 0, 300, sizes));
}

TEST(BenchArgs, ListTakesCommaSeparatedIntegers) {
  std::vector<int64_t> shape = {1};
  EXPECT_TRUE(ParseIntegerList("--patch", "128,96,160", 1, 4096, shape));
  EXPECT_EQ(shape, (std::vector<int64_t>{128, 96, 160}));
  EXPECT_TRUE(ParseIntegerList("--patch", "64", 1, 4096, shape));
  EXPECT_EQ(shape, (std::vector<int64_t>{64}));
  for (const char* bad : {"", ",", "128,", ",128", "128,,96", "128;96", "128,x", "0,128", "128,96a", "5000", "128, 96",
                          " 128"}) {
    shape = {7};
    EXPECT_FALSE(ParseIntegerList("--patch", bad, 1, 4096, shape)) << "'" << bad << "'";
    EXPECT_EQ(shape, (std::vector<int64_t>{7})) << "'" << bad << "'";
  }
}

}  // namespace
}  // namespace augmentd::bench
