#include "augment/registry.h"

#include <iterator>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/schema.h"
// Every kind's folder header (augment/transforms/<name>/<name>.h), generated from augment/transforms/kinds.inc.
#include "augment/transforms/kind_headers.inc"

namespace augmentd {

namespace {
// The CAPS column of augment/transforms/kinds.inc.
constexpr uint32_t NONE = kCapNone;
constexpr uint32_t LABELS = kCapUsesLabels;
constexpr uint32_t LAYOUT = kCapChangesOutputLayout;

// The one explicit list (STYLE.md: no static registrars), expanded from augment/transforms/kinds.inc: order =
// TransformKind order = pipeline order; the CPU class of kind k<Camel> is <Camel>Transform.
constexpr TransformEntry kEntries[] = {
#define AUGMENTD_KIND(camel, snake, caps, cuda, lift) \
  {#snake, TransformKind::k##camel, &camel##Transform::FromJson, (caps), &SchemaOf<camel##Transform>},
#include "augment/transforms/kinds.inc"
#undef AUGMENTD_KIND
};

constexpr bool OneEntryPerKindInOrder() {
  if (sizeof(kEntries) / sizeof(kEntries[0]) != static_cast<size_t>(kNumTransformKinds)) return false;
  for (int k = 0; k < kNumTransformKinds; ++k)
    if (kEntries[k].kind != static_cast<TransformKind>(k) || kEntries[k].from_json == nullptr) return false;
  return true;
}
static_assert(OneEntryPerKindInOrder(), "registry.cc: kEntries needs one entry per TransformKind, in enum order");
}  // namespace

std::string_view TransformKindName(TransformKind kind) {
  if (static_cast<int>(kind) >= kNumTransformKinds) return "unknown";
  return kEntries[static_cast<size_t>(kind)].name;
}

bool Transform::UsesLabels() const { return (FindTransform(kind()).caps & kCapUsesLabels) != 0; }

const std::vector<TransformEntry>& RegisteredTransforms() {
  static const std::vector<TransformEntry>* const kTable =
      new std::vector<TransformEntry>(std::begin(kEntries), std::end(kEntries));
  return *kTable;
}

std::vector<std::string> RegisteredTransformNames() {
  std::vector<std::string> names;
  for (const TransformEntry& e : RegisteredTransforms()) names.emplace_back(e.name);
  return names;
}

absl::StatusOr<const TransformEntry*> FindTransform(std::string_view name) {
  for (const TransformEntry& e : RegisteredTransforms())
    if (e.name == name) return &e;
  return absl::InvalidArgumentError(absl::StrCat("transform.kind: unknown transform '", std::string(name), "'"));
}

const TransformEntry& FindTransform(TransformKind kind) { return kEntries[static_cast<size_t>(kind)]; }

absl::StatusOr<TransformKind> ParseTransformKind(std::string_view name) {
  auto e = FindTransform(name);
  if (!e.ok()) return e.status();
  return (*e)->kind;
}

absl::StatusOr<std::shared_ptr<const Transform>> TransformFromJson(std::string_view name,
                                                                   const nlohmann::json& config) {
  auto e = FindTransform(name);
  if (!e.ok()) return e.status();
  if (json_util::NestedDeeperThan(config, 32)) {
    return absl::InvalidArgumentError(std::string(name) + ".config: nested deeper than 32 levels");
  }
  if (config.is_null()) return (*e)->from_json(nlohmann::json::object());
  return (*e)->from_json(config);
}

}  // namespace augmentd
