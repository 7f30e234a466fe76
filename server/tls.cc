#include "server/tls.h"

#include <grpcpp/security/server_credentials.h>

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace augmentd {

absl::StatusOr<std::string> ReadFileForFlag(const std::string& path, const std::string& flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("--", flag, ": cannot read '", path, "'"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

namespace {

// Reads a PEM file that must hold a block whose label ends in `label` ("CERTIFICATE", "PRIVATE KEY").
absl::StatusOr<std::string> ReadPem(const std::string& path, const std::string& flag, const std::string& label) {
  absl::StatusOr<std::string> text = ReadFileForFlag(path, flag);
  if (!text.ok()) return text.status();
  if (!absl::StrContains(*text, "-----BEGIN ") || !absl::StrContains(*text, absl::StrCat(label, "-----"))) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": '", path, "' is not a PEM file with a ", label, " block"));
  }
  return text;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeTcpCredentials(const TlsOptions& options) {
  if (!options.enabled()) return grpc::InsecureServerCredentials();
  if (options.cert_file.empty() || options.key_file.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key: TLS needs both (and --tls_client_ca needs them)");
  }
  absl::StatusOr<std::string> cert = ReadPem(options.cert_file, "tls_cert", "CERTIFICATE");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem(options.key_file, "tls_key", "PRIVATE KEY");
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  ssl.pem_key_cert_pairs.push_back({*key, *cert});
  if (!options.client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadPem(options.client_ca_file, "tls_client_ca", "CERTIFICATE");
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

}  // namespace augmentd
