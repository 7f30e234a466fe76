// augment/json_util.h — typed reads of JSON configuration/parameter fields with field-named errors (internal).
//
// Every reader returns INVALID_ARGUMENT "<field>: <problem>" on a wrong type or non-finite number, and the
// default when the key is absent (readers without a default make the key required).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace augmentd::json_util {

absl::Status Invalid(const std::string& field, const std::string& problem);

// Rejects keys of `j` not in `allowed` (catches typos in bgv2 argument names).
absl::Status CheckKeys(const nlohmann::json& j, const std::vector<std::string>& allowed, const std::string& where);

absl::StatusOr<double> GetDouble(const nlohmann::json& j, const std::string& key, std::optional<double> def,
                                 const std::string& where);
absl::StatusOr<bool> GetBool(const nlohmann::json& j, const std::string& key, std::optional<bool> def,
                             const std::string& where);
absl::StatusOr<int64_t> GetInt(const nlohmann::json& j, const std::string& key, std::optional<int64_t> def,
                               const std::string& where);
absl::StatusOr<std::string> GetString(const nlohmann::json& j, const std::string& key, std::optional<std::string> def,
                                      const std::string& where);

// Number arrays. `v` itself (not a key lookup).
absl::StatusOr<std::vector<double>> AsDoubles(const nlohmann::json& v, const std::string& field);
absl::StatusOr<std::vector<int64_t>> AsInts(const nlohmann::json& v, const std::string& field);
absl::StatusOr<std::vector<bool>> AsBools(const nlohmann::json& v, const std::string& field);

// True if `j` nests deeper than `max_depth` levels. Iterative, so hostile input cannot exhaust the stack; callers
// reject deep documents before copying them (nlohmann's copy constructor recurses).
bool NestedDeeperThan(const nlohmann::json& j, int max_depth);
// INVALID_ARGUMENT "<field>: nested deeper than 32 levels" for such documents.
absl::Status CheckDepth(const nlohmann::json& j, const std::string& field);

// Probability in [0, 1].
absl::Status CheckProbability(double p, const std::string& field);

}  // namespace augmentd::json_util
