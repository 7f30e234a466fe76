// server/tls.h — transport security of the gRPC listeners (--tls_cert, --tls_key, --tls_client_ca).
//
//   no --tls_cert / --tls_key     plaintext (insecure) credentials
//   --tls_cert + --tls_key        TLS: the server presents the PEM certificate chain and key
//   ... + --tls_client_ca         mTLS: clients must present a certificate signed by that CA bundle; the
//                                 handshake fails for a client without one or with another issuer
// TLS applies to TCP listeners. Unix-socket listeners stay plaintext: they are local, protected by the socket
// file's permissions, and co-located trainers use them for shared-memory / IPC delivery (document and
// restrict the socket directory instead). Bearer tokens (server/auth.h) apply to both.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace grpc {
class ServerCredentials;
}

namespace augmentd {

struct TlsOptions {
  std::string cert_file;       // PEM certificate chain of the server
  std::string key_file;        // PEM private key of the server
  std::string client_ca_file;  // PEM CA bundle for client certificates; empty: no client certificates
  bool enabled() const { return !cert_file.empty() || !key_file.empty() || !client_ca_file.empty(); }
};

// The credentials of TCP listeners. INVALID_ARGUMENT naming the flag when only one of cert / key is given or
// a client CA is given without them; NOT_FOUND naming the flag for an unreadable file; INVALID_ARGUMENT for a
// file that is not PEM.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeTcpCredentials(const TlsOptions& options);

// Reads a whole file given by a flag (NOT_FOUND naming --`flag` when it cannot be read); also for
// --auth_token_file (server/auth.h).
absl::StatusOr<std::string> ReadFileForFlag(const std::string& path, const std::string& flag);

}  // namespace augmentd
