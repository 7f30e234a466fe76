#include "server/auth.h"

#include <grpcpp/server_context.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "server/tls.h"

namespace augmentd {
namespace {

// Compares in time independent of where the strings differ (length still leaks, as for any MAC check).
bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

absl::StatusOr<TokenAuthenticator> TokenAuthenticator::FromFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileForFlag(path, "auth_token_file");
  if (!text.ok()) return text.status();
  return FromText(*text, path);
}

absl::StatusOr<TokenAuthenticator> TokenAuthenticator::FromText(absl::string_view text, const std::string& source) {
  TokenAuthenticator out;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    for (char c : line) {
      if (!absl::ascii_isgraph(static_cast<unsigned char>(c))) {
        return absl::InvalidArgumentError(absl::StrCat("--auth_token_file: line ", line_number, " of '", source,
                                                       "' has whitespace or a non-printable character in the token"));
      }
    }
    out.tokens_.emplace_back(line);
  }
  if (out.tokens_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--auth_token_file: '", source, "' holds no token"));
  }
  return out;
}

absl::Status TokenAuthenticator::CheckHeader(absl::string_view authorization) const {
  absl::string_view token = authorization;
  if (!absl::ConsumePrefix(&token, "Bearer ") && !absl::ConsumePrefix(&token, "bearer ")) {
    return absl::UnauthenticatedError("authorization: expected metadata 'authorization: Bearer <token>'");
  }
  token = absl::StripAsciiWhitespace(token);
  bool found = false;
  for (const std::string& t : tokens_) found = ConstantTimeEquals(token, t) || found;
  if (!found) return absl::UnauthenticatedError("authorization: the bearer token is not valid");
  return absl::OkStatus();
}

absl::Status TokenAuthenticator::Check(const grpc::CallbackServerContext& context) const {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) {
    return absl::UnauthenticatedError("authorization: missing metadata 'authorization: Bearer <token>'");
  }
  return CheckHeader(absl::string_view(it->second.data(), it->second.size()));
}

}  // namespace augmentd
