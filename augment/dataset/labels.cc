#include "augment/dataset/labels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace augmentd::dataset {
namespace {

absl::StatusOr<int> AsLabel(const nlohmann::ordered_json& v, const std::string& where) {
  // Integral values within int's range only: casting a larger double is undefined behaviour, a larger integer
  // would wrap (tests/fuzz/json_fuzz).
  const bool number = v.is_number_integer() || v.is_number_float();
  const double d = number ? v.get<double>() : 0.0;
  if (number && d == std::floor(d) && d >= std::numeric_limits<int>::min() && d <= std::numeric_limits<int>::max()) {
    return static_cast<int>(d);
  }
  return absl::InvalidArgumentError(absl::StrCat(where, ": expected an integer label, got ", v.dump()));
}

}  // namespace

std::string ClassKey::ToString() const {
  if (!is_region && labels.size() == 1) return absl::StrCat(labels[0]);
  if (labels.size() == 1) return absl::StrCat("(", labels[0], ",)");
  return absl::StrCat("(", absl::StrJoin(labels, ", "), ")");
}

ClassKey LabelInfo::AnnotatedKey() const {
  ClassKey k;
  k.labels.push_back(-1);
  k.labels.insert(k.labels.end(), all_labels.begin(), all_labels.end());
  k.is_region = true;
  k.annotated = true;
  return k;
}

std::vector<ClassKey> LabelInfo::LocationKeys() const {
  std::vector<ClassKey> keys;
  if (has_regions) {
    keys = regions;
  } else {
    for (int l : foreground_labels) keys.push_back(ClassKey{{l}, false, false});
  }
  if (ignore_label.has_value()) keys.push_back(AnnotatedKey());
  return keys;
}

absl::StatusOr<LabelInfo> ParseLabels(const std::string& text, const std::string& name) {
  // ordered_json: region order follows dataset.json.
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": not a JSON object"));
  }
  if (!j.contains("labels") || !j["labels"].is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": missing object 'labels'"));
  }
  const nlohmann::ordered_json& labels = j["labels"];
  if (!labels.contains("background")) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": labels: 'background' must be declared (as 0)"));
  }
  if (!labels["background"].is_number() || labels["background"].get<double>() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": labels.background must be the integer 0"));
  }
  LabelInfo info;
  std::set<int> all;
  for (const auto& [key, value] : labels.items()) {
    const std::string where = absl::StrCat(name, ": labels.", key);
    if (key == "ignore") {
      absl::StatusOr<int> l = AsLabel(value, where);
      if (!l.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": the ignore label must be an integer"));
      info.ignore_label = *l;
      continue;
    }
    ClassKey k;
    if (value.is_array()) {
      k.is_region = true;
      for (const auto& v : value) {
        absl::StatusOr<int> l = AsLabel(v, where);
        if (!l.ok()) return l.status();
        k.labels.push_back(*l);
      }
      if (value.size() > 1) info.has_regions = true;
    } else {
      absl::StatusOr<int> l = AsLabel(value, where);
      if (!l.ok()) return l.status();
      k.labels.push_back(*l);
    }
    all.insert(k.labels.begin(), k.labels.end());
    const bool background = std::all_of(k.labels.begin(), k.labels.end(), [](int l) { return l == 0; });
    if (!background) info.regions.push_back(k);
  }
  info.all_labels.assign(all.begin(), all.end());
  for (int l : info.all_labels) {
    if (l != 0) info.foreground_labels.push_back(l);
  }
  if (!info.has_regions) info.regions.clear();
  if (j.contains("regions_class_order") && j["regions_class_order"].is_array()) {
    for (const auto& v : j["regions_class_order"]) {
      absl::StatusOr<int> l = AsLabel(v, absl::StrCat(name, ": regions_class_order"));
      if (!l.ok()) return l.status();
      info.regions_class_order.push_back(*l);
    }
  }
  if (info.has_regions && info.regions_class_order.size() != info.regions.size()) {
    return absl::InvalidArgumentError(absl::StrCat(name,
                                                   ": region training needs regions_class_order with one "
                                                   "entry per region (",
                                                   info.regions.size(), ")"));
  }
  if (info.ignore_label.has_value() && !info.all_labels.empty() && *info.ignore_label != info.all_labels.back() + 1) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": labels.ignore must be the highest label (",
                                                   info.all_labels.back() + 1, "), got ", *info.ignore_label));
  }
  return info;
}

}  // namespace augmentd::dataset
