// settings/: the `admin_auth` block — the bearer token the admin port asks for. The token
// file is read here, at every load and reload, and only its SHA-256 is compared on requests
// (admin/auth.cc); errors name the file, never a byte of its content.

#include <openssl/sha.h>

#include <cctype>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/settings/loader.h"

namespace gw::settings {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kAdminAuthKeys[] = {"token_file"};

// RFC 6750 §2.1 b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=". The
// index of the first byte that breaks it, or npos.
size_t badB64Token(std::string_view t) {
  size_t i = 0;
  for (; i < t.size(); ++i) {
    const char c = t[i];
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ||
                    c == '_' || c == '~' || c == '+' || c == '/';
    if (!ok) {
      break;
    }
  }
  if (i == 0) {
    return 0;
  }
  for (; i < t.size(); ++i) {
    if (t[i] != '=') {
      return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

// admin_auth: { token_file: PATH }.
void Loader::walkAdminAuth(const Entry& ae, Settings& s) {
  std::vector<Entry> es = entries(ae.value, ae.key_node.Mark(), kAdminAuthKeys, ae.path);
  if (!ae.value.IsMap()) {
    return;  // reported by entries()
  }
  const Entry* tf = find(es, "token_file");
  if (tf == nullptr) {
    error(valueMark(ae), "'admin_auth' has no 'token_file'");
    return;
  }
  AdminAuth a;
  if (readAdminToken(*tf, a)) {
    s.admin_auth = std::move(a);
  }
}

// The admin token, read now (at every load and reload): the file's content without trailing
// whitespace (CR, LF, spaces, tabs). Errors name the file, never a byte of its content.
bool Loader::readAdminToken(const Entry& e, AdminAuth& out) {
  std::string text;
  if (!readNonEmptyString(e, text)) {
    return false;
  }
  const std::string abs = resolve(text);
  const std::string what = "admin token file '" + text + "'";
  if (hermeticLoad()) {
    error(valueMark(e), what + " not looked at (hermetic test load)");
    return false;
  }
  std::string token;
  if (!readTrimmedFile(e, abs, what, token)) {
    return false;
  }
  if (token.size() < kMinAdminTokenBytes) {
    error(valueMark(e), what + " holds a token of " + std::to_string(token.size()) +
                            " bytes; it must have at least " + std::to_string(kMinAdminTokenBytes) +
                            " (make one with: openssl rand -hex 32)");
    return false;
  }
  if (token.size() > kMaxAdminTokenBytes) {
    error(valueMark(e), what + " holds more than " + std::to_string(kMaxAdminTokenBytes) +
                            " bytes; is it the right file? (" + abs + ")");
    return false;
  }
  if (size_t bad = badB64Token(token); bad != std::string_view::npos) {
    error(valueMark(e), what + ": byte " + std::to_string(bad + 1) +
                            " cannot be part of a Bearer token (RFC 6750: letters, digits, "
                            "'-', '.', '_', '~', '+', '/', then '=' at the end only)");
    return false;
  }
  out.token_file = abs;
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(),
         out.token_sha256.data());
  out.token = std::move(token);
  return true;
}

}  // namespace gw::settings
