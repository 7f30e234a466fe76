// augment/dataset/class_locations.h — foreground voxel locations per class/region, computed from a case's
// segmentation with nnU-Net's subsampling rule (the C++ replacement for the `class_locations` entry of the
// `.pkl` properties, which are Python pickles and are not read).
//
//   std::vector<ClassKey> keys = labels.LocationKeys();
//   ASSIGN_OR_RETURN(ClassLocations loc, ComputeClassLocations(*seg_array, keys));
//   const int32_t* v = loc.Voxel(k, i);   // spatial coordinates (x, y, z) of the i-th stored voxel of key k
//
// Rule (DefaultPreprocessor._sample_foreground_locations): for each key, the voxels whose label is one of the
// key's labels are counted (`count`), and N = max(min(10000, count), ceil(0.01·count)) of them are kept,
// drawn uniformly without replacement. nnU-Net draws them with np.random.RandomState(1234); we draw with
// Philox (seed 1234, transform index kFgLocationsTransformIndex, sample index = key index) — same count
// rule and distribution, not the same voxels. Keys without voxels have no locations (nnU-Net: empty list).
// The segmentation's channel axis (axis 0, extent 1 in nnU-Net) is not part of the stored coordinates; all
// channels are scanned.
//
// Cache: ClassLocationsCache (sidecar files in a cache directory, never in the dataset folder) stores the
// result per segmentation file, invalidated by the file's size and mtime.
// Thread-safety: ClassLocations is an immutable value once built; the functions are stateless;
// ClassLocationsCache is thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/dataset/case_array.h"
#include "augment/dataset/labels.h"

namespace augmentd::dataset {

// Transform index (augment/rng.h) reserved for drawing foreground locations.
inline constexpr uint32_t kFgLocationsTransformIndex = 4094;

struct FgSamplingRule {
  int64_t min_num_samples = 10000;     // keep at least this many (or all, if fewer)
  double min_percent_coverage = 0.01;  // and at least ceil(this · count)
  uint64_t seed = 1234;
};

// N = max(min(min_num_samples, count), ceil(min_percent_coverage · count)).
int64_t NumLocationsToKeep(int64_t count, const FgSamplingRule& rule = {});

struct ClassLocations {
  std::vector<ClassKey> keys;
  int spatial_rank = 0;                      // coordinates per voxel (3 for nnU-Net cases)
  std::vector<std::vector<int32_t>> coords;  // per key: n · spatial_rank coordinates, C order
  std::vector<int64_t> total_counts;         // per key: voxels of the key before subsampling

  size_t NumKeys() const { return keys.size(); }
  int64_t Count(size_t k) const { return static_cast<int64_t>(coords[k].size()) / std::max(spatial_rank, 1); }
  const int32_t* Voxel(size_t k, int64_t i) const { return coords[k].data() + i * spatial_rank; }
  // Index of `key` in keys, or -1.
  int Find(const ClassKey& key) const;
};

// From a segmentation held in memory: `seg` has shape `shape` = (C, *spatial) (C order).
ClassLocations ComputeClassLocations(const int16_t* seg, const Shape& shape, const std::vector<ClassKey>& keys,
                                     const FgSamplingRule& rule = {});

// Reads the whole segmentation array (as int16) and computes its locations.
absl::StatusOr<ClassLocations> ComputeClassLocations(const CaseArray& seg, const std::vector<ClassKey>& keys,
                                                     const FgSamplingRule& rule = {});

// Sidecar cache of ClassLocations files, one per segmentation file and key set.
class ClassLocationsCache {
 public:
  // `dir` is created if missing. An empty dir disables the cache (Load → NOT_FOUND, Store → OK no-op).
  explicit ClassLocationsCache(std::string dir) : dir_(std::move(dir)) {}

  // Loads the entry for `seg_path` (canonical) if present and still valid (same size and mtime of the
  // segmentation file, same keys and rule). NOT_FOUND if absent or stale; DATA_LOSS if the file is damaged.
  absl::StatusOr<ClassLocations> Load(const std::string& seg_path, const std::vector<ClassKey>& keys,
                                      const FgSamplingRule& rule) const;
  // Writes the entry atomically (temp file + rename).
  absl::Status Store(const std::string& seg_path, const FgSamplingRule& rule, const ClassLocations& loc) const;
  // The file an entry lives in (for tests and diagnostics).
  std::string EntryPath(const std::string& seg_path, const std::vector<ClassKey>& keys,
                        const FgSamplingRule& rule) const;

 private:
  std::string dir_;
};

}  // namespace augmentd::dataset
