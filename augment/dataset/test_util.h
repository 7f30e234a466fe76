// augment/dataset/test_util.h — helpers for the dataset unit tests (test-only): a scratch directory and
// writers for .npy, .npz (stored or deflated) and .b2nd files, plus a miniature nnU-Net dataset folder.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "augment/dataset/case_array.h"
#include "augment/dataset/dtype.h"
#include "augment/dataset/region_copy.h"

namespace augmentd::dataset::testing {

// A fresh directory under $TEST_TMPDIR or /tmp, removed (recursively) on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  const std::string& path() const { return path_; }
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void WriteFile(const std::string& path, const std::string& bytes);
std::string ReadFile(const std::string& path);

// Raw little-endian bytes of a vector.
template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// A complete .npy file (v1 header) for `elements` of `dtype`.
std::string NpyBytes(DType dtype, const Shape& shape, const std::string& elements, bool fortran = false);

// A zip archive holding the given (name, content) members, stored (method 0) or deflated (method 8).
std::string ZipBytes(const std::vector<std::pair<std::string, std::string>>& members, bool deflate);

enum class B2ndCodec { kLz4hc, kZstd };
// Writes a contiguous-frame .b2nd file with the given chunk/block shapes, codec and SHUFFLE on/off.
void WriteB2nd(const std::string& path, DType dtype, const Shape& shape, const std::string& elements,
               const std::vector<int32_t>& chunks, const std::vector<int32_t>& blocks,
               B2ndCodec codec = B2ndCodec::kLz4hc, bool shuffle = true);

// Whether chunk `nchunk` of the .b2nd file at `path` is stored as c-blosc2's special all-zero chunk (tests that
// exercise the zero-chunk path check that the writer really produced one).
bool IsSpecialZeroChunk(const std::string& path, int64_t nchunk);

// Values v(i) = i (as float) for data arrays, for easy checking of box contents.
std::vector<float> Iota(int64_t n, float offset = 0.0f);

// Reference crop_and_pad of an iota array of `shape` (value = linear index) for a box over the trailing axes.
std::vector<float> ExpectedIotaBox(const Shape& shape, const Box& box, float pad);

// A miniature preprocessed dataset: <root>/Dataset001_Tiny/{nnUNetPlans.json, dataset.json,
// splits_final.json, nnUNetPlans_3d_fullres/<id>{.b2nd,_seg.b2nd} or <id>.npz}. Cases "c0".."c<n-1>",
// data (1, X, Y, Z) float32 with value = linear index, seg int16 with label 1 in a small cube, label 2 in
// another, -1 in the first x-slab, 0 elsewhere. Returns the dataset folder.
struct TinyCase {
  std::string id;
  Shape spatial;  // (X, Y, Z)
};
std::string MakeTinyDataset(const std::string& root, const std::vector<TinyCase>& cases, bool b2nd,
                            const std::vector<int64_t>& patch_size = {8, 8, 8}, int64_t batch_size = 2,
                            const std::string& labels_json = R"({"background": 0, "a": 1, "b": 2})");
// The seg values MakeTinyDataset writes for a case.
std::vector<int16_t> TinySeg(const Shape& spatial);

// Sets the streaming-store threshold of box reads (region_copy.h) for a scope: 0 streams every read.
class ScopedStreamingThreshold {
 public:
  explicit ScopedStreamingThreshold(size_t bytes) : saved_(StreamingStoreThreshold()) {
    SetStreamingStoreThreshold(bytes);
  }
  ~ScopedStreamingThreshold() { SetStreamingStoreThreshold(saved_); }
  ScopedStreamingThreshold(const ScopedStreamingThreshold&) = delete;
  ScopedStreamingThreshold& operator=(const ScopedStreamingThreshold&) = delete;

 private:
  size_t saved_;
};

// Both settings a box-read test runs under: ordinary stores only, and streaming stores for every read.
inline constexpr size_t kStreamingSettings[] = {~size_t{0}, 0};

}  // namespace augmentd::dataset::testing
