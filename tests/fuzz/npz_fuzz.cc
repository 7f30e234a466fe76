// tests/fuzz/npz_fuzz.cc — libFuzzer target: the .npz (zip of .npy) reader — central directory, local
// headers, zip64 records, stored and deflated members, CRC check. Input: the bytes of an .npz file.
#include <memory>

#include "augment/dataset/npz_reader.h"
#include "tests/fuzz/fuzz_util.h"

int augmentd::fuzz::FuzzNpz(const uint8_t* data, size_t size) {
  using namespace augmentd;
  static const std::string path = fuzz::ScratchPath(".npz");
  fuzz::WriteScratch(path, data, size);
  absl::StatusOr<std::vector<std::string>> members = dataset::ListNpzMembers(path);
  std::vector<std::string> names = {"data", "seg"};
  if (members.ok()) {
    for (size_t i = 0; i < members->size() && i < 4; ++i) names.push_back((*members)[i]);
  }
  for (const std::string& name : names) {
    absl::StatusOr<std::unique_ptr<dataset::CaseArray>> array = dataset::OpenNpzMember(path, name);
    if (array.ok()) fuzz::ExerciseArray(**array);
  }
  return 0;
}

#ifdef AUGMENTD_LIBFUZZER_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return augmentd::fuzz::FuzzNpz(data, size); }
#endif
