#include "server/socket_buffers.h"

#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "server/listen_address.h"

namespace augmentd {
namespace {

// gRPC binds "unix:///tmp/x.sock" as "///tmp/x.sock": the same file as "/tmp/x.sock", compared with runs of '/'
// collapsed.
std::string CollapseSlashes(std::string_view path) {
  std::string out;
  for (char c : path) {
    if (c != '/' || out.empty() || out.back() != '/') out.push_back(c);
  }
  return out;
}

}  // namespace

int WidenUnixConnections(const std::vector<std::string>& paths, int bytes) {
  if (bytes <= 0 || paths.empty()) return 0;
  std::vector<std::string> wanted;
  for (const std::string& p : paths) wanted.push_back(CollapseSlashes(p));
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  const int self = dirfd(dir);
  int found = 0;
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == self) continue;
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_un local{};
    socklen_t len = sizeof(local);
    int type = 0;
    socklen_t type_len = sizeof(type);
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &len) != 0 ||
        local.sun_family != AF_UNIX || len <= offsetof(sockaddr_un, sun_path) || local.sun_path[0] == '\0' ||
        getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_TYPE, &type, &type_len) != 0 || type != SOCK_STREAM) {
      continue;
    }
    const std::string name = CollapseSlashes(
        std::string_view(local.sun_path, strnlen(local.sun_path, len - offsetof(sockaddr_un, sun_path))));
    if (std::find(wanted.begin(), wanted.end(), name) == wanted.end()) continue;
    sockaddr_un peer{};
    socklen_t peer_len = sizeof(peer);
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) continue;  // listener
    ++found;
    int current = 0;
    socklen_t current_len = sizeof(current);
    if (getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_SNDBUF, &current, &current_len) == 0 && current >= bytes) {
      continue;  // already wide (the kernel reports twice what was asked)
    }
    (void)setsockopt(static_cast<int>(fd), SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
    (void)setsockopt(static_cast<int>(fd), SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
  }
  closedir(dir);
  return found;
}

std::vector<std::string> UnixListenPaths(const std::vector<std::string>& listen) {
  std::vector<std::string> out;
  for (const std::string& text : listen) {
    absl::StatusOr<ListenAddress> address = ParseListenAddress(text);
    if (address.ok() && address->is_unix) out.push_back(address->unix_path);
  }
  return out;
}

}  // namespace augmentd
