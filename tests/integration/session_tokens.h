// tests/integration/session_tokens.h — the session credentials (OpenSessionResponse.session_token) that test and
// bench clients received, by session id, so that request builders which only know an id can send the
// credential the server requires (server/session_lease.h). Header-only; thread-safe.
//
//   RememberToken(opened);                                   // after every OpenSession
//   req.set_session_id(id); req.set_session_token(TokenOf(id));
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "augmentd/v1/session.pb.h"

namespace augmentd {

inline std::mutex& SessionTokensMutex() {
  static std::mutex mu;
  return mu;
}

inline std::map<std::string, std::string>& SessionTokens() {
  static std::map<std::string, std::string> tokens;
  return tokens;
}

inline void RememberToken(const v1::OpenSessionResponse& response) {
  std::lock_guard<std::mutex> lock(SessionTokensMutex());
  SessionTokens()[response.session_id()] = response.session_token();
}

// "" for an id never opened (the server then answers NOT_FOUND, like for an unknown id).
inline std::string TokenOf(const std::string& id) {
  std::lock_guard<std::mutex> lock(SessionTokensMutex());
  auto it = SessionTokens().find(id);
  return it == SessionTokens().end() ? std::string() : it->second;
}

}  // namespace augmentd
