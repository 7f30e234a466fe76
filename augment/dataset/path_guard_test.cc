#include "augment/dataset/path_guard.h"

#include <unistd.h>

#include <filesystem>

#include "augment/dataset/test_util.h"
#include "gtest/gtest.h"

namespace augmentd::dataset {
namespace {

using testing::ScratchDir;

TEST(PathGuardTest, AcceptsInsideRefusesDotDotAndSymlinkEscapes) {
  ScratchDir dir;
  std::filesystem::create_directories(dir.Join("root/Dataset001_A"));
  std::filesystem::create_directories(dir.Join("outside/Dataset002_B"));
  std::filesystem::create_directories(dir.Join("root2"));  // a sibling whose name extends "root"
  ASSERT_EQ(::symlink(dir.Join("outside/Dataset002_B").c_str(), dir.Join("root/escape").c_str()), 0);
  ASSERT_EQ(::symlink(dir.Join("root/Dataset001_A").c_str(), dir.Join("root/alias").c_str()), 0);
  PathGuard guard({dir.Join("root")});

  absl::StatusOr<std::string> ok = guard.Resolve(dir.Join("root/Dataset001_A"));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, std::filesystem::canonical(dir.Join("root/Dataset001_A")).string());
  EXPECT_TRUE(guard.Resolve(dir.Join("root/alias")).ok());  // symlink that stays inside
  EXPECT_TRUE(guard.Resolve(dir.Join("root")).ok());

  absl::Status st = guard.Resolve(dir.Join("root/../outside/Dataset002_B")).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find(".."), std::string::npos);
  EXPECT_EQ(guard.Resolve(dir.Join("root/Dataset001_A/..")).status().code(), absl::StatusCode::kInvalidArgument);

  st = guard.Resolve(dir.Join("root/escape")).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(st.message().find("root/escape"), std::string::npos);
  EXPECT_EQ(guard.Resolve(dir.Join("outside/Dataset002_B")).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(guard.Resolve(dir.Join("root2")).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(guard.Resolve(dir.Join("root/nope")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(guard.Resolve("").status().code(), absl::StatusCode::kInvalidArgument);

  PathGuard open_guard;  // no roots: anything without ".."
  EXPECT_TRUE(open_guard.Resolve(dir.Join("outside/Dataset002_B")).ok());
  EXPECT_EQ(open_guard.Resolve(dir.Join("root/../root")).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PathGuardTest, SafeComponents) {
  EXPECT_TRUE(IsSafeComponent("case_001"));
  EXPECT_TRUE(IsSafeComponent("nnUNetPlans"));
  EXPECT_FALSE(IsSafeComponent(""));
  EXPECT_FALSE(IsSafeComponent(".."));
  EXPECT_FALSE(IsSafeComponent("."));
  EXPECT_FALSE(IsSafeComponent("a/b"));
  EXPECT_FALSE(IsSafeComponent(std::string("a\0b", 3)));
}

}  // namespace
}  // namespace augmentd::dataset
