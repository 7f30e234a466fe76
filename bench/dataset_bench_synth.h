// bench/dataset_bench_synth.h — a synthetic nnU-Net preprocessed dataset for bench/dataset_bench.cc, written
// in C++ (no Python on the GPU machine): <root>/Dataset999_Bench/{nnUNetPlans.json, dataset.json,
// splits_final.json, nnUNetPlans_3d_fullres/case_NNN{.b2nd,_seg.b2nd}} the way nnU-Net ≥ 2.8 writes them
// (LZ4HC clevel 5; data float32 SHUFFLE, block (1,32,32,32), chunk (1,96,128,128); seg int8 NOFILTER,
// block (1,64,32,32), chunk (1,128,192,128); both clipped to the image). Data: smooth structure plus noise
// (z-scored-CT-like, compresses about as poorly); seg: three spheres with labels 1, 2, 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace augmentd::bench {

struct SynthOptions {
  std::string root;                    // parent folder
  int cases = 8;
  std::vector<int64_t> shape = {256, 256, 256};  // spatial (X, Y, Z)
  std::vector<int64_t> patch = {128, 128, 128};  // the plans' patch size
  int threads = 4;                     // cases written in parallel
};

// Writes the dataset (or reuses one written before with the same options: a stamp file records them) and
// returns the dataset folder.
absl::StatusOr<std::string> WriteSyntheticDataset(const SynthOptions& options);

}  // namespace augmentd::bench
