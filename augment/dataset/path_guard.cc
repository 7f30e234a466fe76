#include "augment/dataset/path_guard.h"

#include <limits.h>
#include <stdlib.h>

#include <cerrno>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "augment/dataset/mapped_file.h"

namespace augmentd::dataset {
namespace {

absl::StatusOr<std::string> RealPath(const std::string& path) {
  std::unique_ptr<char, decltype(&free)> resolved(::realpath(path.c_str(), nullptr), &free);
  if (!resolved) return FileErrnoToStatus(errno, path, "cannot resolve");
  return std::string(resolved.get());
}

}  // namespace

bool IsSafeComponent(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

PathGuard::PathGuard(std::vector<std::string> roots) {
  for (std::string& r : roots) {
    absl::StatusOr<std::string> canonical = RealPath(r);
    roots_.push_back(canonical.ok() ? *canonical : r);
  }
}

absl::Status PathGuard::CheckInside(const std::string& canonical_path, const std::string& shown_path) const {
  if (roots_.empty()) return absl::OkStatus();
  for (const std::string& root : roots_) {
    if (canonical_path == root) return absl::OkStatus();
    const std::string prefix = root == "/" ? root : root + "/";
    if (canonical_path.compare(0, prefix.size(), prefix) == 0) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat(shown_path, ": outside the allowed dataset roots (resolves to ", canonical_path, ")"));
}

absl::StatusOr<std::string> PathGuard::Resolve(const std::string& path) const {
  if (path.empty()) return absl::InvalidArgumentError("dataset path is empty");
  if (path.find('\0') != std::string::npos) return absl::InvalidArgumentError("dataset path contains NUL");
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part == "..") {
      return absl::InvalidArgumentError(absl::StrCat(path, ": '..' components are not allowed in dataset paths"));
    }
  }
  absl::StatusOr<std::string> canonical = RealPath(path);
  if (!canonical.ok()) return canonical.status();
  if (absl::Status st = CheckInside(*canonical, path); !st.ok()) return st;
  return *canonical;
}

}  // namespace augmentd::dataset
