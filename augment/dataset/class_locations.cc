#include "augment/dataset/class_locations.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <new>
#include <sstream>
#include <unordered_set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "augment/dataset/mapped_file.h"
#include "augment/rng.h"

namespace augmentd::dataset {

int64_t NumLocationsToKeep(int64_t count, const FgSamplingRule& rule) {
  const int64_t by_min = std::min(rule.min_num_samples, count);
  const int64_t by_pct = static_cast<int64_t>(std::ceil(static_cast<double>(count) * rule.min_percent_coverage));
  return std::max(by_min, by_pct);
}

int ClassLocations::Find(const ClassKey& key) const {
  for (size_t k = 0; k < keys.size(); ++k) {
    if (keys[k] == key) return static_cast<int>(k);
  }
  return -1;
}

// Two passes per key: a label histogram gives each key's count; Floyd's algorithm draws the N ranks to
// keep (N draws, no O(count) work); a scan in C order then emits the voxels whose rank among the key's
// voxels was drawn. The kept voxels come out in C order (nnU-Net keeps them in draw order; the sampler
// picks uniformly, so order does not matter).
ClassLocations ComputeClassLocations(const int16_t* seg, const Shape& shape, const std::vector<ClassKey>& keys,
                                     const FgSamplingRule& rule) {
  ClassLocations out;
  out.keys = keys;
  out.spatial_rank = static_cast<int>(shape.size()) - 1;
  out.coords.resize(keys.size());
  out.total_counts.assign(keys.size(), 0);
  const int64_t n = NumElements(shape);
  std::vector<int64_t> hist(65536, 0);
  for (int64_t i = 0; i < n; ++i) ++hist[static_cast<uint16_t>(seg[i])];
  const int64_t spatial_n = shape.empty() ? 0 : n / std::max<int64_t>(shape[0], 1);
  for (size_t k = 0; k < keys.size(); ++k) {
    std::vector<bool> member(65536, false);
    int64_t count = 0;
    for (int l : keys[k].labels) {
      if (l < -32768 || l > 32767 || member[static_cast<uint16_t>(l)]) continue;
      member[static_cast<uint16_t>(l)] = true;
      count += hist[static_cast<uint16_t>(l)];
    }
    out.total_counts[k] = count;
    if (count == 0) continue;
    const int64_t keep = NumLocationsToKeep(count, rule);
    std::vector<int64_t> ranks;
    if (keep < count) {
      RandomStream rng(rule.seed, k, kFgLocationsTransformIndex);
      std::unordered_set<int64_t> chosen;
      chosen.reserve(static_cast<size_t>(keep) * 2);
      for (int64_t j = count - keep; j < count; ++j) {
        const int64_t t = rng.UniformInt(0, j);
        chosen.insert(chosen.count(t) ? j : t);
      }
      ranks.assign(chosen.begin(), chosen.end());
      std::sort(ranks.begin(), ranks.end());
    }
    std::vector<int32_t>& c = out.coords[k];
    c.reserve(static_cast<size_t>(keep * out.spatial_rank));
    int64_t rank = 0;
    size_t next = 0;
    for (int64_t i = 0; i < n && (keep == count || next < ranks.size()); ++i) {
      if (!member[static_cast<uint16_t>(seg[i])]) continue;
      if (keep == count || ranks[next] == rank) {
        int64_t r = i % spatial_n;  // drop the channel index
        const size_t base = c.size();
        c.resize(base + static_cast<size_t>(out.spatial_rank));
        for (int a = out.spatial_rank; a >= 1; --a) {
          c[base + static_cast<size_t>(a - 1)] = static_cast<int32_t>(r % shape[static_cast<size_t>(a)]);
          r /= shape[static_cast<size_t>(a)];
        }
        if (keep != count) ++next;
      }
      ++rank;
    }
  }
  return out;
}

absl::StatusOr<ClassLocations> ComputeClassLocations(const CaseArray& seg, const std::vector<ClassKey>& keys,
                                                     const FgSamplingRule& rule) {
  if (seg.rank() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(seg.path(), ": a segmentation needs a channel axis"));
  }
  std::vector<int16_t> buf;
  try {
    buf.resize(static_cast<size_t>(NumElements(seg.shape())));
  } catch (const std::bad_alloc&) {  // a damaged header may announce more than the host has
    return absl::ResourceExhaustedError(absl::StrCat(seg.path(), ": cannot allocate the segmentation (",
                                                     NumElements(seg.shape()), " voxels)"));
  }
  if (absl::Status st = seg.ReadAll(DType::kInt16, buf.data(), buf.size() * sizeof(int16_t)); !st.ok()) return st;
  return ComputeClassLocations(buf.data(), seg.shape(), keys, rule);
}

// ---- sidecar cache ----------------------------------------------------------------------------------------
// File layout (little-endian): "AUGFGLC1", u64 seg size, i64 seg mtime (ns), f64 pct, i64 min, u64 seed,
// u32 nkeys, i32 spatial_rank, then per key: u32 nlabels, i32 labels[], u8 is_region, u8 annotated,
// i64 total_count, u64 ncoords, i32 coords[ncoords].
namespace {

constexpr char kMagic[8] = {'A', 'U', 'G', 'F', 'G', 'L', 'C', '1'};

std::string KeysSignature(const std::vector<ClassKey>& keys, const FgSamplingRule& rule) {
  std::string s;
  for (const ClassKey& k : keys) absl::StrAppend(&s, k.ToString(), k.annotated ? "a" : "", ";");
  absl::StrAppend(&s, rule.min_num_samples, "/", rule.min_percent_coverage, "/", rule.seed);
  return s;
}

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

absl::Status StatSeg(const std::string& path, uint64_t* size, int64_t* mtime_ns) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return FileErrnoToStatus(errno, path, "cannot stat");
  *size = static_cast<uint64_t>(st.st_size);
  *mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return absl::OkStatus();
}

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  template <typename T>
  bool Get(T* v) {
    if (n_ - pos_ < sizeof(T)) return false;
    std::memcpy(v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetInts(std::vector<int32_t>* v, uint64_t count) {
    if ((n_ - pos_) / sizeof(int32_t) < count) return false;
    v->resize(static_cast<size_t>(count));
    if (count > 0) std::memcpy(v->data(), p_ + pos_, static_cast<size_t>(count) * sizeof(int32_t));
    pos_ += static_cast<size_t>(count) * sizeof(int32_t);
    return true;
  }
  bool AtEnd() const { return pos_ == n_; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

}  // namespace

std::string ClassLocationsCache::EntryPath(const std::string& seg_path, const std::vector<ClassKey>& keys,
                                           const FgSamplingRule& rule) const {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(Fnv1a(seg_path + "|" + KeysSignature(keys, rule))));
  return absl::StrCat(dir_, "/", hex, ".fgloc");
}

absl::StatusOr<ClassLocations> ClassLocationsCache::Load(const std::string& seg_path, const std::vector<ClassKey>& keys,
                                                         const FgSamplingRule& rule) const {
  if (dir_.empty()) return absl::NotFoundError("no class-locations cache directory");
  const std::string path = EntryPath(seg_path, keys, rule);
  absl::StatusOr<std::shared_ptr<const MappedFile>> file = MappedFile::Open(path);
  if (!file.ok()) return absl::NotFoundError(absl::StrCat(path, ": no cache entry"));
  uint64_t seg_size = 0;
  int64_t seg_mtime = 0;
  if (absl::Status st = StatSeg(seg_path, &seg_size, &seg_mtime); !st.ok()) return st;
  Reader r((*file)->data(), (*file)->size());
  char magic[8];
  uint64_t size = 0, seed = 0;
  int64_t mtime = 0, min_num = 0;
  double pct = 0;
  uint32_t nkeys = 0;
  int32_t rank = 0;
  auto damaged = [&] { return absl::DataLossError(absl::StrCat(path, ": damaged class-locations cache entry")); };
  if (!r.Get(&magic) || std::memcmp(magic, kMagic, 8) != 0) return damaged();
  if (!r.Get(&size) || !r.Get(&mtime) || !r.Get(&pct) || !r.Get(&min_num) || !r.Get(&seed) || !r.Get(&nkeys) ||
      !r.Get(&rank)) {
    return damaged();
  }
  if (size != seg_size || mtime != seg_mtime) return absl::NotFoundError(absl::StrCat(path, ": stale"));
  if (pct != rule.min_percent_coverage || min_num != rule.min_num_samples || seed != rule.seed ||
      nkeys != keys.size()) {
    return absl::NotFoundError(absl::StrCat(path, ": different rule or keys"));
  }
  ClassLocations loc;
  loc.spatial_rank = rank;
  for (uint32_t k = 0; k < nkeys; ++k) {
    uint32_t nlabels = 0;
    uint8_t is_region = 0, annotated = 0;
    int64_t total = 0;
    uint64_t ncoords = 0;
    ClassKey key;
    if (!r.Get(&nlabels) || nlabels > 65536) return damaged();
    std::vector<int32_t> labels;
    if (!r.GetInts(&labels, nlabels)) return damaged();
    key.labels.assign(labels.begin(), labels.end());
    if (!r.Get(&is_region) || !r.Get(&annotated) || !r.Get(&total) || !r.Get(&ncoords)) return damaged();
    key.is_region = is_region != 0;
    key.annotated = annotated != 0;
    if (!(key == keys[k])) return absl::NotFoundError(absl::StrCat(path, ": different keys"));
    std::vector<int32_t> coords;
    if (!r.GetInts(&coords, ncoords)) return damaged();
    loc.keys.push_back(key);
    loc.total_counts.push_back(total);
    loc.coords.push_back(std::move(coords));
  }
  if (!r.AtEnd()) return damaged();
  return loc;
}

absl::Status ClassLocationsCache::Store(const std::string& seg_path, const FgSamplingRule& rule,
                                        const ClassLocations& loc) const {
  if (dir_.empty()) return absl::OkStatus();
  if (::mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST) {
    return FileErrnoToStatus(errno, dir_, "cannot create cache directory");
  }
  uint64_t seg_size = 0;
  int64_t seg_mtime = 0;
  if (absl::Status st = StatSeg(seg_path, &seg_size, &seg_mtime); !st.ok()) return st;
  std::string buf(kMagic, 8);
  Put(&buf, seg_size);
  Put(&buf, seg_mtime);
  Put(&buf, rule.min_percent_coverage);
  Put(&buf, rule.min_num_samples);
  Put(&buf, rule.seed);
  Put(&buf, static_cast<uint32_t>(loc.keys.size()));
  Put(&buf, static_cast<int32_t>(loc.spatial_rank));
  for (size_t k = 0; k < loc.keys.size(); ++k) {
    Put(&buf, static_cast<uint32_t>(loc.keys[k].labels.size()));
    for (int l : loc.keys[k].labels) Put(&buf, static_cast<int32_t>(l));
    Put(&buf, static_cast<uint8_t>(loc.keys[k].is_region));
    Put(&buf, static_cast<uint8_t>(loc.keys[k].annotated));
    Put(&buf, loc.total_counts[k]);
    Put(&buf, static_cast<uint64_t>(loc.coords[k].size()));
    buf.append(reinterpret_cast<const char*>(loc.coords[k].data()), loc.coords[k].size() * sizeof(int32_t));
  }
  const std::string path = EntryPath(seg_path, loc.keys, rule);
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid(), ".", reinterpret_cast<uintptr_t>(&buf));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (!f) return absl::InternalError(absl::StrCat(tmp, ": cannot write cache entry"));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return FileErrnoToStatus(err, path, "cannot rename cache entry");
  }
  return absl::OkStatus();
}

}  // namespace augmentd::dataset
