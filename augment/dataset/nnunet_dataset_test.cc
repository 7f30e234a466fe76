#include "augment/dataset/nnunet_dataset.h"

#include <unistd.h>

#include <filesystem>

#include "augment/dataset/test_util.h"
#include "gtest/gtest.h"

namespace augmentd::dataset {
namespace {

using testing::MakeTinyDataset;
using testing::ScratchDir;
using testing::TinyCase;

const std::vector<TinyCase> kCases = {{"c2", {6, 7, 8}}, {"c0", {5, 6, 7}}, {"c1", {9, 4, 6}}};

class NnunetDatasetTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { ds_dir_ = MakeTinyDataset(dir_.Join("pre"), kCases, /*b2nd=*/GetParam()); }
  DatasetOptions Options() const {
    DatasetOptions o;
    o.dataset_dir = ds_dir_;
    o.allowed_roots = {dir_.Join("pre")};
    return o;
  }
  ScratchDir dir_;
  std::string ds_dir_;
};

TEST_P(NnunetDatasetTest, OpensPlansLabelsSplitsAndCases) {
  absl::StatusOr<std::shared_ptr<NnunetDataset>> ds = NnunetDataset::Open(Options());
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ((*ds)->format(), GetParam() ? DatasetFormat::kBlosc2 : DatasetFormat::kNumpy);
  EXPECT_EQ((*ds)->case_ids(), (std::vector<std::string>{"c0", "c1", "c2"}));
  EXPECT_EQ((*ds)->plans().patch_size, (std::vector<int64_t>{8, 8, 8}));
  EXPECT_EQ((*ds)->plans().batch_size, 2);
  EXPECT_EQ((*ds)->labels().foreground_labels, (std::vector<int>{1, 2}));
  EXPECT_EQ((*ds)->channel_names(), std::vector<std::string>{"CT"});
  absl::StatusOr<Split> fold = (*ds)->Fold(0);
  ASSERT_TRUE(fold.ok()) << fold.status();
  EXPECT_EQ(fold->train, (std::vector<std::string>{"c1", "c2"}));
  EXPECT_EQ(fold->val, std::vector<std::string>{"c0"});
  EXPECT_EQ((*ds)->Fold(1).status().code(), absl::StatusCode::kOutOfRange);

  absl::StatusOr<std::shared_ptr<const CaseHandle>> c = (*ds)->OpenCase("c1");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->data().shape(), (Shape{1, 9, 4, 6}));
  EXPECT_EQ((*c)->seg().dtype(), DType::kInt16);
  EXPECT_EQ((*c)->spatial_shape(), (Shape{9, 4, 6}));
  absl::StatusOr<std::shared_ptr<const ClassLocations>> loc = (*ds)->GetClassLocations(**c);
  ASSERT_TRUE(loc.ok()) << loc.status();
  EXPECT_EQ((*loc)->total_counts, (std::vector<int64_t>{8, 1}));
  EXPECT_EQ((*loc)->Count(1), 1);
  EXPECT_EQ(std::vector<int32_t>((*loc)->Voxel(1, 0), (*loc)->Voxel(1, 0) + 3), (std::vector<int32_t>{8, 3, 5}));
  // Cached: the same object comes back.
  EXPECT_EQ((*ds)->GetClassLocations("c1")->get(), loc->get());
}

TEST_P(NnunetDatasetTest, InheritedConfigurationAndFgCacheDir) {
  DatasetOptions o = Options();
  o.configuration = "3d_bigbatch";
  o.fg_cache_dir = dir_.Join("fgcache");
  absl::StatusOr<std::shared_ptr<NnunetDataset>> ds = NnunetDataset::Open(o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ((*ds)->plans().batch_size, 7);
  ASSERT_TRUE((*ds)->GetClassLocations("c0").ok());
  if (GetParam()) {
    EXPECT_TRUE(std::filesystem::exists(dir_.Join("fgcache")));  // npz members are not cached
  }
}

TEST_P(NnunetDatasetTest, BadInput) {
  DatasetOptions o = Options();
  o.dataset_dir = dir_.Join("pre/Dataset999_Missing");
  absl::Status st = NnunetDataset::Open(o).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(st.message().find("Dataset999_Missing"), std::string::npos);

  o = Options();
  o.configuration = "2d";
  st = NnunetDataset::Open(o).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(st.message().find("3d_fullres"), std::string::npos);

  o = Options();
  o.configuration = "../x";
  EXPECT_EQ(NnunetDataset::Open(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = Options();
  o.plans_name = "nnUNetResEncPlans";
  EXPECT_EQ(NnunetDataset::Open(o).status().code(), absl::StatusCode::kNotFound);

  o = Options();
  o.dataset_dir = dir_.Join("pre/../pre/Dataset001_Tiny");
  EXPECT_EQ(NnunetDataset::Open(o).status().code(), absl::StatusCode::kInvalidArgument);

  // A symlink inside the root pointing to a dataset outside it.
  const std::string outside = MakeTinyDataset(dir_.Join("elsewhere"), kCases, GetParam());
  ASSERT_EQ(::symlink(outside.c_str(), dir_.Join("pre/Dataset002_Link").c_str()), 0);
  o = Options();
  o.dataset_dir = dir_.Join("pre/Dataset002_Link");
  st = NnunetDataset::Open(o).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(st.message().find("Dataset002_Link"), std::string::npos);

  absl::StatusOr<std::shared_ptr<NnunetDataset>> ds = NnunetDataset::Open(Options());
  ASSERT_TRUE(ds.ok());
  EXPECT_EQ((*ds)->OpenCase("c9").status().code(), absl::StatusCode::kNotFound);

  // The plans file itself may not be a symlink out of the roots either.
  std::filesystem::rename(ds_dir_ + "/nnUNetPlans.json", ds_dir_ + "/nnUNetPlans.orig");
  ASSERT_EQ(::symlink((outside + "/nnUNetPlans.json").c_str(), (ds_dir_ + "/nnUNetPlans.json").c_str()), 0);
  EXPECT_EQ(NnunetDataset::Open(Options()).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ((*ds)->OpenCase("../c0").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(NnunetDatasetTest, CaseFileSymlinkEscapeAndDamage) {
  const std::string data_dir = ds_dir_ + "/nnUNetPlans_3d_fullres";
  const std::string ext = GetParam() ? "_seg.b2nd" : ".npz";
  const std::string outside = MakeTinyDataset(dir_.Join("elsewhere"), kCases, GetParam());
  std::filesystem::remove(data_dir + "/c0" + ext);
  ASSERT_EQ(::symlink((outside + "/nnUNetPlans_3d_fullres/c0" + ext).c_str(), (data_dir + "/c0" + ext).c_str()), 0);
  absl::StatusOr<std::shared_ptr<NnunetDataset>> ds = NnunetDataset::Open(Options());
  ASSERT_TRUE(ds.ok()) << ds.status();
  absl::Status st = (*ds)->OpenCase("c0").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied) << st;

  // Truncated case file → DATA_LOSS naming it (at open or at read).
  const std::string victim = data_dir + "/c1" + ext;
  const std::string bytes = testing::ReadFile(victim);
  testing::WriteFile(victim, bytes.substr(0, bytes.size() / 2));
  absl::StatusOr<std::shared_ptr<const CaseHandle>> c = (*ds)->OpenCase("c1");
  st = c.ok() ? (*ds)->GetClassLocations(**c).status() : c.status();
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
  EXPECT_NE(st.message().find("c1"), std::string::npos);

  // Deleted case file → NOT_FOUND naming it.
  std::filesystem::remove(data_dir + "/c2" + ext);
  st = (*ds)->OpenCase("c2").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(st.message().find("c2"), std::string::npos);
}

TEST(NnunetDatasetFormatTest, MixedEndingsAndUnpackedNpy) {
  ScratchDir dir;
  const std::string ds_dir = MakeTinyDataset(dir.Join("pre"), kCases, /*b2nd=*/true);
  testing::WriteFile(ds_dir + "/nnUNetPlans_3d_fullres/c9.npz", "x");
  DatasetOptions o;
  o.dataset_dir = ds_dir;
  EXPECT_EQ(NnunetDataset::Open(o).status().code(), absl::StatusCode::kFailedPrecondition);

  // Unpacked .npy files win over the archive (whose data member is deliberately different here).
  ScratchDir dir2;
  const std::string np_dir = MakeTinyDataset(dir2.Join("pre"), kCases, /*b2nd=*/false);
  const Shape shape{1, 5, 6, 7};
  testing::WriteFile(np_dir + "/nnUNetPlans_3d_fullres/c0.npy",
                     testing::NpyBytes(DType::kFloat32, shape, testing::Bytes(testing::Iota(210, 1000.0f))));
  o.dataset_dir = np_dir;
  absl::StatusOr<std::shared_ptr<NnunetDataset>> ds = NnunetDataset::Open(o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ((*ds)->case_ids().size(), 3u);
  absl::StatusOr<std::shared_ptr<const CaseHandle>> c = (*ds)->OpenCase("c0");
  ASSERT_TRUE(c.ok()) << c.status();
  float first = 0;
  ASSERT_TRUE((*c)->data().ReadBox(Box{{0, 0, 0}, {1, 1, 1}}, 0, DType::kFloat32, &first, 4).ok());
  EXPECT_EQ(first, 1000.0f);
  EXPECT_NE((*c)->seg().path().find("c0.npz:seg"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(B2ndAndNpz, NnunetDatasetTest, ::testing::Bool());

}  // namespace
}  // namespace augmentd::dataset
