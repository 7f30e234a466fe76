// augment/schema.h — a transform's configuration fields, each declared once: name, rule (required / range) and a
// one-line doc, bound to the config struct's member (whose C++ type and in-class initializer are the field's type and
// default). JSON parsing (unknown keys rejected, defaults from `Config{}`), range validation, ConfigToJson and the
// per-field docs GetServerInfo reports all come from that one declaration; the server's proto → config mapping is the
// generic reflection in server/adapter.cc, which feeds the same JSON parser.
//
//   const ConfigSchema<GammaConfig>& GammaTransform::Schema() {
//     static const auto* const s = &(new ConfigSchema<GammaConfig>("gamma"))
//         ->Add("gamma", &GammaConfig::gamma, "exponent drawn per channel", Required(Above(0)))
//         .Add("p_per_channel", &GammaConfig::p_per_channel, "probability per channel", Probability());
//     return *s;
//   }
//   ASSIGN_OR_RETURN(GammaConfig c, GammaTransform::Schema().Parse(json));   // INVALID_ARGUMENT "gamma.<field>: ..."
//
// Cross-field checks (e.g. brightness_additive's mu <= sigma) stay in the transform's Create, after Validate.
// Thread-safety: a schema is immutable once built (build it in a function-local static); all methods are const.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "augment/random_scalar.h"
#include "nlohmann/json.hpp"

namespace augmentd {

// What a field accepts beyond its type. Numbers (and each element of a number list, and both ends of a RandomScalar)
// must lie in [lo, hi] (open ends with lo_open / hi_open); `required`: the JSON must name the field (bgv2 arguments
// without a default).
struct FieldRule {
  bool required = false;
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false, hi_open = false;
  bool omit_default = false;  // ToJson leaves the field out while it has its default (configs that predate it)
  bool bounded() const { return std::isfinite(lo) || std::isfinite(hi); }
  std::string Describe() const;  // "", "[0, 1]", "> 0", ">= 0", "(0, 1]"...
};
inline FieldRule AnyValue() { return {}; }
inline FieldRule Probability() { return {false, 0, 1}; }
inline FieldRule AtLeast(double lo) { return {false, lo}; }
inline FieldRule Above(double lo) { return {false, lo, std::numeric_limits<double>::infinity(), true}; }
inline FieldRule InRange(double lo, double hi) { return {false, lo, hi}; }
inline FieldRule OmitDefault(FieldRule r = {}) {
  r.omit_default = true;
  return r;
}
inline FieldRule Required(FieldRule r = {}) {
  r.required = true;
  return r;
}

// What GetServerInfo reports about one field.
struct FieldDoc {
  std::string name;
  std::string type;        // "double", "bool", "int", "string", "random_scalar", "int[]", "double[]", "bool[]", or a
                           // custom field's own word
  nlohmann::json default_value;  // Config{}'s value (null: no default, the field is required)
  std::string range;       // FieldRule::Describe(), "" when unbounded
  std::string doc;         // one line
  bool required = false;
};

// The type-erased view of a kind's schema (augment/registry.h TransformEntry::schema).
class TransformSchema {
 public:
  virtual ~TransformSchema() = default;
  virtual std::string_view transform() const = 0;
  virtual std::vector<FieldDoc> Fields() const = 0;
};

namespace schema_internal {
absl::Status Invalid(const std::string& where, const std::string& field, const std::string& problem);
absl::Status CheckKeys(const nlohmann::json& j, const std::vector<std::string>& allowed, const std::string& where);
absl::Status CheckNumber(double v, const FieldRule& r, const std::string& where, const std::string& field);

// Per-type read / write / check. A specialisation per supported member type. Read(o, key, where) reads o[key] (present,
// not null) with errors naming "<where>.<key>".
template <class T>
struct Codec;
template <>
struct Codec<double> {
  static constexpr const char* kType = "double";
  static absl::StatusOr<double> Read(const nlohmann::json& o, const std::string& key, const std::string& where);
  static nlohmann::json Write(double v) { return v; }
  static absl::Status Check(double v, const FieldRule& r, const std::string& w, const std::string& f) {
    return CheckNumber(v, r, w, f);
  }
};
template <>
struct Codec<bool> {
  static constexpr const char* kType = "bool";
  static absl::StatusOr<bool> Read(const nlohmann::json& o, const std::string& key, const std::string& where);
  static nlohmann::json Write(bool v) { return v; }
  static absl::Status Check(bool, const FieldRule&, const std::string&, const std::string&) { return absl::OkStatus(); }
};
template <>
struct Codec<int64_t> {
  static constexpr const char* kType = "int";
  static absl::StatusOr<int64_t> Read(const nlohmann::json& o, const std::string& key, const std::string& where);
  static nlohmann::json Write(int64_t v) { return v; }
  static absl::Status Check(int64_t v, const FieldRule& r, const std::string& w, const std::string& f) {
    return CheckNumber(static_cast<double>(v), r, w, f);
  }
};
template <>
struct Codec<int> {
  static constexpr const char* kType = "int";
  static absl::StatusOr<int> Read(const nlohmann::json& o, const std::string& key, const std::string& where);
  static nlohmann::json Write(int v) { return v; }
  static absl::Status Check(int v, const FieldRule& r, const std::string& w, const std::string& f) {
    return CheckNumber(static_cast<double>(v), r, w, f);
  }
};
template <>
struct Codec<std::string> {
  static constexpr const char* kType = "string";
  static absl::StatusOr<std::string> Read(const nlohmann::json& o, const std::string& key, const std::string& where);
  static nlohmann::json Write(const std::string& v) { return v; }
  static absl::Status Check(const std::string&, const FieldRule&, const std::string&, const std::string&) {
    return absl::OkStatus();
  }
};
template <>
struct Codec<RandomScalar> {
  static constexpr const char* kType = "random_scalar";
  static absl::StatusOr<RandomScalar> Read(const nlohmann::json& o, const std::string& key, const std::string& where);
  static nlohmann::json Write(const RandomScalar& v) { return v.ToJson(); }
  static absl::Status Check(const RandomScalar& v, const FieldRule& r, const std::string& w, const std::string& f);
};
template <>
struct Codec<std::vector<int64_t>> {
  static constexpr const char* kType = "int[]";
  static absl::StatusOr<std::vector<int64_t>> Read(const nlohmann::json& o, const std::string& key, const std::string& where);
  static nlohmann::json Write(const std::vector<int64_t>& v) { return v; }
  static absl::Status Check(const std::vector<int64_t>& v, const FieldRule& r, const std::string& w,
                            const std::string& f) {
    for (int64_t x : v)
      if (absl::Status s = CheckNumber(static_cast<double>(x), r, w, f); !s.ok()) return s;
    return absl::OkStatus();
  }
};
template <>
struct Codec<std::vector<double>> {
  static constexpr const char* kType = "double[]";
  static absl::StatusOr<std::vector<double>> Read(const nlohmann::json& o, const std::string& key, const std::string& where);
  static nlohmann::json Write(const std::vector<double>& v) { return v; }
  static absl::Status Check(const std::vector<double>& v, const FieldRule& r, const std::string& w,
                            const std::string& f) {
    for (double x : v)
      if (absl::Status s = CheckNumber(x, r, w, f); !s.ok()) return s;
    return absl::OkStatus();
  }
};
// An optional list (bgv2's None when unset: written as null, absent / null reads as unset).
template <>
struct Codec<std::optional<std::vector<int64_t>>> {
  static constexpr const char* kType = "int[] | null";
  static absl::StatusOr<std::optional<std::vector<int64_t>>> Read(const nlohmann::json& o, const std::string& key,
                                                                  const std::string& where) {
    absl::StatusOr<std::vector<int64_t>> v = Codec<std::vector<int64_t>>::Read(o, key, where);
    if (!v.ok()) return v.status();
    return std::optional<std::vector<int64_t>>(*std::move(v));
  }
  static nlohmann::json Write(const std::optional<std::vector<int64_t>>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json();
  }
  static absl::Status Check(const std::optional<std::vector<int64_t>>& v, const FieldRule& r, const std::string& w,
                            const std::string& f) {
    return v ? Codec<std::vector<int64_t>>::Check(*v, r, w, f) : absl::OkStatus();
  }
};
}  // namespace schema_internal

// The schema of configuration struct `C` (default-constructible; its in-class initializers are the defaults).
template <class C>
class ConfigSchema final : public TransformSchema {
 public:
  explicit ConfigSchema(std::string transform) : transform_(std::move(transform)) {}

  // A field stored in `member`; its type is the member's (see schema_internal::Codec).
  template <class T>
  ConfigSchema& Add(std::string name, T C::*member, std::string doc, FieldRule rule = {}) {
    return AddAt<T>(std::move(name), [member](C& c) -> T& { return c.*member; }, std::move(doc), rule);
  }
  // A field stored where `at(config)` points (a member of a member, e.g. the AugLab region's in_seg).
  template <class T, class At>
  ConfigSchema& AddAt(std::string name, At at, std::string doc, FieldRule rule = {}) {
    using Co = schema_internal::Codec<T>;
    C defaults{};
    Entry e;
    e.doc = {name, Co::kType, rule.required ? nlohmann::json() : Co::Write(at(defaults)), rule.Describe(),
             std::move(doc), rule.required};
    e.read = [at, name](const nlohmann::json& o, C& c, const std::string& where) -> absl::Status {
      absl::StatusOr<T> x = Co::Read(o, name, where);
      if (!x.ok()) return x.status();
      at(c) = *std::move(x);
      return absl::OkStatus();
    };
    // ToJson reads through `at` on a copy (it takes a non-const config).
    e.write = [at](const C& c) {
      C copy = c;
      return Co::Write(at(copy));
    };
    if (rule.omit_default) e.omit_value = e.doc.default_value;
    e.check = [at, rule, name](const C& c, const std::string& where) {
      C copy = c;
      return Co::Check(at(copy), rule, where, name);
    };
    entries_.push_back(std::move(e));
    return *this;
  }
  // A field read by `parse(value, "<transform>.<name>")` when present and not null (a type no Codec covers, e.g.
  // TorchIO's number-or-range); written back with nlohmann's conversion of T.
  template <class T, class Parse>
  ConfigSchema& AddParsed(std::string name, std::string type, T C::*member, std::string doc, Parse parse) {
    Entry e;
    e.doc = {name, std::move(type), nlohmann::json(C{}.*member), "", std::move(doc), false};
    e.read = [member, name, parse](const nlohmann::json& o, C& c, const std::string& where) -> absl::Status {
      absl::StatusOr<T> x = parse(o.at(name), where + "." + name);
      if (!x.ok()) return x.status();
      c.*member = *std::move(x);
      return absl::OkStatus();
    };
    e.write = [member](const C& c) { return nlohmann::json(c.*member); };
    entries_.push_back(std::move(e));
    return *this;
  }

  // A field with its own reader / writer (a type no Codec covers, or a reading that depends on other keys). `read`
  // gets the whole JSON object (it is called whether or not the key is present) and reports errors itself.
  ConfigSchema& Custom(std::string name, std::string type, std::string doc,
                       std::function<absl::Status(const nlohmann::json& j, C& c, const std::string& where)> read,
                       std::function<nlohmann::json(const C& c)> write, bool required = false) {
    Entry e;
    e.doc = {name, std::move(type), required ? nlohmann::json() : write(C{}), "", std::move(doc), required};
    e.custom = true;
    e.read = std::move(read);
    e.write = std::move(write);
    entries_.push_back(std::move(e));
    return *this;
  }

  // A custom field stored in `member`: `read(j, where)` gets the whole JSON object (called whether or not the key is
  // present, so it also supplies the default) and returns the value; the value is written back as JSON as is.
  template <class T, class Read>
  ConfigSchema& Custom(std::string name, std::string type, std::string doc, T C::*member, Read read) {
    return Custom(
        std::move(name), std::move(type), std::move(doc),
        [member, read](const nlohmann::json& j, C& c, const std::string& where) -> absl::Status {
          absl::StatusOr<T> v = read(j, where);
          if (!v.ok()) return v.status();
          c.*member = *std::move(v);
          return absl::OkStatus();
        },
        [member](const C& c) { return nlohmann::json(c.*member); });
  }

  // `j` (an object; null reads as {}, a null field as absent) → C: unknown keys, missing required fields, wrong types and out-of-range values
  // are INVALID_ARGUMENT "<transform>.<field>: ...". Absent optional fields keep C{}'s value.
  absl::StatusOr<C> Parse(const nlohmann::json& j) const {
    const nlohmann::json empty = nlohmann::json::object();
    const nlohmann::json& o = j.is_null() ? empty : j;
    std::vector<std::string> keys;
    for (const Entry& e : entries_) keys.push_back(e.doc.name);
    if (absl::Status s = schema_internal::CheckKeys(o, keys, transform_); !s.ok()) return s;
    C c{};
    for (const Entry& e : entries_) {
      if (e.custom) {
        if (absl::Status s = e.read(o, c, transform_); !s.ok()) return s;
        continue;
      }
      auto it = o.find(e.doc.name);
      if (it == o.end() || it->is_null()) {  // absent (or null): C{}'s value
        if (e.doc.required) return schema_internal::Invalid(transform_, e.doc.name, "required");
        continue;
      }
      if (absl::Status s = e.read(o, c, transform_); !s.ok()) return s;
    }
    if (absl::Status s = Validate(c); !s.ok()) return s;
    return c;
  }
  // Range checks of every declared field (Create calls it for configs built in C++).
  absl::Status Validate(const C& c) const {
    for (const Entry& e : entries_)
      if (e.check)
        if (absl::Status s = e.check(c, transform_); !s.ok()) return s;
    return absl::OkStatus();
  }
  // C → JSON with the declared names (ConfigToJson).
  nlohmann::json ToJson(const C& c) const {
    nlohmann::json out = nlohmann::json::object();
    for (const Entry& e : entries_) {
      nlohmann::json v = e.write(c);
      if (e.omit_value && v == *e.omit_value) continue;
      out[e.doc.name] = std::move(v);
    }
    return out;
  }

  std::string_view transform() const override { return transform_; }
  std::vector<FieldDoc> Fields() const override {
    std::vector<FieldDoc> out;
    for (const Entry& e : entries_) out.push_back(e.doc);
    return out;
  }

 private:
  struct Entry {
    FieldDoc doc;
    bool custom = false;
    std::function<absl::Status(const nlohmann::json&, C&, const std::string&)> read;
    std::function<nlohmann::json(const C&)> write;
    std::function<absl::Status(const C&, const std::string&)> check;
    std::optional<nlohmann::json> omit_value;  // FieldRule::omit_default
  };
  std::string transform_;
  std::vector<Entry> entries_;
};

// The registry's view of transform `T`'s schema (T::Schema()).
template <class T>
const TransformSchema& SchemaOf() {
  return T::Schema();
}

}  // namespace augmentd
