// tests/fuzz/fuzz_util.h — the fuzz entry points and helpers shared by the targets of tests/fuzz (issue 9).
//
// The readers under test open files by path, so the targets write each input to one scratch file per
// process (under $TMPDIR, /dev/shm preferred for speed) and open that. Box reads are bounded so a header
// that announces a huge array cannot make the fuzzer allocate gigabytes: the limits here are the fuzz
// harness's, not the readers' (the readers must fail cleanly on their own; see reliability.md).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "augment/dataset/case_array.h"

namespace augmentd::fuzz {

// The fuzz entry points, one per target (tests/fuzz/<name>_fuzz.cc): each takes one input and returns 0;
// a finding is a crash, a sanitizer report or an abort. The libFuzzer binaries wrap them
// (AUGMENTD_LIBFUZZER_MAIN); fuzz_regression_test replays the committed corpora and crash inputs through them.
int FuzzNpy(const uint8_t* data, size_t size);
int FuzzNpz(const uint8_t* data, size_t size);
int FuzzB2nd(const uint8_t* data, size_t size);
int FuzzJson(const uint8_t* data, size_t size);
int FuzzPathGuard(const uint8_t* data, size_t size);
int FuzzRequest(const uint8_t* data, size_t size);

// A scratch path unique to this process, with the given suffix (".npy", ".b2nd", ...), removed (recursively)
// when the process exits normally.
inline std::string ScratchPath(const std::string& suffix) {
  static std::vector<std::string>* paths = [] {
    auto* v = new std::vector<std::string>();
    std::atexit([] {
      std::error_code ec;
      for (const std::string& p : *paths) std::filesystem::remove_all(p, ec);
    });
    return v;
  }();
  const char* dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
  paths->push_back(std::string(dir) + "/augmentd_fuzz_" + std::to_string(::getpid()) + suffix);
  return paths->back();
}

// Replaces the file at `path` with `size` bytes of `data`. Aborts if the file cannot be written (a harness
// failure, not a finding).
inline void WriteScratch(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
}

// Largest read the harness performs (elements), so a valid but huge header is not a memory finding.
constexpr int64_t kMaxReadElements = int64_t{1} << 20;

// Reads a whole array (when small) and a box that sticks out of it on every side, as float32 and as the
// array's own dtype. Errors are expected (DATA_LOSS for damaged files); crashes and sanitizer reports are not.
inline void ExerciseArray(const dataset::CaseArray& array) {
  const dataset::Shape& shape = array.shape();
  if (shape.empty()) return;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > kMaxReadElements) return;
    n *= d;
    if (n > kMaxReadElements) return;
  }
  std::vector<float> all(static_cast<size_t>(n));
  (void)array.ReadAll(dataset::DType::kFloat32, all.data(), all.size() * sizeof(float));
  // A box over the trailing (up to 3) axes, one voxel past each end.
  dataset::Box box;
  const size_t rank = shape.size() < 3 ? shape.size() : 3;
  for (size_t i = shape.size() - rank; i < shape.size(); ++i) {
    box.lb.push_back(-1);
    box.ub.push_back(shape[i] + 1);
  }
  const int64_t box_elements = array.BoxElements(box);
  if (box_elements <= 0 || box_elements > kMaxReadElements) return;
  std::vector<float> out(static_cast<size_t>(box_elements));
  (void)array.ReadBox(box, -1.0, dataset::DType::kFloat32, out.data(), out.size() * sizeof(float));
}

}  // namespace augmentd::fuzz
