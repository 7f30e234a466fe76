// tests/fuzz/path_guard_fuzz.cc — libFuzzer target: dataset path confinement (augment/dataset/path_guard.h).
// A scratch tree <tmp>/root/{ds/a, link_out -> <tmp>/outside, link_in -> ds} and <tmp>/outside/secret; the
// guard's root is <tmp>/root. The input is a path; relative inputs are tried as-is and under the root.
// Oracle: an accepted path resolves inside the root (never to <tmp>/outside), contains no ".." component,
// and IsSafeComponent never accepts a name with '/' or NUL or "."/"..".
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_split.h"
#include "augment/dataset/path_guard.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

struct Tree {
  std::string base, root;
  Tree() {
    base = augmentd::fuzz::ScratchPath("_guard");
    root = base + "/root";
    ::mkdir(base.c_str(), 0700);
    ::mkdir(root.c_str(), 0700);
    ::mkdir((root + "/ds").c_str(), 0700);
    ::mkdir((root + "/ds/a").c_str(), 0700);
    ::mkdir((base + "/outside").c_str(), 0700);
    augmentd::fuzz::WriteScratch(base + "/outside/secret", reinterpret_cast<const uint8_t*>("x"), 1);
    if (::symlink((base + "/outside").c_str(), (root + "/link_out").c_str()) != 0) std::perror("symlink");
    if (::symlink("ds", (root + "/link_in").c_str()) != 0) std::perror("symlink");
    // A sibling whose name shares the root's prefix: "<tmp>/root2" must not count as inside "<tmp>/root".
    ::mkdir((base + "/root2").c_str(), 0700);
    if (::symlink((base + "/root2").c_str(), (root + "/link_sibling").c_str()) != 0) std::perror("symlink");
  }
};

}  // namespace

int augmentd::fuzz::FuzzPathGuard(const uint8_t* data, size_t size) {
  using augmentd::dataset::PathGuard;
  static const Tree tree;
  static const PathGuard guard({tree.root});
  const std::string input(reinterpret_cast<const char*>(data), size);

  const bool safe = augmentd::dataset::IsSafeComponent(input);
  if (safe && (input.empty() || input == "." || input == ".." || input.find('/') != std::string::npos ||
               input.find('\0') != std::string::npos)) {
    std::abort();
  }
  for (const std::string& path : {input, tree.root + "/" + input}) {
    absl::StatusOr<std::string> resolved = guard.Resolve(path);
    if (!resolved.ok()) continue;
    const std::string& r = *resolved;
    if (r != tree.root && r.compare(0, tree.root.size() + 1, tree.root + "/") != 0) std::abort();
    for (absl::string_view part : absl::StrSplit(path, '/')) {
      if (part == "..") std::abort();
    }
  }
  return 0;
}

#ifdef AUGMENTD_LIBFUZZER_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return augmentd::fuzz::FuzzPathGuard(data, size); }
#endif
