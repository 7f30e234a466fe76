// server/auth.h — bearer-token authentication of AugmentService calls (--auth_token_file).
//
// The token file holds one token per line; blank lines and lines starting with '#' are ignored; surrounding
// whitespace is stripped. A call must carry the metadata `authorization: Bearer <token>` with one of them,
// otherwise it is answered UNAUTHENTICATED (the message never echoes the token). Every AugmentService RPC is
// checked by its handler (AugmentServiceImpl::Authorize); grpc.health.v1 and server reflection stay open,
// so that load balancers and probes work without a secret (they reveal no session data).
// Why in the handlers: an AuthMetadataProcessor only runs with TLS credentials (tokens must also work on unix
// sockets), and gRPC 1.51's server interceptors cannot finish a call with a status of their choosing.
// Combine with TLS (server/tls.h): over plaintext TCP a token can be read off the wire.
//
// Thread-safety: immutable after construction.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace grpc {
class CallbackServerContext;
}

namespace augmentd {

class TokenAuthenticator {
 public:
  // NOT_FOUND for a missing / unreadable file, INVALID_ARGUMENT (naming --auth_token_file) for a file
  // without any token or with a token containing whitespace or non-printable characters.
  static absl::StatusOr<TokenAuthenticator> FromFile(const std::string& path);
  static absl::StatusOr<TokenAuthenticator> FromText(absl::string_view text, const std::string& source);

  // OK when `authorization` is "Bearer <t>" with a known token; UNAUTHENTICATED otherwise.
  absl::Status CheckHeader(absl::string_view authorization) const;
  // CheckHeader on the call's `authorization` metadata (missing → UNAUTHENTICATED).
  absl::Status Check(const grpc::CallbackServerContext& context) const;

  size_t num_tokens() const { return tokens_.size(); }

 private:
  std::vector<std::string> tokens_;
};

}  // namespace augmentd
