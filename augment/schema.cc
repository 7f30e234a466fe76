#include "augment/schema.h"

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"

namespace augmentd {
namespace ju = json_util;

namespace {
std::string Num(double v) {
  std::string s = absl::StrCat(v);
  return s;
}
}  // namespace

std::string FieldRule::Describe() const {
  const bool has_lo = std::isfinite(lo), has_hi = std::isfinite(hi);
  if (has_lo && has_hi)
    return absl::StrCat(lo_open ? "(" : "[", Num(lo), ", ", Num(hi), hi_open ? ")" : "]");
  if (has_lo) return absl::StrCat(lo_open ? "> " : ">= ", Num(lo));
  if (has_hi) return absl::StrCat(hi_open ? "< " : "<= ", Num(hi));
  return "";
}

namespace schema_internal {

absl::Status Invalid(const std::string& where, const std::string& field, const std::string& problem) {
  return ju::Invalid(absl::StrCat(where, ".", field), std::string(problem));
}

absl::Status CheckKeys(const nlohmann::json& j, const std::vector<std::string>& allowed, const std::string& where) {
  return ju::CheckKeys(j, allowed, std::string(where));
}

absl::Status CheckNumber(double v, const FieldRule& r, const std::string& where, const std::string& field) {
  if (!r.bounded()) return absl::OkStatus();
  const bool lo_ok = r.lo_open ? v > r.lo : v >= r.lo;
  const bool hi_ok = r.hi_open ? v < r.hi : v <= r.hi;
  if (lo_ok && hi_ok) return absl::OkStatus();
  const std::string f = absl::StrCat(where, ".", field);
  if (r.lo == 0 && r.hi == 1 && !r.lo_open && !r.hi_open) return ju::CheckProbability(v, f);  // its wording
  const std::string d = r.Describe();
  return ju::Invalid(f, absl::StrCat(v, ": must be ", d[0] == '[' || d[0] == '(' ? "in " : "", d));
}

absl::StatusOr<double> Codec<double>::Read(const nlohmann::json& o, const std::string& key, const std::string& where) {
  return ju::GetDouble(o, key, std::nullopt, where);
}
absl::StatusOr<bool> Codec<bool>::Read(const nlohmann::json& o, const std::string& key, const std::string& where) {
  return ju::GetBool(o, key, std::nullopt, where);
}
absl::StatusOr<int64_t> Codec<int64_t>::Read(const nlohmann::json& o, const std::string& key,
                                             const std::string& where) {
  return ju::GetInt(o, key, std::nullopt, where);
}
absl::StatusOr<int> Codec<int>::Read(const nlohmann::json& o, const std::string& key, const std::string& where) {
  absl::StatusOr<int64_t> v = ju::GetInt(o, key, std::nullopt, where);
  if (!v.ok()) return v.status();
  if (*v < std::numeric_limits<int>::min() || *v > std::numeric_limits<int>::max())
    return ju::Invalid(absl::StrCat(where, ".", key), "out of range");
  return static_cast<int>(*v);
}
absl::StatusOr<std::string> Codec<std::string>::Read(const nlohmann::json& o, const std::string& key,
                                                     const std::string& where) {
  return ju::GetString(o, key, std::nullopt, where);
}
absl::StatusOr<RandomScalar> Codec<RandomScalar>::Read(const nlohmann::json& o, const std::string& key,
                                                       const std::string& where) {
  return RandomScalar::FromJson(o.at(key), absl::StrCat(where, ".", key));
}
absl::Status Codec<RandomScalar>::Check(const RandomScalar& v, const FieldRule& r, const std::string& w,
                                        const std::string& f) {
  const std::string field = absl::StrCat(w, ".", f);
  if (absl::Status s = v.Validate(field); !s.ok()) return s;
  if (!r.bounded()) return absl::OkStatus();
  const bool lo_ok = r.lo_open ? v.Min() > r.lo : v.Min() >= r.lo;
  const bool hi_ok = r.hi_open ? v.Max() < r.hi : v.Max() <= r.hi;
  if (lo_ok && hi_ok) return absl::OkStatus();
  const std::string d = r.Describe();
  return ju::Invalid(field, absl::StrCat("must be ", d[0] == '[' || d[0] == '(' ? "in " : "", d));
}
absl::StatusOr<std::vector<int64_t>> Codec<std::vector<int64_t>>::Read(const nlohmann::json& o, const std::string& key,
                                                                       const std::string& where) {
  return ju::AsInts(o.at(key), absl::StrCat(where, ".", key));
}
absl::StatusOr<std::vector<double>> Codec<std::vector<double>>::Read(const nlohmann::json& o, const std::string& key,
                                                                     const std::string& where) {
  return ju::AsDoubles(o.at(key), absl::StrCat(where, ".", key));
}

}  // namespace schema_internal
}  // namespace augmentd
