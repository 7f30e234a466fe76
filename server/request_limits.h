// server/request_limits.h — size bounds on the strings of a request, checked before anything uses them.
//
// Every string field of a request message (recursively, repeated fields and map entries included; `bytes`
// fields such as inline tensor data are not strings and not bounded here) must be at most kMaxRequestString
// bytes: a 5000-character dataset_path used to reach realpath() and come back INTERNAL (ENAMETOOLONG). The
// bound is PATH_MAX: no path the server could open is longer, no name or id needs more.
//
//   if (absl::Status s = CheckRequestStrings(*request); !s.ok()) return Reject(context, s);
//   // INVALID_ARGUMENT "config.dataset.dataset_path: 5000 bytes, more than the 4096 allowed"
#pragma once

#include <cstddef>

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace augmentd {

inline constexpr size_t kMaxRequestString = 4096;

// INVALID_ARGUMENT naming the first over-long field (its path from the message root, e.g.
// "host_shm_regions[1].key").
absl::Status CheckRequestStrings(const google::protobuf::Message& message, size_t max_bytes = kMaxRequestString);

}  // namespace augmentd
