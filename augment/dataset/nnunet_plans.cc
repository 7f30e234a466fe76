#include "augment/dataset/nnunet_plans.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace augmentd::dataset {
namespace {

using Json = nlohmann::json;

absl::Status Bad(const std::string& name, const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(name, ": ", field, ": ", what));
}

absl::StatusOr<std::vector<int64_t>> IntList(const Json& j, const std::string& name, const std::string& field) {
  if (!j.is_array()) return Bad(name, field, "expected a list of integers");
  std::vector<int64_t> out;
  for (const Json& v : j) {
    if (!v.is_number()) return Bad(name, field, "expected a list of integers");
    const double d = v.get<double>();
    if (d != std::floor(d)) return Bad(name, field, "expected a list of integers");
    out.push_back(static_cast<int64_t>(d));
  }
  return out;
}

// Resolves "inherits_from" like PlansManager._internal_resolve_configuration_inheritance (child keys win).
absl::StatusOr<Json> ResolveConfiguration(const Json& configs, const std::string& cfg, const std::string& name,
                                          std::set<std::string>* visited) {
  if (!configs.contains(cfg)) {
    std::vector<std::string> names;
    for (const auto& [k, v] : configs.items()) names.push_back(k);
    return absl::NotFoundError(absl::StrCat(name, ": configuration '", cfg,
                                            "' not in the plans (available: ", absl::StrJoin(names, ", "), ")"));
  }
  Json c = configs[cfg];
  if (!c.is_object()) return Bad(name, absl::StrCat("configurations.", cfg), "not an object");
  if (!c.contains("inherits_from")) return c;
  const std::string parent = c["inherits_from"].is_string() ? c["inherits_from"].get<std::string>() : "";
  if (!visited->insert(cfg).second || visited->count(parent)) {
    return Bad(name, absl::StrCat("configurations.", cfg, ".inherits_from"), "circular inheritance");
  }
  absl::StatusOr<Json> base = ResolveConfiguration(configs, parent, name, visited);
  if (!base.ok()) return base.status();
  for (const auto& [k, v] : c.items()) (*base)[k] = v;
  return base;
}

}  // namespace

absl::StatusOr<PlansConfig> ParsePlans(const std::string& plans_text, const std::string& configuration,
                                       const std::string& name) {
  const Json j = Json::parse(plans_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return absl::InvalidArgumentError(absl::StrCat(name, ": not JSON"));
  if (!j.contains("configurations") || !j["configurations"].is_object()) {
    return Bad(name, "configurations", "missing");
  }
  std::set<std::string> visited;
  absl::StatusOr<Json> c = ResolveConfiguration(j["configurations"], configuration, name, &visited);
  if (!c.ok()) return c.status();
  const std::string f = absl::StrCat("configurations.", configuration, ".");
  PlansConfig p;
  p.configuration = configuration;
  if (j.contains("plans_name") && j["plans_name"].is_string()) p.plans_name = j["plans_name"].get<std::string>();
  if (!c->contains("data_identifier") || !(*c)["data_identifier"].is_string()) {
    return Bad(name, f + "data_identifier", "missing");
  }
  p.data_identifier = (*c)["data_identifier"].get<std::string>();
  if (!c->contains("batch_size") || !(*c)["batch_size"].is_number_integer() || (*c)["batch_size"].get<int64_t>() < 1) {
    return Bad(name, f + "batch_size", "missing or not a positive integer");
  }
  p.batch_size = (*c)["batch_size"].get<int64_t>();
  if (!c->contains("patch_size")) return Bad(name, f + "patch_size", "missing");
  absl::StatusOr<std::vector<int64_t>> ps = IntList((*c)["patch_size"], name, f + "patch_size");
  if (!ps.ok()) return ps.status();
  if (ps->size() != 2 && ps->size() != 3) return Bad(name, f + "patch_size", "expected 2 or 3 entries");
  for (int64_t v : *ps) {
    if (v < 1) return Bad(name, f + "patch_size", "entries must be positive");
  }
  p.patch_size = *ps;
  if (c->contains("spacing") && (*c)["spacing"].is_array()) {
    for (const Json& v : (*c)["spacing"]) {
      if (v.is_number()) p.spacing.push_back(v.get<double>());
    }
  }
  if (c->contains("normalization_schemes") && (*c)["normalization_schemes"].is_array()) {
    for (const Json& v : (*c)["normalization_schemes"]) {
      if (v.is_string()) p.normalization_schemes.push_back(v.get<std::string>());
    }
  }
  if (c->contains("use_mask_for_norm") && (*c)["use_mask_for_norm"].is_array()) {
    for (const Json& v : (*c)["use_mask_for_norm"]) p.use_mask_for_norm.push_back(v.is_boolean() && v.get<bool>());
  }
  // Strides: architecture.arch_kwargs.strides (nnU-Net ≥ 2.4); older plans: pool_op_kernel_sizes.
  const Json* strides = nullptr;
  if (c->contains("architecture") && (*c)["architecture"].contains("arch_kwargs") &&
      (*c)["architecture"]["arch_kwargs"].contains("strides")) {
    strides = &(*c)["architecture"]["arch_kwargs"]["strides"];
  } else if (c->contains("pool_op_kernel_sizes")) {
    strides = &(*c)["pool_op_kernel_sizes"];
  }
  if (strides != nullptr) {
    if (!strides->is_array()) return Bad(name, f + "architecture.arch_kwargs.strides", "expected a list");
    for (const Json& s : *strides) {
      absl::StatusOr<std::vector<int64_t>> st = IntList(s, name, f + "architecture.arch_kwargs.strides");
      if (!st.ok()) return st.status();
      if (st->size() != p.patch_size.size()) {
        return Bad(name, f + "architecture.arch_kwargs.strides", "entries must match the patch dimensionality");
      }
      p.strides.push_back(*st);
    }
  }
  if (c->contains("previous_stage") && (*c)["previous_stage"].is_string()) {
    p.previous_stage = (*c)["previous_stage"].get<std::string>();
  }
  if (j.contains("transpose_forward")) {
    absl::StatusOr<std::vector<int64_t>> t = IntList(j["transpose_forward"], name, "transpose_forward");
    if (t.ok()) p.transpose_forward = *t;
  }
  return p;
}

std::vector<int64_t> RotatedPatchSize(const std::vector<int64_t>& patch_size, double rot_rad, double min_scale) {
  const double r = std::min(rot_rad, 90.0 / 360.0 * 2.0 * M_PI);
  const double c = std::cos(r), s = std::sin(r);
  std::vector<double> v(patch_size.begin(), patch_size.end());
  std::vector<double> out = v;
  auto take_max = [&](const std::vector<double>& w) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = std::max(out[i], std::fabs(w[i]));
  };
  if (v.size() == 3) {
    // Row vector times the single-axis rotation matrices of batchgenerators' rotate_coords_3d.
    take_max({v[0], v[1] * c + v[2] * s, -v[1] * s + v[2] * c});  // about x
    take_max({v[0] * c - v[2] * s, v[1], v[0] * s + v[2] * c});   // about y
    take_max({v[0] * c + v[1] * s, -v[0] * s + v[1] * c, v[2]});  // about z
  } else if (v.size() == 2) {
    take_max({v[0] * c + v[1] * s, -v[0] * s + v[1] * c});
  }
  std::vector<int64_t> result(out.size());
  for (size_t i = 0; i < out.size(); ++i) result[i] = static_cast<int64_t>(out[i] / min_scale);
  return result;
}

TrainerDefaults DefaultTrainerSettings(const std::vector<int64_t>& patch_size) {
  TrainerDefaults t;
  // Same floating-point expression order as nnUNetTrainer (x / 360 * 2 * pi) so truncation agrees.
  auto rad = [](double degrees) { return degrees / 360.0 * 2.0 * M_PI; };
  const int64_t mx = patch_size.empty() ? 1 : *std::max_element(patch_size.begin(), patch_size.end());
  if (patch_size.size() == 2) {
    const int64_t mn = *std::min_element(patch_size.begin(), patch_size.end());
    t.rotation_max_rad = static_cast<double>(mx) / static_cast<double>(mn) > 1.5 ? rad(15.0) : rad(180.0);
    t.mirror_axes = {0, 1};
  } else if (patch_size.size() == 3) {
    t.do_dummy_2d_data_aug = static_cast<double>(mx) / static_cast<double>(patch_size[0]) > 3.0;
    t.rotation_max_rad = t.do_dummy_2d_data_aug ? rad(180.0) : rad(30.0);
    t.mirror_axes = {0, 1, 2};
  }
  t.initial_patch_size = RotatedPatchSize(patch_size, t.rotation_max_rad, 0.85);
  if (t.do_dummy_2d_data_aug) t.initial_patch_size[0] = patch_size[0];
  return t;
}

std::vector<std::vector<double>> DeepSupervisionScales(const std::vector<std::vector<int64_t>>& strides) {
  std::vector<std::vector<double>> scales;
  if (strides.empty()) return scales;
  std::vector<double> prod(strides[0].size(), 1.0);
  for (size_t i = 0; i + 1 < strides.size(); ++i) {
    std::vector<double> s(prod.size());
    for (size_t d = 0; d < prod.size(); ++d) {
      prod[d] *= static_cast<double>(strides[i][d]);
      s[d] = 1.0 / prod[d];
    }
    scales.push_back(s);
  }
  return scales;
}

absl::StatusOr<std::vector<Split>> ParseSplits(const std::string& splits_text, const std::string& name) {
  const Json j = Json::parse(splits_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_array()) return absl::InvalidArgumentError(absl::StrCat(name, ": expected a list"));
  std::vector<Split> splits;
  for (size_t i = 0; i < j.size(); ++i) {
    Split s;
    for (const char* part : {"train", "val"}) {
      const std::string field = absl::StrCat("[", i, "].", part);
      if (!j[i].is_object() || !j[i].contains(part) || !j[i][part].is_array()) return Bad(name, field, "missing list");
      for (const Json& id : j[i][part]) {
        if (!id.is_string()) return Bad(name, field, "case ids must be strings");
        (std::string(part) == "train" ? s.train : s.val).push_back(id.get<std::string>());
      }
    }
    splits.push_back(std::move(s));
  }
  return splits;
}

}  // namespace augmentd::dataset
