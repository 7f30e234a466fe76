// augment/dataset/nnunet_dataset.h — an nnU-Net preprocessed dataset, read in place.
//
//   DatasetOptions opt;
//   opt.dataset_dir = "/data/nnUNet_preprocessed/Dataset001_Heart";
//   opt.configuration = "3d_fullres";
//   opt.allowed_roots = {"/data/nnUNet_preprocessed"};
//   ASSIGN_OR_RETURN(std::shared_ptr<NnunetDataset> ds, NnunetDataset::Open(opt));
//   ASSIGN_OR_RETURN(Split fold0, ds->Fold(0));                      // splits_final.json
//   ASSIGN_OR_RETURN(std::shared_ptr<const CaseHandle> c, ds->OpenCase(fold0.train[0]));
//   ASSIGN_OR_RETURN(std::shared_ptr<const ClassLocations> loc, ds->GetClassLocations(*c));
//
// Layout read (reference §7.1): <dir>/<plans_name>.json, <dir>/dataset.json, optional <dir>/splits_final.json,
// and <dir>/<data_identifier>/ with per case either <id>.b2nd + <id>_seg.b2nd (nnU-Net ≥ 2.6) or <id>.npz
// (+ optional unpacked <id>.npy, <id>_seg.npy) — detected from the file endings like nnU-Net's
// infer_dataset_class (.pkl and .npy ignored; exactly one of .b2nd/.npz must remain; a folder holding only
// .npy files is read as unpacked numpy). `.pkl` files are never read.
// Confinement: the dataset folder and every case file must resolve (realpath) inside `allowed_roots`;
// ".." in the dataset path → INVALID_ARGUMENT, an escape (incl. via symlink) → PERMISSION_DENIED.
// Errors: missing folder/plans/dataset.json/configuration folder or case → NOT_FOUND naming it; unknown
// configuration → NOT_FOUND listing the defined ones; malformed JSON → INVALID_ARGUMENT naming file and
// field; mixed formats → FAILED_PRECONDITION; damaged case files → DATA_LOSS (from the readers).
// Thread-safety: a dataset is immutable after Open except for the foreground-location cache, which is
// internally synchronised; every method may be called concurrently (e.g. from a CPU thread pool opening
// different cases). CaseHandles are independent and can be kept open (see case_array.h).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/dataset/case_array.h"
#include "augment/dataset/class_locations.h"
#include "augment/dataset/labels.h"
#include "augment/dataset/nnunet_plans.h"
#include "augment/dataset/path_guard.h"

namespace augmentd::dataset {

enum class DatasetFormat { kBlosc2, kNumpy };
const char* DatasetFormatName(DatasetFormat f);  // "b2nd" / "numpy"

struct DatasetOptions {
  std::string dataset_dir;                 // nnUNet_preprocessed/DatasetXXX_Name
  std::string plans_name = "nnUNetPlans";  // the plans file is <dataset_dir>/<plans_name>.json
  std::string configuration = "3d_fullres";
  std::vector<std::string> allowed_roots;  // confinement roots; empty = no confinement (tools, tests)
  std::string fg_cache_dir;                // sidecar cache of foreground locations ("" = memory only)
  FgSamplingRule fg_rule;                  // nnU-Net's subsampling rule (defaults match nnU-Net)
  // Cascade: nnU-Net's folder_with_segs_from_previous_stage ("" = none). Every opened case then also opens
  // <previous_stage_dir>/<id>.b2nd (or <id>.npy, else <id>.npz member "seg", as nnUNetDataset*.load_case), which must
  // have the case's spatial shape (a leading singleton axis is accepted); confined like the case files.
  std::string previous_stage_dir;
};

// One opened case: its data (C, X, Y, Z) and segmentation (1, X, Y, Z) arrays, and in a cascade the previous
// stage's predicted segmentation ((X, Y, Z) or (1, X, Y, Z)).
class CaseHandle {
 public:
  CaseHandle(std::string id, std::unique_ptr<CaseArray> data, std::unique_ptr<CaseArray> seg,
             std::unique_ptr<CaseArray> seg_prev = nullptr)
      : id_(std::move(id)), data_(std::move(data)), seg_(std::move(seg)), seg_prev_(std::move(seg_prev)) {}
  const std::string& id() const { return id_; }
  const CaseArray& data() const { return *data_; }
  const CaseArray& seg() const { return *seg_; }
  // The previous stage's segmentation; nullptr outside a cascade.
  const CaseArray* seg_prev() const { return seg_prev_.get(); }
  int64_t num_channels() const { return data_->shape()[0]; }
  // The spatial shape (data shape without the channel axis).
  Shape spatial_shape() const { return Shape(data_->shape().begin() + 1, data_->shape().end()); }

 private:
  std::string id_;
  std::unique_ptr<CaseArray> data_;
  std::unique_ptr<CaseArray> seg_;
  std::unique_ptr<CaseArray> seg_prev_;
};

class NnunetDataset {
 public:
  static absl::StatusOr<std::shared_ptr<NnunetDataset>> Open(const DatasetOptions& options);

  const DatasetOptions& options() const { return options_; }
  const std::string& dir() const { return dir_; }            // canonical dataset folder
  const std::string& data_dir() const { return data_dir_; }  // canonical <dir>/<data_identifier>
  DatasetFormat format() const { return format_; }
  const PlansConfig& plans() const { return plans_; }
  const LabelInfo& labels() const { return labels_; }
  const std::vector<std::string>& channel_names() const { return channel_names_; }
  const std::vector<std::string>& case_ids() const { return case_ids_; }  // sorted

  // Fold `fold` of splits_final.json. NOT_FOUND if the file is missing (nnU-Net creates it on the first
  // training run; pass explicit case ids instead), OUT_OF_RANGE if the fold is not in the file (nnU-Net
  // would then draw a random 80:20 split, which we do not reproduce). Every id is checked to exist.
  absl::StatusOr<Split> Fold(int fold) const;
  // NOT_FOUND naming the first id that is not a case of this dataset; INVALID_ARGUMENT for unsafe ids.
  absl::Status CheckCaseIds(const std::vector<std::string>& ids) const;

  // Opens a case's arrays (cheap: headers only). Each call returns a new handle; a .b2nd case holds two file
  // descriptors while open (see b2nd_reader.h), a deflated .npz case its decoded members.
  absl::StatusOr<std::shared_ptr<const CaseHandle>> OpenCase(const std::string& id) const;

  // Foreground locations of a case (keys: labels().LocationKeys()), computed from its segmentation on
  // first use and cached in memory (and in fg_cache_dir if set).
  absl::StatusOr<std::shared_ptr<const ClassLocations>> GetClassLocations(const CaseHandle& c) const;
  absl::StatusOr<std::shared_ptr<const ClassLocations>> GetClassLocations(const std::string& id) const;

 private:
  NnunetDataset() = default;
  absl::StatusOr<std::string> CaseFile(const std::string& name) const;          // confined path or NOT_FOUND
  absl::StatusOr<std::string> ReadConfinedFile(const std::string& path) const;  // plans, dataset.json, splits
  absl::StatusOr<std::unique_ptr<CaseArray>> OpenPreviousStage(const std::string& id) const;  // cascade

  DatasetOptions options_;
  PathGuard guard_;
  std::string dir_, data_dir_;
  DatasetFormat format_ = DatasetFormat::kBlosc2;
  PlansConfig plans_;
  LabelInfo labels_;
  std::vector<std::string> channel_names_;
  std::vector<std::string> case_ids_;

  mutable std::mutex mu_;
  mutable std::map<std::string, std::shared_ptr<const ClassLocations>> locations_;  // guarded by mu_
};

// Reads a whole (small) file; NOT_FOUND / PERMISSION_DENIED naming it.
absl::StatusOr<std::string> ReadTextFile(const std::string& path);

}  // namespace augmentd::dataset
