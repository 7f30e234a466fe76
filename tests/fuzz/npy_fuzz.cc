// tests/fuzz/npy_fuzz.cc — libFuzzer target: the .npy header parser and the mapped .npy reader.
// Input: the bytes of a .npy file. Oracle: no crash / sanitizer report; a successful parse describes a
// data offset inside the header it was given.
#include <cstdlib>
#include <memory>

#include "augment/dataset/npy_format.h"
#include "augment/dataset/npy_reader.h"
#include "tests/fuzz/fuzz_util.h"

int augmentd::fuzz::FuzzNpy(const uint8_t* data, size_t size) {
  using namespace augmentd;
  absl::StatusOr<dataset::NpyHeader> header = dataset::ParseNpyHeader(data, size, "fuzz.npy");
  if (header.ok() && header->data_offset > size) std::abort();  // the parser promised the header was inside
  static const std::string path = fuzz::ScratchPath(".npy");
  fuzz::WriteScratch(path, data, size);
  absl::StatusOr<std::unique_ptr<dataset::CaseArray>> array = dataset::OpenNpy(path);
  if (array.ok()) fuzz::ExerciseArray(**array);
  return 0;
}

#ifdef AUGMENTD_LIBFUZZER_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return augmentd::fuzz::FuzzNpy(data, size); }
#endif
