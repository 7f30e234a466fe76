#include "augment/dataset/b2nd_reader.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "augment/dataset/b2nd_blocks.h"
#include "augment/dataset/mapped_file.h"
#include "b2nd.h"
#include "blosc2.h"

namespace augmentd::dataset {
namespace {

std::string BloscError(int rc) { return absl::StrCat(print_error(rc), " (blosc2 error ", rc, ")"); }

class B2ndArray final : public CaseArray {
 public:
  // `array`: the file-backed handle (metadata, whole-chunk fallback). `mapping` (may be null): the file's
  // mapping, over which the block reader decodes.
  B2ndArray(std::string path, Shape shape, DType dtype, b2nd_array_t* array,
            std::shared_ptr<const MappedFile> mapping, B2ndReadMode mode)
      : CaseArray(std::move(path), std::move(shape), dtype), array_(array), mapping_(std::move(mapping)) {
    // Reads the frame's header and chunk index from the mapping: a truncation here poisons the range, which
    // ReadBox reports (Backing()) on the first read.
    std::optional<MappingRead> guard;
    if (mapping_ != nullptr) guard.emplace(mapping_->range());
    if (mode == B2ndReadMode::kBlocks && mapping_ != nullptr) mapped_ = B2ndArrayOverMapping(*mapping_);
    if (mapped_ != nullptr) blocks_ = B2ndBlockReader::Create(mapped_, dtype);
  }
  ~B2ndArray() override {
    blocks_.reset();
    if (mapped_ != nullptr) b2nd_free(mapped_);
    b2nd_free(array_);
  }

 protected:
  const MappedFile* Backing() const override { return blocks_ != nullptr ? mapping_.get() : nullptr; }

  absl::Status ReadRegion(const int64_t* start, const int64_t* stop, const RegionTarget& dst) const override {
    auto slice = [&](const int64_t* lo, const int64_t* hi) { return ReadSlice(lo, hi, dst); };
    if (blocks_ == nullptr) return slice(start, stop);
    // Concurrent readers welcome (b2nd_blocks.h); chunks it cannot decode go through the slice path.
    absl::Status st = blocks_->Read(start, stop, dst, slice);
    if (!st.ok() && absl::IsDataLoss(st) && !absl::StartsWith(st.message(), path())) {
      return absl::DataLossError(absl::StrCat(path(), ": ", st.message()));
    }
    return st;
  }

 private:
  // Whole-chunk path for [lo, hi): c-blosc2 decodes into a per-thread buffer, which is then copied into place.
  absl::Status ReadSlice(const int64_t* lo, const int64_t* hi, const RegionTarget& dst) const {
    const size_t k = rank();
    int64_t region[B2ND_MAX_DIM];
    int64_t n = 1;
    for (size_t a = 0; a < k; ++a) {
      region[a] = hi[a] - lo[a];
      n *= region[a];
    }
    const int64_t bytes = n * static_cast<int64_t>(DTypeSize(dtype()));
    thread_local std::vector<uint8_t> temp;
    if (temp.size() < static_cast<size_t>(bytes)) temp.resize(static_cast<size_t>(bytes));
    int rc;
    {
      std::lock_guard<std::mutex> lock(mu_);
      rc = b2nd_get_slice_cbuffer(array_, lo, hi, temp.data(), region, bytes);
    }
    if (rc < 0) {
      return absl::DataLossError(absl::StrCat(path(), ": cannot decode box: ", BloscError(rc)));
    }
    CopyRegion(dtype(), temp.data(), lo, region, dst, lo, hi);
    return absl::OkStatus();
  }

  mutable std::mutex mu_;  // serialises c-blosc2 calls on array_
  b2nd_array_t* array_;
  std::shared_ptr<const MappedFile> mapping_;
  b2nd_array_t* mapped_ = nullptr;           // over mapping_; used by blocks_ only
  std::unique_ptr<B2ndBlockReader> blocks_;  // null: whole-chunk path only
};

}  // namespace

void EnsureBlosc2Initialized() {
  static std::once_flag once;
  std::call_once(once, [] { blosc2_init(); });
}

B2ndReadMode DefaultB2ndReadMode() {
  const char* v = std::getenv("AUGMENTD_B2ND_READ");
  return v != nullptr && std::string_view(v) == "slice" ? B2ndReadMode::kSlice : B2ndReadMode::kBlocks;
}

absl::StatusOr<std::unique_ptr<CaseArray>> OpenB2nd(const std::string& path, B2ndReadMode mode) {
  EnsureBlosc2Initialized();
  // b2nd_open reports a missing file and a damaged one alike; tell them apart first.
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return FileErrnoToStatus(errno, path, "cannot open");
  if (!S_ISREG(st.st_mode)) return absl::FailedPreconditionError(absl::StrCat(path, ": not a regular file"));
  b2nd_array_t* array = nullptr;
  const int rc = b2nd_open(path.c_str(), &array);
  if (rc < 0 || array == nullptr) {
    return absl::DataLossError(absl::StrCat(path, ": not a readable .b2nd file: ", BloscError(rc)));
  }
  auto fail = [&](absl::Status status) {
    b2nd_free(array);
    return status;
  };
  if (array->ndim <= 0 || array->ndim > B2ND_MAX_DIM) {
    return fail(absl::DataLossError(absl::StrCat(path, ": b2nd metalayer has ndim ", array->ndim)));
  }
  if (array->dtype_format != DTYPE_NUMPY_FORMAT || array->dtype == nullptr) {
    return fail(absl::UnimplementedError(absl::StrCat(path, ": b2nd dtype is not in numpy format")));
  }
  absl::StatusOr<DType> dtype = DTypeFromB2ndDescr(array->dtype);
  if (!dtype.ok()) return fail(absl::UnimplementedError(absl::StrCat(path, ": ", dtype.status().message())));
  if (array->sc == nullptr || static_cast<size_t>(array->sc->typesize) != DTypeSize(*dtype)) {
    return fail(absl::DataLossError(absl::StrCat(path, ": typesize does not match dtype ", array->dtype)));
  }
  Shape shape(array->shape, array->shape + array->ndim);
  // The metalayer's shape must fit the super-chunk's uncompressed size (chunks are padded, so nbytes may be
  // larger, never smaller): a damaged shape must not make readers allocate or index beyond the data.
  int64_t bytes = static_cast<int64_t>(DTypeSize(*dtype));
  for (int64_t s : shape) {
    if (s < 0 || __builtin_mul_overflow(bytes, s, &bytes)) {
      return fail(absl::DataLossError(absl::StrCat(path, ": invalid extent in b2nd shape")));
    }
  }
  if (bytes > array->sc->nbytes) {
    return fail(absl::DataLossError(absl::StrCat(path, ": b2nd shape announces ", bytes, " bytes but the frame holds ",
                                                 array->sc->nbytes)));
  }
  // Blocks per chunk: c-blosc2 walks every block of a chunk on a read, so a damaged layout (chunk 13816321 x 2 x
  // 2 x 2 in blocks of 1 x 1 x 2 x 2 over a 1 x 3 x 3 x 3 array) spins for minutes (tests/fuzz/b2nd_fuzz).
  // Writers use tens to thousands of blocks per chunk; 1 << 20 leaves ample room.
  int64_t blocks_per_chunk = 1;
  for (int d = 0; d < array->ndim; ++d) {
    const int64_t c = array->chunkshape[d], b = array->blockshape[d];
    if (c <= 0 || b <= 0 || b > c || __builtin_mul_overflow(blocks_per_chunk, (c + b - 1) / b, &blocks_per_chunk) ||
        blocks_per_chunk > (int64_t{1} << 20)) {
      return fail(absl::DataLossError(absl::StrCat(path, ": implausible b2nd chunk/block layout on axis ", d)));
    }
  }
  // The block reader decodes from a mapping of the file (no read copies, no shared file state); without one,
  // every read takes the whole-chunk path.
  std::shared_ptr<const MappedFile> mapping;
  if (mode == B2ndReadMode::kBlocks) {
    absl::StatusOr<std::shared_ptr<const MappedFile>> m = MappedFile::OpenShared(path);
    if (m.ok()) mapping = *std::move(m);
  }
  return std::unique_ptr<CaseArray>(new B2ndArray(path, std::move(shape), *dtype, array, std::move(mapping), mode));
}

}  // namespace augmentd::dataset
