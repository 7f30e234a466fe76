#include "augment/registry.h"

#include <map>
#include <set>

#include "augment/schema.h"
#include "augment/testing/example_configs.h"
#include "augment/testing/kind_list.h"

#include "gtest/gtest.h"

namespace augmentd {
namespace {

// The registry is the one list (augment/transforms/kinds.inc), in its order, and starts with nnU-Net's default trainer
// transforms in pipeline order (a new kind goes at the end).
TEST(Registry, NamesAreTheListStartingWithTheDefaultTrainerTransforms) {
  std::vector<std::string> listed;
  for (const testing::KindRow& row : testing::kKindRows) listed.emplace_back(row.name);
  EXPECT_EQ(RegisteredTransformNames(), listed);
  const std::vector<std::string> names = RegisteredTransformNames();
  ASSERT_GE(names.size(), 12u);
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 12),
            (std::vector<std::string>{"spatial", "gaussian_noise", "gaussian_blur", "multiplicative_brightness",
                                      "contrast", "simulate_low_resolution", "gamma", "mirror", "mask_image",
                                      "remove_label", "convert_segmentation_to_regions", "downsample_seg_for_ds"}));
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());  // no name twice
}

TEST(Registry, EveryKindHasACpuImplementation) {
  ASSERT_EQ(RegisteredTransforms().size(), static_cast<size_t>(kNumTransformKinds));
  for (int k = 0; k < kNumTransformKinds; ++k) {
    const auto kind = static_cast<TransformKind>(k);
    const TransformEntry& e = FindTransform(kind);
    EXPECT_EQ(e.kind, kind);
    EXPECT_EQ(e.name, TransformKindName(kind));
    ASSERT_NE(e.from_json, nullptr);  // the CPU reference
    auto parsed = ParseTransformKind(e.name);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, kind);
  }
}

// The capability flags replace the per-kind switches of pipeline.cc: labels are used by exactly these kinds (AugLab's
// extras only with regions enabled), and only regions / DS change the output layout.
TEST(Registry, CapabilityFlags) {
  // Pinned for the 43 kinds of session 7; a later kind's caps are its line in augment/transforms/kinds.inc.
  constexpr size_t kPinnedKinds = 43;
  ASSERT_GE(RegisteredTransforms().size(), kPinnedKinds);
  std::vector<std::string> labels, layout;
  for (size_t k = 0; k < kPinnedKinds; ++k) {
    const TransformEntry& e = RegisteredTransforms()[k];
    if (e.caps & kCapUsesLabels) labels.emplace_back(e.name);
    if (e.caps & kCapChangesOutputLayout) layout.emplace_back(e.name);
  }
  EXPECT_EQ(labels, (std::vector<std::string>{"spatial", "mirror", "mask_image", "remove_label",
                                              "convert_segmentation_to_regions", "downsample_seg_for_ds", "rot90",
                                              "transpose_axes", "shape_crop", "torchio_affine",
                                              "elastic_deformation", "move_seg_as_one_hot_to_data",
                                              "redistribute_seg"}));
  EXPECT_EQ(layout, (std::vector<std::string>{"convert_segmentation_to_regions", "downsample_seg_for_ds",
                                              "move_seg_as_one_hot_to_data"}));
  auto he = TransformFromJson("histogram_equalization", nlohmann::json::object());
  ASSERT_TRUE(he.ok()) << he.status();
  EXPECT_FALSE((*he)->UsesLabels());
  auto he_regions = TransformFromJson("histogram_equalization", {{"in_seg", 0.5}});
  ASSERT_TRUE(he_regions.ok()) << he_regions.status();
  EXPECT_TRUE((*he_regions)->UsesLabels());
  auto gamma = TransformFromJson("gamma", {{"gamma", {0.7, 1.5}},
                                           {"p_invert_image", 0},
                                           {"synchronize_channels", false},
                                           {"p_per_channel", 1},
                                           {"p_retain_stats", 1}});
  ASSERT_TRUE(gamma.ok()) << gamma.status();
  EXPECT_FALSE((*gamma)->UsesLabels());
  EXPECT_EQ(TransformKindName(static_cast<TransformKind>(kNumTransformKinds)), "unknown");
}

TEST(Registry, BuildsEveryTransformFromJson) {
  const auto configs = testing::ExampleTransformConfigs();
  ASSERT_EQ(configs.size(), static_cast<size_t>(kNumTransformKinds));
  for (const auto& [name, cfg] : configs) {
    auto t = TransformFromJson(name, cfg);
    ASSERT_TRUE(t.ok()) << name << ": " << t.status();
    EXPECT_EQ((*t)->name(), name);
    // Round trip through ConfigToJson.
    auto again = TransformFromJson(name, (*t)->ConfigToJson());
    ASSERT_TRUE(again.ok()) << name << ": " << again.status();
    EXPECT_EQ((*again)->ConfigToJson(), (*t)->ConfigToJson());
  }
  EXPECT_EQ(TransformFromJson("rot180", {}).status().code(), absl::StatusCode::kInvalidArgument);
  auto typo = TransformFromJson("gamma", {{"gama", 1}});
  EXPECT_EQ(typo.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(typo.status().message().find("gama"), std::string::npos);
}

// Kinds registered without a schema: none (every kind's fields are declared once in its Schema()). The set stays
// empty: a new kind without a schema fails the test below.
const std::set<std::string> kWithoutSchema = {};

// Every registered kind has a schema (but the listed ones) that documents every field ConfigToJson writes: a
// type and a one-line doc (no default when it is required); ConfigToJson writes only declared names.
TEST(Registry, EverySchemaDocumentsEveryField) {
  std::map<std::string, nlohmann::json> examples;
  for (const auto& [name, cfg] : testing::ExampleTransformConfigs()) examples[name] = cfg;
  for (const TransformEntry& e : RegisteredTransforms()) {
    const std::string name(e.name);
    if (e.schema == nullptr) {
      EXPECT_TRUE(kWithoutSchema.count(name)) << name << ": registered without a schema (augment/schema.h)";
      continue;
    }
    EXPECT_FALSE(kWithoutSchema.count(name)) << name << " has a schema now: drop it from kWithoutSchema";
    const TransformSchema& schema = e.schema();
    EXPECT_EQ(schema.transform(), e.name);
    const std::vector<FieldDoc> fields = schema.Fields();
    ASSERT_FALSE(fields.empty()) << name;
    std::set<std::string> names;
    for (const FieldDoc& f : fields) {
      EXPECT_FALSE(f.name.empty()) << name;
      EXPECT_TRUE(names.insert(f.name).second) << name << "." << f.name << " declared twice";
      EXPECT_FALSE(f.type.empty()) << name << "." << f.name;
      EXPECT_GE(f.doc.size(), 10u) << name << "." << f.name << ": needs a one-line doc";
      EXPECT_EQ(f.doc.find('\n'), std::string::npos) << name << "." << f.name;
      if (f.required) {
        EXPECT_TRUE(f.default_value.is_null()) << name << "." << f.name;
      }
    }
    ASSERT_TRUE(examples.count(name)) << name;
    auto t = TransformFromJson(name, examples[name]);
    ASSERT_TRUE(t.ok()) << name << ": " << t.status();
    const nlohmann::json config = (*t)->ConfigToJson();
    std::set<std::string> keys;
    for (auto it = config.begin(); it != config.end(); ++it) keys.insert(it.key());
    // ConfigToJson writes only declared fields, every one of them but those left out at their default (AugLab's
    // region fields), and never leaves out a required one.
    for (const std::string& k : keys) EXPECT_TRUE(names.count(k)) << name << "." << k << " is not declared";
    for (const FieldDoc& f : fields) {
      if (!keys.count(f.name)) {
        EXPECT_FALSE(f.required) << name << "." << f.name << " required but not written";
      }
    }
  }
}

// The schema's parsing: required fields, ranges and types are INVALID_ARGUMENT naming "<kind>.<field>"; absent optional
// fields take the config struct's default.
TEST(Registry, SchemaParsingNamesTheField) {
  auto missing = TransformFromJson("contrast", {{"preserve_range", true}, {"synchronize_channels", false}});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("contrast.contrast_range: required"), std::string::npos)
      << missing.status();
  auto range = TransformFromJson("clamp", {{"max_clamp_amount", 0.7}});
  EXPECT_EQ(range.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(range.status().message().find("clamp.max_clamp_amount"), std::string::npos) << range.status();
  EXPECT_NE(range.status().message().find("[0, 0.5]"), std::string::npos) << range.status();
  auto prob = TransformFromJson("gaussian_noise", {{"p_per_channel", 1.5}});
  EXPECT_NE(prob.status().message().find("gaussian_noise.p_per_channel"), std::string::npos) << prob.status();
  auto type = TransformFromJson("mirror", {{"allowed_axes", "x"}});
  EXPECT_EQ(type.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(type.status().message().find("mirror.allowed_axes"), std::string::npos) << type.status();
  auto axis = TransformFromJson("mirror", {{"allowed_axes", {0, 3}}});
  EXPECT_NE(axis.status().message().find("mirror.allowed_axes"), std::string::npos) << axis.status();
  auto sigma = TransformFromJson("gamma", {{"gamma", {0, 1.5}}, {"p_invert_image", 0}, {"synchronize_channels", false},
                                           {"p_per_channel", 1}, {"p_retain_stats", 1}});
  EXPECT_NE(sigma.status().message().find("gamma.gamma: must be > 0"), std::string::npos) << sigma.status();
  auto defaults = TransformFromJson("gaussian_noise", nlohmann::json::object());
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ((*defaults)->ConfigToJson()["p_per_channel"], 1.0);
  // GetServerInfo's docs: defaults come from the config struct, ranges from the rule.
  const auto docs = (*FindTransform("clamp"))->schema().Fields();
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[0].name, "max_clamp_amount");
  EXPECT_EQ(docs[0].type, "double");
  EXPECT_EQ(docs[0].default_value, 0.2);
  EXPECT_EQ(docs[0].range, "[0, 0.5]");
  EXPECT_FALSE(docs[0].required);
}

}  // namespace
}  // namespace augmentd
