// augment/dataset/path_guard.h — confines dataset paths to configured root directories.
//
// A client names a dataset folder; the service must not open anything outside the roots its operator
// configured. A path is accepted only if (1) it has no ".." component (refused before touching the file
// system, INVALID_ARGUMENT), and (2) its canonical form (realpath: symlinks resolved) lies inside the
// canonical form of one of the roots (PERMISSION_DENIED otherwise — this catches symlink escapes).
//
//   PathGuard guard({"/data/nnUNet_preprocessed"});
//   ASSIGN_OR_RETURN(std::string dir, guard.Resolve("/data/nnUNet_preprocessed/Dataset001_X"));
//
// An empty root list accepts every path that has no ".." component (tools and tests; the service always
// configures roots). Resolve of a missing path → NOT_FOUND naming it. Thread-safety: immutable; share.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace augmentd::dataset {

class PathGuard {
 public:
  // Roots that do not exist are kept verbatim (they match nothing that exists).
  explicit PathGuard(std::vector<std::string> roots = {});

  // Returns the canonical absolute path of `path` if allowed.
  absl::StatusOr<std::string> Resolve(const std::string& path) const;

  // Checks that the canonical `path` (already resolved) is inside a root; PERMISSION_DENIED otherwise.
  absl::Status CheckInside(const std::string& canonical_path, const std::string& shown_path) const;

  const std::vector<std::string>& roots() const { return roots_; }

 private:
  std::vector<std::string> roots_;  // canonical
};

// True if `name` is a safe single path component (a case id, a plans name, a configuration name): not
// empty, not "." or "..", no '/' and no NUL.
bool IsSafeComponent(const std::string& name);

}  // namespace augmentd::dataset
