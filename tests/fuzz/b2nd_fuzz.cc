// tests/fuzz/b2nd_fuzz.cc — libFuzzer target: the .b2nd reader (c-blosc2 frame + b2nd metalayer parsing,
// chunk decoding through b2nd_get_slice_cbuffer). c-blosc2 comes from the blosc2 wheel and is not
// instrumented: a fault inside it still crashes the target, but out-of-bounds reads there go unseen.
#include <memory>

#include "augment/dataset/b2nd_reader.h"
#include "tests/fuzz/fuzz_util.h"

int augmentd::fuzz::FuzzB2nd(const uint8_t* data, size_t size) {
  using namespace augmentd;
  static const std::string path = fuzz::ScratchPath(".b2nd");
  fuzz::WriteScratch(path, data, size);
  absl::StatusOr<std::unique_ptr<dataset::CaseArray>> array = dataset::OpenB2nd(path);
  if (array.ok()) fuzz::ExerciseArray(**array);
  return 0;
}

#ifdef AUGMENTD_LIBFUZZER_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return augmentd::fuzz::FuzzB2nd(data, size); }
#endif
