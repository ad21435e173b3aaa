#pragma once
// Helpers for the policy tests: a scratch directory and header fields.

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gateway/http/message.h"

namespace gw::policy::test {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gw-policy-XXXXXX").string();
    char* p = mkdtemp(tmpl.data());
    path_ = p != nullptr ? p : "";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string write(const std::string& name, const std::string& text) const {
    std::string full = path_ + "/" + name;
    std::ofstream(full, std::ios::binary) << text;
    return full;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Owns the strings an Authorization field points at.
struct AuthHeader {
  std::string value;
  std::vector<http::HeaderField> fields;
  explicit AuthHeader(std::string v) : value(std::move(v)) {
    fields.push_back(http::HeaderField{"Authorization", value, {}});
  }
};

// Base64url (RFC 4648 §5) without padding, as JWS segments are written.
inline std::string b64url(const std::string& in) {
  static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(a[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) {
    out.push_back(a[(acc << (6 - bits)) & 63]);
  }
  return out;
}

// HMAC-SHA-256 of `input` under `key` (an HS256 signature).
inline std::string hmac(const std::string& key, const std::string& input) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, &len);
  return std::string(reinterpret_cast<char*>(mac), len);
}

}  // namespace gw::policy::test
