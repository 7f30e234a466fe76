// tests/fuzz/regression_test.cc — replays fuzz inputs in every build (no libFuzzer, no sanitizer needed,
// though build-asan / build-fuzz run it instrumented): every file of tests/fuzz/corpus/<target>/ (the seeds)
// and tests/fuzz/regressions/<target>/ (inputs that crashed a target before its fix, named after the bug)
// goes through the target's entry point (fuzz_util.h). A regression shows as a crash, an abort (the
// targets' own oracles) or a sanitizer report. Specific crash inputs also get a named test below that checks
// the status the fixed code returns.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "augment/dataset/b2nd_reader.h"
#include "augment/dataset/labels.h"
#include "augment/dataset/npy_reader.h"
#include "augment/dataset/npz_reader.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "augment/dataset/test_util.h"
#include "gtest/gtest.h"
#include "tests/fuzz/fuzz_util.h"

namespace augmentd::fuzz {
namespace {

using Entry = int (*)(const uint8_t*, size_t);

struct Target {
  const char* name;
  Entry entry;
};

const Target kTargets[] = {{"npy_fuzz", FuzzNpy},   {"npz_fuzz", FuzzNpz},
                           {"b2nd_fuzz", FuzzB2nd}, {"json_fuzz", FuzzJson},
                           {"path_guard_fuzz", FuzzPathGuard}, {"request_fuzz", FuzzRequest}};

std::vector<std::string> Inputs(const std::string& target) {
  std::vector<std::string> files;
  for (const char* dir : {"corpus", "regressions"}) {
    const std::filesystem::path p = std::filesystem::path(AUGMENTD_FUZZ_DIR) / dir / target;
    if (!std::filesystem::is_directory(p)) continue;
    for (const auto& e : std::filesystem::directory_iterator(p)) {
      if (e.is_regular_file()) files.push_back(e.path().string());
    }
  }
  return files;
}

class ReplayTest : public ::testing::TestWithParam<Target> {};

TEST_P(ReplayTest, EveryCommittedInputRunsCleanly) {
  const std::vector<std::string> files = Inputs(GetParam().name);
  EXPECT_FALSE(files.empty()) << "no seed corpus for " << GetParam().name;
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    std::ifstream in(f, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(GetParam().entry(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Fuzz, ReplayTest, ::testing::ValuesIn(kTargets),
                         [](const ::testing::TestParamInfo<Target>& info) { return std::string(info.param.name); });

// npy_fuzz, UBSan "load of misaligned address ... for type 'const double'" in dtype.cc ConvertTyped: a valid
// .npy whose header length leaves the float64 elements at an odd offset (numpy pads to 64, but stored .npz
// members are mapped in place at arbitrary offsets). Fixed: elements are loaded with memcpy. Under a UBSan
// build (scripts/sanitize.sh address) the old code fails this test; the values are checked everywhere.
TEST(FuzzRegressionTest, MisalignedFloat64ElementsConvert) {
  const std::vector<double> values = {1.5, -2.25, 3.0};
  std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }";
  dict.append(119 - dict.size(), ' ');  // 10-byte prefix + 119: the elements start at byte 129 (odd)
  dict.back() = '\n';
  std::string file = std::string("\x93NUMPY\x01\x00", 8);
  file.push_back(static_cast<char>(dict.size() & 0xff));
  file.push_back(static_cast<char>(dict.size() >> 8));
  file += dict;
  ASSERT_EQ(file.size() % 8, 1u);
  file += dataset::testing::Bytes(values);
  dataset::testing::ScratchDir dir;
  const std::string path = dir.Join("odd.npy");
  dataset::testing::WriteFile(path, file);
  absl::StatusOr<std::unique_ptr<dataset::CaseArray>> a = dataset::OpenNpy(path);
  ASSERT_TRUE(a.ok()) << a.status();
  std::vector<float> out(3);
  ASSERT_TRUE((*a)->ReadAll(dataset::DType::kFloat32, out.data(), out.size() * sizeof(float)).ok());
  EXPECT_EQ(out, (std::vector<float>{1.5f, -2.25f, 3.0f}));
}

// npz_fuzz, libFuzzer out-of-memory (malloc(3103785120)) in npz_reader.cc Inflate: a 370-byte .npz whose
// deflated member declares a 3 GB uncompressed size; the reader allocated it before inflating (in the server,
// std::bad_alloc or the OOM killer). Fixed: a declared size beyond deflate's 1032:1 is DATA_LOSS.
TEST(FuzzRegressionTest, NpzMemberDeclaringMoreThanDeflateCanExpandIsDataLoss) {
  const std::string npy = dataset::testing::NpyBytes(dataset::DType::kFloat32, {1, 2, 2, 2},
                                                     dataset::testing::Bytes(dataset::testing::Iota(8)));
  std::string zip = dataset::testing::ZipBytes({{"data.npy", npy}}, /*deflate=*/true);
  // Patch the uncompressed size (local header +22, central header +24) to 3 000 000 000.
  const uint32_t huge = 3000000000u;
  const size_t central = zip.find(std::string("PK\x01\x02", 4));
  ASSERT_NE(central, std::string::npos);
  for (size_t at : {size_t{22}, central + 24}) std::memcpy(&zip[at], &huge, 4);
  dataset::testing::ScratchDir dir;
  const std::string path = dir.Join("bomb.npz");
  dataset::testing::WriteFile(path, zip);
  absl::StatusOr<std::unique_ptr<dataset::CaseArray>> a = dataset::OpenNpzMember(path, "data");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kDataLoss) << a.status();
  EXPECT_TRUE(absl::StrContains(a.status().message(), "1032:1")) << a.status();
  EXPECT_TRUE(absl::StrContains(a.status().message(), "bomb.npz")) << a.status();
}

// json_fuzz, UBSan "2.77778e+85 is outside the range of representable values of type 'int'" in labels.cc
// AsLabel: a dataset.json label value too large for int was cast (UB for doubles; integers wrapped, so
// 4294967297 was read as label 1). Fixed: INVALID_ARGUMENT naming the entry.
TEST(FuzzRegressionTest, LabelValuesOutsideIntAreInvalid) {
  for (const char* value : {"2.7e85", "4294967297", "-1e300"}) {
    SCOPED_TRACE(value);
    const std::string json = absl::StrCat(R"({"labels": {"background": 0, "a": )", value, "}}");
    absl::StatusOr<dataset::LabelInfo> info = dataset::ParseLabels(json, "dataset.json");
    ASSERT_FALSE(info.ok());
    EXPECT_EQ(info.status().code(), absl::StatusCode::kInvalidArgument) << info.status();
    EXPECT_TRUE(absl::StrContains(info.status().message(), "dataset.json")) << info.status();
  }
  EXPECT_TRUE(dataset::ParseLabels(R"({"labels": {"background": 0, "a": 1.0, "b": 2}})", "dataset.json").ok());
}

// b2nd_fuzz, libFuzzer timeout (> 2 min in b2nd_get_slice_cbuffer): a 1 x 3 x 3 x 3 int16 array whose
// metalayer says chunks of 13816321 x 2 x 2 x 2 in blocks of 1 x 1 x 2 x 2 (13.8 M blocks per chunk). Fixed:
// OpenB2nd refuses more than 2^20 blocks per chunk (DATA_LOSS naming the file) before any read.
TEST(FuzzRegressionTest, B2ndWithAbsurdBlocksPerChunkIsDataLoss) {
  const std::string path = std::string(AUGMENTD_FUZZ_DIR) + "/regressions/b2nd_fuzz/chunk_of_13816321_blocks.b2nd";
  absl::StatusOr<std::unique_ptr<dataset::CaseArray>> a = dataset::OpenB2nd(path);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kDataLoss) << a.status();
  EXPECT_TRUE(absl::StrContains(a.status().message(), "chunk_of_13816321_blocks.b2nd")) << a.status();
}

}  // namespace
}  // namespace augmentd::fuzz
