#include "augment/dataset/npy_format.h"

#include <cctype>
#include <cstring>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace augmentd::dataset {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

// A minimal reader for the dict literal numpy writes: string keys, and values that are strings, True/False
// or tuples of integers. Anything else is reported as malformed.
class DictParser {
 public:
  explicit DictParser(std::string_view text) : s_(text) {}

  absl::Status Parse(NpyHeader* h, const std::string& name) {
    bool have_descr = false, have_order = false, have_shape = false;
    Skip();
    if (!Eat('{')) return Bad(name, "expected '{'");
    while (true) {
      Skip();
      if (Eat('}')) break;
      std::string key;
      if (!String(&key)) return Bad(name, "expected a quoted key");
      Skip();
      if (!Eat(':')) return Bad(name, "expected ':'");
      Skip();
      if (key == "descr") {
        std::string descr;
        if (!String(&descr)) {
          return absl::UnimplementedError(absl::StrCat(name, ": structured numpy dtypes are not supported"));
        }
        absl::StatusOr<DType> t = DTypeFromNumpyDescr(descr);
        if (!t.ok()) return absl::UnimplementedError(absl::StrCat(name, ": ", t.status().message()));
        h->dtype = *t;
        have_descr = true;
      } else if (key == "fortran_order") {
        if (Word("True")) {
          h->fortran_order = true;
        } else if (Word("False")) {
          h->fortran_order = false;
        } else {
          return Bad(name, "fortran_order is not True/False");
        }
        have_order = true;
      } else if (key == "shape") {
        if (!Tuple(&h->shape)) return Bad(name, "shape is not a tuple of non-negative integers");
        have_shape = true;
      } else {
        return Bad(name, absl::StrCat("unexpected key '", key, "'"));
      }
      Skip();
      if (Eat(',')) continue;
      Skip();
      if (Eat('}')) break;
      return Bad(name, "expected ',' or '}'");
    }
    if (!have_descr || !have_order || !have_shape) return Bad(name, "missing descr, fortran_order or shape");
    return absl::OkStatus();
  }

 private:
  static absl::Status Bad(const std::string& name, const std::string& what) {
    return absl::DataLossError(absl::StrCat(name, ": malformed NPY header: ", what));
  }
  void Skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool Eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  bool String(std::string* out) {
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) return false;
    const char q = s_[pos_++];
    const size_t end = s_.find(q, pos_);
    if (end == std::string_view::npos) return false;
    *out = std::string(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return true;
  }
  bool Tuple(Shape* out) {
    out->clear();
    if (!Eat('(')) return false;
    while (true) {
      Skip();
      if (Eat(')')) return true;
      size_t end = pos_;
      while (end < s_.size() && std::isdigit(static_cast<unsigned char>(s_[end]))) ++end;
      int64_t v = 0;
      if (end == pos_ || !absl::SimpleAtoi(std::string(s_.substr(pos_, end - pos_)), &v)) return false;
      out->push_back(v);
      pos_ = end;
      Skip();
      if (Eat(',')) continue;
      Skip();
      if (Eat(')')) return true;
      return false;
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<NpyHeader> ParseNpyHeader(const uint8_t* bytes, size_t size, const std::string& name) {
  if (size < kMagicLen + 4 || std::memcmp(bytes, kMagic, kMagicLen) != 0) {
    return absl::DataLossError(absl::StrCat(name, ": not an NPY file (bad magic or truncated)"));
  }
  const uint8_t major = bytes[6];
  size_t header_len = 0, prefix = 0;
  if (major == 1) {
    header_len = static_cast<size_t>(bytes[8]) | (static_cast<size_t>(bytes[9]) << 8);
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return absl::DataLossError(absl::StrCat(name, ": truncated NPY header"));
    header_len = static_cast<size_t>(bytes[8]) | (static_cast<size_t>(bytes[9]) << 8) |
                 (static_cast<size_t>(bytes[10]) << 16) | (static_cast<size_t>(bytes[11]) << 24);
    prefix = 12;
  } else {
    return absl::UnimplementedError(absl::StrCat(name, ": unsupported NPY version ", static_cast<int>(major)));
  }
  if (header_len > size - prefix) {
    return absl::DataLossError(
        absl::StrCat(name, ": truncated NPY header (", header_len, " bytes announced, ", size - prefix, " present)"));
  }
  NpyHeader h;
  DictParser parser(std::string_view(reinterpret_cast<const char*>(bytes + prefix), header_len));
  if (absl::Status st = parser.Parse(&h, name); !st.ok()) return st;
  // A damaged header can announce absurd extents; their byte count must not overflow.
  int64_t bytes_total = static_cast<int64_t>(DTypeSize(h.dtype));
  for (int64_t e : h.shape) {
    if (__builtin_mul_overflow(bytes_total, e, &bytes_total)) {
      return absl::DataLossError(absl::StrCat(name, ": malformed NPY header: shape overflows"));
    }
  }
  h.data_offset = prefix + header_len;
  return h;
}

std::string MakeNpyHeader(DType dtype, const Shape& shape, bool fortran_order) {
  std::string descr;
  switch (dtype) {
    case DType::kInt8:
      descr = "|i1";
      break;
    case DType::kUInt8:
      descr = "|u1";
      break;
    case DType::kInt16:
      descr = "<i2";
      break;
    case DType::kUInt16:
      descr = "<u2";
      break;
    case DType::kInt32:
      descr = "<i4";
      break;
    case DType::kInt64:
      descr = "<i8";
      break;
    case DType::kFloat32:
      descr = "<f4";
      break;
    case DType::kFloat64:
      descr = "<f8";
      break;
  }
  // numpy writes "()", "(3,)" and "(1, 2, 3)".
  const std::string shape_text =
      shape.size() == 1 ? absl::StrCat("(", shape[0], ",)") : absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
  std::string dict = absl::StrCat("{'descr': '", descr, "', 'fortran_order': ", fortran_order ? "True" : "False",
                                  ", 'shape': ", shape_text, ", }");
  const size_t unpadded = 10 + dict.size() + 1;  // + trailing newline
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict.push_back('\n');
  std::string out(kMagic, kMagicLen);
  out.push_back(1);
  out.push_back(0);
  out.push_back(static_cast<char>(dict.size() & 0xff));
  out.push_back(static_cast<char>((dict.size() >> 8) & 0xff));
  return out + dict;
}

}  // namespace augmentd::dataset
