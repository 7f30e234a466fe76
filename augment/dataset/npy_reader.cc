#include "augment/dataset/npy_reader.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "augment/dataset/mapped_file.h"
#include "augment/dataset/npy_format.h"

namespace augmentd::dataset {
namespace {

class NpyArray final : public CaseArray {
 public:
  NpyArray(std::string path, Shape shape, DType dtype, std::shared_ptr<const MappedFile> file, size_t offset)
      : CaseArray(std::move(path), std::move(shape), dtype), file_(std::move(file)), offset_(offset) {}

 protected:
  const void* MappedData() const override { return file_->data() + offset_; }
  const MappedFile* Backing() const override { return file_.get(); }

 private:
  std::shared_ptr<const MappedFile> file_;
  size_t offset_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CaseArray>> OpenNpy(const std::string& path) {
  absl::StatusOr<std::shared_ptr<const MappedFile>> file = MappedFile::OpenShared(path);
  if (!file.ok()) return file.status();
  const MappedFile& f = **file;
  absl::StatusOr<NpyHeader> h;
  {
    MappingRead guard(f.range());  // the header is read from the mapping
    h = ParseNpyHeader(f.data(), f.size(), path);
    if (guard.failed()) return f.LostPagesError();
  }
  if (!h.ok()) return h.status();
  if (h->fortran_order) {
    return absl::UnimplementedError(absl::StrCat(path, ": Fortran-ordered .npy arrays are not supported"));
  }
  if (h->shape.empty()) return absl::DataLossError(absl::StrCat(path, ": rank-0 array is not a case array"));
  const size_t need = static_cast<size_t>(NumElements(h->shape)) * DTypeSize(h->dtype);
  if (f.size() - h->data_offset < need) {
    return absl::DataLossError(absl::StrCat(path, ": truncated .npy (", f.size() - h->data_offset,
                                            " data bytes, header announces ", need, ")"));
  }
  return std::unique_ptr<CaseArray>(new NpyArray(path, h->shape, h->dtype, *std::move(file), h->data_offset));
}

}  // namespace augmentd::dataset
