// augment/dataset/npz_reader.h — members of `.npz` archives (nnU-Net < 2.6 wrote each case as
// `np.savez_compressed(<id>.npz, data=..., seg=...)`).
//
//   ASSIGN_OR_RETURN(std::unique_ptr<CaseArray> seg, OpenNpzMember(".../case_000.npz", "seg"));
//
// An .npz is a zip archive of .npy files; the member "seg" is the entry "seg.npy". Supported: stored
// (mapped in place, no copy) and deflated entries (inflated with zlib at open, CRC-32 checked; the decoded
// member is held in memory, as numpy does when it loads one), zip64 records (numpy writes them). Missing
// archive → NOT_FOUND; missing member → NOT_FOUND naming archive and member; damaged archive or member
// (bad signatures, short file, inflate error, CRC mismatch) → DATA_LOSS naming the archive; encryption or
// other compression methods → UNIMPLEMENTED.
// Thread-safety: see case_array.h (reads copy from memory; fully concurrent).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/dataset/case_array.h"

namespace augmentd::dataset {

// Opens member `member` (without ".npy") of the archive at `path`.
absl::StatusOr<std::unique_ptr<CaseArray>> OpenNpzMember(const std::string& path, const std::string& member);

// Lists the member names (without ".npy") of the archive at `path`.
absl::StatusOr<std::vector<std::string>> ListNpzMembers(const std::string& path);

}  // namespace augmentd::dataset
