#include "augment/dataset/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <list>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace augmentd::dataset {

absl::Status FileErrnoToStatus(int err, const std::string& path, const char* what) {
  const std::string msg = absl::StrCat(path, ": ", what, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(msg);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(msg);
    case EISDIR:
      return absl::FailedPreconditionError(msg);
    case ENAMETOOLONG:
    case ELOOP:
      return absl::InvalidArgumentError(msg);
    default:
      return absl::InternalError(msg);
  }
}

absl::Status MappedFile::LostPagesError() const {
  return absl::DataLossError(absl::StrCat(path_, ": the file was truncated or rewritten while being read (",
                                          "its mapping lost its pages); re-open the dataset once it is complete"));
}

absl::StatusOr<std::shared_ptr<const MappedFile>> MappedFile::Open(const std::string& path) {
  struct stat st;
  return OpenWithStat(path, &st);
}

absl::StatusOr<std::shared_ptr<const MappedFile>> MappedFile::OpenWithStat(const std::string& path,
                                                                          struct stat* out_st) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return FileErrnoToStatus(errno, path, "cannot open");
  struct stat& st = *out_st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return FileErrnoToStatus(err, path, "cannot stat");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::FailedPreconditionError(absl::StrCat(path, ": not a regular file"));
  }
  const size_t size = static_cast<size_t>(st.st_size);
  const uint8_t* data = nullptr;
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return FileErrnoToStatus(err, path, "cannot mmap");
    }
    data = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // the mapping keeps the file referenced
  return std::shared_ptr<const MappedFile>(new MappedFile(path, data, size));
}

namespace {

struct FileIdentity {
  dev_t dev;
  ino_t ino;
  off_t size;
  int64_t mtime_ns, ctime_ns;
  bool operator==(const FileIdentity& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime_ns == o.mtime_ns && ctime_ns == o.ctime_ns;
  }
};

FileIdentity IdentityOf(const struct stat& st) {
  return {st.st_dev, st.st_ino, st.st_size, int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec,
          int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec};
}

// The LRU behind OpenShared: most recently used at the front.
struct SharedMappings {
  struct Entry {
    std::string path;
    FileIdentity id;
    std::shared_ptr<const MappedFile> file;
  };
  std::mutex mu;
  std::list<Entry> lru;
  std::unordered_map<std::string, std::list<Entry>::iterator> by_path;
  uint64_t bytes = 0;

  void Erase(std::list<Entry>::iterator it) {
    bytes -= it->file->size();
    by_path.erase(it->path);
    lru.erase(it);
  }
};

SharedMappings& Mappings() {
  static SharedMappings* m = new SharedMappings();  // never destroyed: used until exit
  return *m;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const MappedFile>> MappedFile::OpenShared(const std::string& path) {
  SharedMappings& m = Mappings();
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    std::lock_guard<std::mutex> lock(m.mu);
    auto it = m.by_path.find(path);
    if (it != m.by_path.end()) {
      if (it->second->id == IdentityOf(st) && !it->second->file->range().poisoned()) {
        m.lru.splice(m.lru.begin(), m.lru, it->second);
        return it->second->file;
      }
      m.Erase(it->second);  // the file changed: map it afresh
    }
  }
  absl::StatusOr<std::shared_ptr<const MappedFile>> f = OpenWithStat(path, &st);
  if (!f.ok()) return f;
  std::lock_guard<std::mutex> lock(m.mu);
  if (auto it = m.by_path.find(path); it != m.by_path.end()) m.Erase(it->second);
  m.lru.push_front({path, IdentityOf(st), *f});
  m.by_path[path] = m.lru.begin();
  m.bytes += (*f)->size();
  while (!m.lru.empty() && (m.bytes > kSharedMappingBytes || m.lru.size() > kSharedMappings)) {
    m.Erase(std::prev(m.lru.end()));
  }
  return f;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace augmentd::dataset
