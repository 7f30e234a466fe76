#include "augment/dataset/npz_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "augment/dataset/mapped_file.h"
#include "augment/dataset/npy_format.h"

namespace augmentd::dataset {
namespace {

constexpr uint32_t kEocdSig = 0x06054b50, kZip64LocatorSig = 0x07064b50, kZip64EocdSig = 0x06064b50;
constexpr uint32_t kCentralSig = 0x02014b50, kLocalSig = 0x04034b50;

uint16_t U16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t U32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}
uint64_t U64(const uint8_t* p) { return U32(p) | (static_cast<uint64_t>(U32(p + 4)) << 32); }

struct ZipEntry {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t csize = 0, usize = 0, local_offset = 0;
};

absl::Status Corrupt(const std::string& path, const std::string& what) {
  return absl::DataLossError(absl::StrCat(path, ": corrupt .npz archive: ", what));
}

// Reads the central directory (via the end-of-central-directory record, zip64 if present).
absl::StatusOr<std::vector<ZipEntry>> ReadCentralDirectory(const MappedFile& f) {
  const uint8_t* d = f.data();
  const size_t n = f.size();
  const std::string& path = f.path();
  if (n < 22) return Corrupt(path, "shorter than an end-of-central-directory record");
  // The EOCD record is the last 22 bytes plus an optional comment of up to 64 KiB.
  size_t eocd = std::numeric_limits<size_t>::max();
  const size_t lowest = n > 22 + 0xffff ? n - 22 - 0xffff : 0;
  for (size_t i = n - 22 + 1; i-- > lowest;) {
    if (U32(d + i) == kEocdSig) {
      eocd = i;
      break;
    }
  }
  if (eocd == std::numeric_limits<size_t>::max()) return Corrupt(path, "no end-of-central-directory record");
  uint64_t count = U16(d + eocd + 10), cd_size = U32(d + eocd + 12), cd_offset = U32(d + eocd + 16);
  if ((count == 0xffff || cd_size == 0xffffffffu || cd_offset == 0xffffffffu) && eocd >= 20 &&
      U32(d + eocd - 20) == kZip64LocatorSig) {
    const uint64_t z64 = U64(d + eocd - 20 + 8);
    if (z64 > n || n - z64 < 56 || U32(d + z64) != kZip64EocdSig) return Corrupt(path, "bad zip64 record");
    count = U64(d + z64 + 32);
    cd_size = U64(d + z64 + 40);
    cd_offset = U64(d + z64 + 48);
  }
  if (cd_offset > n || cd_size > n - cd_offset) return Corrupt(path, "central directory out of range");
  std::vector<ZipEntry> entries;
  size_t p = static_cast<size_t>(cd_offset);
  const size_t end = static_cast<size_t>(cd_offset + cd_size);
  for (uint64_t i = 0; i < count; ++i) {
    if (end - p < 46 || U32(d + p) != kCentralSig) return Corrupt(path, "bad central directory entry");
    ZipEntry e;
    e.flags = U16(d + p + 8);
    e.method = U16(d + p + 10);
    e.crc = U32(d + p + 16);
    e.csize = U32(d + p + 20);
    e.usize = U32(d + p + 24);
    const size_t name_len = U16(d + p + 28), extra_len = U16(d + p + 30), comment_len = U16(d + p + 32);
    e.local_offset = U32(d + p + 42);
    if (end - p - 46 < name_len + extra_len + comment_len) return Corrupt(path, "central entry overruns");
    e.name.assign(reinterpret_cast<const char*>(d + p + 46), name_len);
    // zip64 extra field: the 64-bit values of whichever 32-bit fields are saturated, in this order.
    const uint8_t* x = d + p + 46 + name_len;
    for (size_t q = 0; q + 4 <= extra_len;) {
      const uint16_t id = U16(x + q), len = U16(x + q + 2);
      if (q + 4 + len > extra_len) return Corrupt(path, "extra field overruns");
      if (id == 0x0001) {
        size_t r = q + 4;
        auto take = [&](uint64_t* v) {
          if (*v == 0xffffffffu && r + 8 <= q + 4 + len) {
            *v = U64(x + r);
            r += 8;
          }
        };
        take(&e.usize);
        take(&e.csize);
        take(&e.local_offset);
      }
      q += 4 + len;
    }
    entries.push_back(std::move(e));
    p += 46 + name_len + extra_len + comment_len;
  }
  return entries;
}

class NpzArray final : public CaseArray {
 public:
  NpzArray(std::string name, Shape shape, DType dtype, std::shared_ptr<const MappedFile> file,
           std::vector<uint8_t> owned, const uint8_t* elements)
      : CaseArray(std::move(name), std::move(shape), dtype),
        file_(std::move(file)),
        owned_(std::move(owned)),
        elements_(elements) {}

 protected:
  const void* MappedData() const override { return elements_; }
  const MappedFile* Backing() const override { return file_.get(); }

 private:
  std::shared_ptr<const MappedFile> file_;  // set for stored members (elements point into the mapping)
  std::vector<uint8_t> owned_;              // set for deflated members (elements point here)
  const uint8_t* elements_;
};

absl::StatusOr<std::vector<uint8_t>> Inflate(const uint8_t* src, uint64_t csize, uint64_t usize,
                                             const std::string& name) {
  std::vector<uint8_t> out(static_cast<size_t>(usize));
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) return absl::InternalError(absl::StrCat(name, ": inflateInit2 failed"));
  uint64_t in_left = csize, out_done = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    const uInt in_chunk = static_cast<uInt>(std::min<uint64_t>(in_left, 1u << 30));
    const uInt out_chunk = static_cast<uInt>(std::min<uint64_t>(usize - out_done, 1u << 30));
    zs.next_in = const_cast<Bytef*>(src + (csize - in_left));
    zs.avail_in = in_chunk;
    zs.next_out = out.data() + out_done;
    zs.avail_out = out_chunk;
    rc = inflate(&zs, Z_NO_FLUSH);
    in_left -= in_chunk - zs.avail_in;
    out_done += out_chunk - zs.avail_out;
    if (rc == Z_OK && zs.avail_in == in_chunk && zs.avail_out == out_chunk) rc = Z_BUF_ERROR;  // no progress
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || out_done != usize) {
    return absl::DataLossError(absl::StrCat(name, ": deflate stream is corrupt or truncated (zlib ", rc, ", ", out_done,
                                            " of ", usize, " bytes)"));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ListNpzMembers(const std::string& path) {
  absl::StatusOr<std::shared_ptr<const MappedFile>> file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  absl::StatusOr<std::vector<ZipEntry>> entries;
  {
    MappingRead guard((*file)->range());
    entries = ReadCentralDirectory(**file);
    if (guard.failed()) return (*file)->LostPagesError();
  }
  if (!entries.ok()) return entries.status();
  std::vector<std::string> names;
  for (const ZipEntry& e : *entries) {
    names.push_back(absl::EndsWith(e.name, ".npy") ? e.name.substr(0, e.name.size() - 4) : e.name);
  }
  return names;
}

namespace {

absl::StatusOr<std::unique_ptr<CaseArray>> OpenNpzMemberOf(const std::string& path, const std::string& member,
                                                           const std::shared_ptr<const MappedFile>& file) {
  const MappedFile& f = *file;
  absl::StatusOr<std::vector<ZipEntry>> entries = ReadCentralDirectory(f);
  if (!entries.ok()) return entries.status();
  const std::string entry_name = member + ".npy";
  const std::string name = absl::StrCat(path, ":", member);
  auto it = std::find_if(entries->begin(), entries->end(), [&](const ZipEntry& e) { return e.name == entry_name; });
  if (it == entries->end()) return absl::NotFoundError(absl::StrCat(path, ": no member '", entry_name, "'"));
  const ZipEntry& e = *it;
  if (e.flags & 0x1) return absl::UnimplementedError(absl::StrCat(name, ": encrypted zip members"));
  const uint8_t* d = f.data();
  if (e.local_offset > f.size() || f.size() - e.local_offset < 30 || U32(d + e.local_offset) != kLocalSig) {
    return Corrupt(path, absl::StrCat("bad local header of '", entry_name, "'"));
  }
  const uint64_t data_start = e.local_offset + 30 + U16(d + e.local_offset + 26) + U16(d + e.local_offset + 28);
  if (data_start > f.size() || f.size() - data_start < e.csize) {
    return Corrupt(path, absl::StrCat("member '", entry_name, "' runs past the end of the file"));
  }
  const uint8_t* member_bytes = d + data_start;
  std::vector<uint8_t> owned;
  std::shared_ptr<const MappedFile> keep;
  uint64_t member_size = e.usize;
  if (e.method == 0) {
    if (e.csize != e.usize) return Corrupt(path, "stored member with differing sizes");
    keep = file;
  } else if (e.method == 8) {
    // Deflate expands at most 1032:1; a larger declared size is a damaged or hostile header, and Inflate would
    // allocate it up front (a 500-byte file asked for 3 GB: tests/fuzz/npz_fuzz).
    if (e.usize / 1032 > e.csize) {
      return Corrupt(path, absl::StrCat("member '", entry_name, "' declares ", e.usize, " bytes inflated from ", e.csize,
                                        " compressed (more than deflate's 1032:1)"));
    }
    absl::StatusOr<std::vector<uint8_t>> inflated = Inflate(member_bytes, e.csize, e.usize, name);
    if (!inflated.ok()) return inflated.status();
    owned = *std::move(inflated);
    uLong c = crc32(0L, Z_NULL, 0);
    for (size_t off = 0; off < owned.size(); off += (1u << 30)) {
      c = crc32(c, owned.data() + off, static_cast<uInt>(std::min<size_t>(owned.size() - off, 1u << 30)));
    }
    if (static_cast<uint32_t>(c) != e.crc) return absl::DataLossError(absl::StrCat(name, ": CRC-32 mismatch"));
    member_bytes = owned.data();
  } else {
    return absl::UnimplementedError(
        absl::StrCat(name, ": zip compression method ", e.method, " (only stored and deflated are supported)"));
  }
  absl::StatusOr<NpyHeader> h = ParseNpyHeader(member_bytes, static_cast<size_t>(member_size), name);
  if (!h.ok()) return h.status();
  if (h->fortran_order) {
    return absl::UnimplementedError(absl::StrCat(name, ": Fortran-ordered arrays are not supported"));
  }
  if (h->shape.empty()) return absl::DataLossError(absl::StrCat(name, ": rank-0 array is not a case array"));
  const uint64_t need = static_cast<uint64_t>(NumElements(h->shape)) * DTypeSize(h->dtype);
  if (member_size - h->data_offset < need) {
    return absl::DataLossError(absl::StrCat(name, ": member holds fewer elements than its header announces"));
  }
  const uint8_t* elements = member_bytes + h->data_offset;
  return std::unique_ptr<CaseArray>(
      new NpzArray(name, h->shape, h->dtype, std::move(keep), std::move(owned), elements));
}

}  // namespace

absl::StatusOr<std::unique_ptr<CaseArray>> OpenNpzMember(const std::string& path, const std::string& member) {
  absl::StatusOr<std::shared_ptr<const MappedFile>> file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  MappingRead guard((*file)->range());  // the directory, headers and deflated members are read from the mapping
  absl::StatusOr<std::unique_ptr<CaseArray>> array = OpenNpzMemberOf(path, member, *file);
  if (guard.failed()) return (*file)->LostPagesError();
  return array;
}

}  // namespace augmentd::dataset
