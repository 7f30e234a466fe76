#include "augment/json_util.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace augmentd::json_util {

absl::Status Invalid(const std::string& field, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", problem));
}

namespace {
std::string Field(const std::string& where, const std::string& key) {
  return where.empty() ? key : absl::StrCat(where, ".", key);
}
}  // namespace

absl::Status CheckKeys(const nlohmann::json& j, const std::vector<std::string>& allowed, const std::string& where) {
  if (j.is_null()) return absl::OkStatus();
  if (!j.is_object()) return Invalid(where, "expected an object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end()) {
      return Invalid(Field(where, it.key()), "unknown key");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<double> GetDouble(const nlohmann::json& j, const std::string& key, std::optional<double> def,
                                 const std::string& where) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) {
    if (def) return *def;
    return Invalid(Field(where, key), "required");
  }
  const auto& v = j[key];
  if (!v.is_number() && !v.is_boolean()) return Invalid(Field(where, key), "expected a number");
  const double d = v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>();
  if (!std::isfinite(d)) return Invalid(Field(where, key), "must be finite");
  return d;
}

absl::StatusOr<bool> GetBool(const nlohmann::json& j, const std::string& key, std::optional<bool> def,
                             const std::string& where) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) {
    if (def) return *def;
    return Invalid(Field(where, key), "required");
  }
  const auto& v = j[key];
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) return v.get<int64_t>() != 0;
  return Invalid(Field(where, key), "expected a bool");
}

absl::StatusOr<int64_t> GetInt(const nlohmann::json& j, const std::string& key, std::optional<int64_t> def,
                               const std::string& where) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) {
    if (def) return *def;
    return Invalid(Field(where, key), "required");
  }
  const auto& v = j[key];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) return static_cast<int64_t>(d);
  }
  return Invalid(Field(where, key), "expected an integer");
}

absl::StatusOr<std::string> GetString(const nlohmann::json& j, const std::string& key, std::optional<std::string> def,
                                      const std::string& where) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) {
    if (def) return *def;
    return Invalid(Field(where, key), "required");
  }
  if (!j[key].is_string()) return Invalid(Field(where, key), "expected a string");
  return j[key].get<std::string>();
}

absl::StatusOr<std::vector<double>> AsDoubles(const nlohmann::json& v, const std::string& field) {
  if (!v.is_array()) return Invalid(field, "expected an array of numbers");
  std::vector<double> out;
  for (const auto& e : v) {
    if (!e.is_number() && !e.is_boolean()) return Invalid(field, "expected an array of numbers");
    const double d = e.is_boolean() ? (e.get<bool>() ? 1.0 : 0.0) : e.get<double>();
    if (!std::isfinite(d)) return Invalid(field, "must be finite");
    out.push_back(d);
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> AsInts(const nlohmann::json& v, const std::string& field) {
  if (!v.is_array()) return Invalid(field, "expected an array of integers");
  std::vector<int64_t> out;
  for (const auto& e : v) {
    if (e.is_number_integer()) {
      out.push_back(e.get<int64_t>());
    } else if (e.is_number_float() && std::isfinite(e.get<double>()) &&
               e.get<double>() == std::floor(e.get<double>())) {
      out.push_back(static_cast<int64_t>(e.get<double>()));
    } else {
      return Invalid(field, "expected an array of integers");
    }
  }
  return out;
}

absl::StatusOr<std::vector<bool>> AsBools(const nlohmann::json& v, const std::string& field) {
  if (!v.is_array()) return Invalid(field, "expected an array of bools");
  std::vector<bool> out;
  for (const auto& e : v) {
    if (e.is_boolean()) {
      out.push_back(e.get<bool>());
    } else if (e.is_number_integer()) {
      out.push_back(e.get<int64_t>() != 0);
    } else {
      return Invalid(field, "expected an array of bools");
    }
  }
  return out;
}

bool NestedDeeperThan(const nlohmann::json& j, int max_depth) {
  std::vector<std::pair<const nlohmann::json*, int>> stack = {{&j, 0}};
  while (!stack.empty()) {
    auto [node, depth] = stack.back();
    stack.pop_back();
    if (!node->is_structured()) continue;
    if (depth >= max_depth) return true;
    for (const nlohmann::json& child : *node) stack.emplace_back(&child, depth + 1);
  }
  return false;
}

absl::Status CheckDepth(const nlohmann::json& j, const std::string& field) {
  if (NestedDeeperThan(j, 32)) return Invalid(field, "nested deeper than 32 levels");
  return absl::OkStatus();
}

absl::Status CheckProbability(double p, const std::string& field) {
  if (!std::isfinite(p) || p < 0.0 || p > 1.0) return Invalid(field, absl::StrCat("probability ", p, " not in [0, 1]"));
  return absl::OkStatus();
}

}  // namespace augmentd::json_util
