// server/listen_address.h — parsing and checking of listen addresses ("host:port", "[v6]:port",
// "unix:///abs/path", "unix:relative/path"), before gRPC sees them, so that a typo gets a precise message.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace augmentd {

struct ListenAddress {
  std::string uri;        // as given to grpc::ServerBuilder::AddListeningPort
  bool is_unix = false;
  std::string unix_path;  // filesystem path of a unix socket
  std::string host;       // TCP host ("0.0.0.0", "[::]", "localhost")
  int port = 0;           // TCP port; 0 = any free port
};

// INVALID_ARGUMENT with a reason for anything gRPC would reject or misinterpret.
absl::StatusOr<ListenAddress> ParseListenAddress(std::string_view text);

// For a unix socket: fails (UNAVAILABLE) if another process already accepts connections on the path, if
// the path exists and is not a socket, or if its directory does not exist. A stale socket file (nobody
// listening) is fine: gRPC replaces it. For TCP: OK (gRPC's bind reports a busy port).
absl::Status CheckUnixSocketFree(const ListenAddress& address);

}  // namespace augmentd
