#include "server/request_limits.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"

namespace augmentd {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

absl::Status Walk(const Message& m, const std::string& prefix, size_t max_bytes, int depth) {
  if (depth > 64) return absl::InvalidArgumentError(absl::StrCat(prefix, ": nested too deeply"));
  const Reflection* r = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  for (const FieldDescriptor* f : fields) {
    const std::string name = prefix.empty() ? f->name() : absl::StrCat(prefix, ".", f->name());
    auto too_long = [&](const std::string& field, size_t n) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": ", n, " bytes, more than the ", max_bytes, " allowed"));
    };
    if (f->type() == FieldDescriptor::TYPE_STRING) {
      if (f->is_repeated()) {
        for (int i = 0; i < r->FieldSize(m, f); ++i) {
          std::string scratch;
          const std::string& v = r->GetRepeatedStringReference(m, f, i, &scratch);
          if (v.size() > max_bytes) return too_long(absl::StrCat(name, "[", i, "]"), v.size());
        }
      } else {
        std::string scratch;
        const std::string& v = r->GetStringReference(m, f, &scratch);
        if (v.size() > max_bytes) return too_long(name, v.size());
      }
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (f->is_repeated()) {
        for (int i = 0; i < r->FieldSize(m, f); ++i) {
          if (absl::Status s = Walk(r->GetRepeatedMessage(m, f, i), absl::StrCat(name, "[", i, "]"), max_bytes,
                                    depth + 1);
              !s.ok()) {
            return s;
          }
        }
      } else if (absl::Status s = Walk(r->GetMessage(m, f), name, max_bytes, depth + 1); !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckRequestStrings(const Message& message, size_t max_bytes) {
  return Walk(message, "", max_bytes, 0);
}

}  // namespace augmentd
