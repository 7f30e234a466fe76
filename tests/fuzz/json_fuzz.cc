// tests/fuzz/json_fuzz.cc — libFuzzer target: nnU-Net plans, splits and dataset.json (labels) parsing.
// Input: one JSON document, fed to all three parsers. On a parsed plans configuration the trainer defaults
// and deep-supervision scales are derived too (they index the parsed vectors).
#include <string>

#include "augment/dataset/labels.h"
#include "augment/dataset/nnunet_plans.h"
#include "tests/fuzz/fuzz_util.h"

int augmentd::fuzz::FuzzJson(const uint8_t* data, size_t size) {
  using namespace augmentd::dataset;
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const char* configuration : {"3d_fullres", "2d", "3d_cascade_fullres"}) {
    absl::StatusOr<PlansConfig> plans = ParsePlans(text, configuration, "nnUNetPlans.json");
    if (!plans.ok()) continue;
    bool small = plans->patch_size.size() == 2 || plans->patch_size.size() == 3;
    for (int64_t p : plans->patch_size) small = small && p > 0 && p <= 4096;
    if (small) (void)DefaultTrainerSettings(plans->patch_size);
    (void)DeepSupervisionScales(plans->strides);
  }
  (void)ParseSplits(text, "splits_final.json");
  absl::StatusOr<LabelInfo> labels = ParseLabels(text, "dataset.json");
  if (labels.ok()) (void)labels->LocationKeys();
  return 0;
}

#ifdef AUGMENTD_LIBFUZZER_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return augmentd::fuzz::FuzzJson(data, size); }
#endif
