#pragma once
// Helpers for the policy tests: a scratch directory and header fields.

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

}  // namespace gw::policy::test
