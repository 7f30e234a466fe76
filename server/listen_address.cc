#include "server/listen_address.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace augmentd {

absl::StatusOr<ListenAddress> ParseListenAddress(std::string_view text_view) {
  const std::string text(text_view);
  ListenAddress out;
  out.uri = text;
  absl::string_view rest = text;
  if (absl::ConsumePrefix(&rest, "unix:")) {
    out.is_unix = true;
    if (absl::ConsumePrefix(&rest, "//")) {
      if (!absl::StartsWith(rest, "/")) {
        return absl::InvalidArgumentError(absl::StrCat(
            "listen address '", text, "': unix:// needs an absolute path (unix:///run/augmentd.sock)"));
      }
    }
    if (rest.empty()) return absl::InvalidArgumentError(absl::StrCat("listen address '", text, "': empty socket path"));
    if (rest.size() >= sizeof(sockaddr_un{}.sun_path)) {
      return absl::InvalidArgumentError(absl::StrCat("listen address '", text, "': socket path longer than ",
                                                     sizeof(sockaddr_un{}.sun_path) - 1, " bytes"));
    }
    out.unix_path = std::string(rest);
    return out;
  }
  if (absl::StrContains(text, "://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen address '", text, "': unsupported scheme (use host:port or unix:///path)"));
  }
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen address '", text, "': expected host:port or unix:///path"));
  }
  out.host = text.substr(0, colon);
  const std::string port = text.substr(colon + 1);
  if (out.host.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen address '", text, "': empty host (use 0.0.0.0:PORT for every interface)"));
  }
  if (out.host.find(':') != std::string::npos && !(out.host.front() == '[' && out.host.back() == ']')) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen address '", text, "': an IPv6 host must be bracketed, e.g. [::1]:50051"));
  }
  int port_number = -1;
  if (port.empty() || !absl::SimpleAtoi(port, &port_number) || port_number < 0 || port_number > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen address '", text, "': port '", port, "' is not a number in 0..65535"));
  }
  out.port = port_number;
  return out;
}

absl::Status CheckUnixSocketFree(const ListenAddress& address) {
  if (!address.is_unix) return absl::OkStatus();
  const std::string& path = address.unix_path;
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address.uri, ": directory '", dir,
                                               "' does not exist"));
  }
  if (::lstat(path.c_str(), &st) != 0) return absl::OkStatus();  // nothing there yet
  if (!S_ISSOCK(st.st_mode)) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", address.uri, ": '", path, "' exists and is not a socket"));
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::OkStatus();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  const bool in_use = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  if (in_use) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", address.uri, ": address already in use (another server accepts there)"));
  }
  return absl::OkStatus();
}

}  // namespace augmentd
