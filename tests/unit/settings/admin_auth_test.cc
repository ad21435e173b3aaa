// settings/: admin_auth (the admin listener's Bearer token, read from token_file at every
// load) and the rule that an admin listener off loopback needs it; how /config shows it.

#include <openssl/sha.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/filters/config_json.h"
#include "gateway/settings/settings.h"
#include "tests/unit/policy/test_util.h"
#include "tests/unit/settings/load_util.h"

namespace gw::settings {
namespace {

using test::dump;
using test::hasError;

constexpr char kToken[] = "0123456789abcdef0123456789abcdef";  // 32 bytes

std::string base(std::string_view extra) {
  std::string y =
      "upstreams:\n"                       // 1
      "  - name: main\n"                   // 2
      "    endpoints: [127.0.0.1:9000]\n"  // 3
      "admin: 127.0.0.1:9901\n";           // 4
  y += extra;
  return y;
}

std::array<unsigned char, 32> sha256(std::string_view s) {
  std::array<unsigned char, 32> d{};
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d.data());
  return d;
}

// The config `text` written as gateway.yaml in `dir`, loaded from there.
LoadResult loadIn(const policy::test::TempDir& dir, const std::string& text) {
  return loadFile(dir.write("gateway.yaml", text));
}

TEST_CASE("admin_auth: the token is read relative to the config, trailing whitespace trimmed",
          "[settings][admin_auth]") {
  policy::test::TempDir dir;
  std::filesystem::create_directory(dir.path() + "/secrets");
  const char* contents[] = {"", "\n", "\r\n", " \t\r\n\n", "\n\n  "};
  for (const char* tail : contents) {
    dir.write("secrets/admin.token", std::string(kToken) + tail);
    LoadResult r = loadIn(dir, base("admin_auth:\n  token_file: secrets/admin.token\n"));
    INFO(dump(r));
    REQUIRE(r.settings);
    REQUIRE(r.settings->admin_auth);
    const AdminAuth& a = *r.settings->admin_auth;
    CHECK(a.token == kToken);
    CHECK(a.token_file == dir.path() + "/secrets/admin.token");
    CHECK(a.token_sha256 == sha256(kToken));
  }
  // An absolute path is used as it is; 16 bytes is enough; base64 padding is allowed.
  const std::string abs = dir.write("t", "aB3-._~+/aB3-._~==\n");
  LoadResult r = loadIn(dir, base("admin_auth: { token_file: \"" + abs + "\" }\n"));
  INFO(dump(r));
  REQUIRE(r.settings);
  CHECK(r.settings->admin_auth->token == "aB3-._~+/aB3-._~==");
  // Without admin_auth there is none.
  LoadResult none = loadIn(dir, base(""));
  REQUIRE(none.settings);
  CHECK_FALSE(none.settings->admin_auth);
}

TEST_CASE("admin_auth: every problem is a load error at token_file, naming the file only",
          "[settings][admin_auth]") {
  policy::test::TempDir dir;
  std::filesystem::create_directory(dir.path() + "/a.dir");
  struct Case {
    const char* name;      // the token file, in `dir`
    std::string contents;  // written unless empty and name is "missing"
    const char* message;
  };
  const std::string long_token(4097, 'a');
  const Case cases[] = {
      {"missing", "", "admin token file 'missing' does not exist (looked for "},
      {"a.dir", "", "admin token file 'a.dir' is not a regular file"},
      {"empty", "-", "admin token file 'empty' is empty"},
      {"blank", " \r\n\t\n", "admin token file 'blank' is empty"},
      {"short", "0123456789abcde\n", "holds a token of 15 bytes; it must have at least 16"},
      {"long", long_token, "holds more than 4096 bytes"},
      {"space", "0123456789 abcdef0123", "byte 11 cannot be part of a Bearer token"},
      {"lead", " 0123456789abcdef0123", "byte 1 cannot be part of a Bearer token"},
      {"eq", "0123456789=abcdef0123", "byte 12 cannot be part of a Bearer token"},
      {"crlf", "0123456789abcdef\r\nsecond-line-0123", "byte 17 cannot be part"},
      {"nul", std::string("0123456789abcdef\0zz", 19), "byte 17 cannot be part"},
      {"utf8", "0123456789abcdef\xc3\xa9", "byte 17 cannot be part"},
  };
  for (const Case& c : cases) {
    if (std::string_view(c.name) != "missing" && std::string_view(c.name) != "a.dir") {
      dir.write(c.name, c.contents == "-" ? "" : c.contents);
    }
    LoadResult r = loadIn(dir, base("admin_auth:\n"     // 5
                                    "  token_file: " +  // 6
                                    std::string(c.name) +
                                    "\n"));
    INFO(c.name);
    INFO(dump(r));
    CHECK_FALSE(r.settings);
    REQUIRE(r.errors.size() == 1);
    const Diagnostic& d = r.errors[0];
    CHECK(d.file == dir.path() + "/gateway.yaml");
    CHECK(d.line == 6);
    CHECK(d.column == 15);
    CHECK(d.message.find(c.message) != std::string::npos);
    CHECK(d.message.find("0123456789") == std::string::npos);  // never the content
  }
}

TEST_CASE("admin_auth: an unreadable token file is a load error", "[settings][admin_auth]") {
  if (::geteuid() == 0) {
    WARN("running as root, which reads any file: not checked");
    return;
  }
  policy::test::TempDir dir;
  const std::string path = dir.write("admin.token", kToken);
  ::chmod(path.c_str(), 0);
  LoadResult r = loadIn(dir, base("admin_auth: { token_file: admin.token }\n"));
  INFO(dump(r));
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].line == 5);
  CHECK(r.errors[0].message.find("admin token file 'admin.token' cannot be read") !=
        std::string::npos);
  CHECK(r.errors[0].message.find("Permission denied") != std::string::npos);
}

TEST_CASE("admin_auth: its own shape is checked like any mapping", "[settings][admin_auth]") {
  struct Case {
    const char* yaml;
    int line;
    const char* message;
  };
  const Case cases[] = {
      {"admin_auth: {}\n", 5, "'admin_auth' has no 'token_file'"},
      {"admin_auth: secrets/admin.token\n", 5, "'admin_auth' must be a mapping"},
      {"admin_auth:\n", 5, "'admin_auth' must be a mapping"},
      {"admin_auth:\n  token_flie: x\n", 6, "did you mean 'token_file'?"},
      {"admin_auth:\n  token_file: \"\"\n", 6, "'admin_auth.token_file' must not be empty"},
      {"admin_auth:\n  token_file: [a]\n", 6, "'admin_auth.token_file' must be"},
  };
  for (const Case& c : cases) {
    LoadResult r = loadString(base(c.yaml), "/t/gw.yaml");
    INFO(c.yaml);
    INFO(dump(r));
    CHECK_FALSE(r.settings);
    bool found = false;
    for (const Diagnostic& d : r.errors) {
      found = found || (d.line == c.line && d.message.find(c.message) != std::string::npos);
      // The broken admin_auth is the only complaint (no "without admin_auth" on top).
      CHECK(d.message.find("not loopback") == std::string::npos);
    }
    CHECK(found);
  }
}

TEST_CASE("admin_auth: a reload reads the token file again", "[settings][admin_auth]") {
  policy::test::TempDir dir;
  const std::string text = base("admin_auth: { token_file: admin.token }\n");
  dir.write("admin.token", std::string(kToken) + "\n");
  LoadResult first = loadIn(dir, text);
  REQUIRE(first.settings);
  CHECK(first.settings->admin_auth->token == kToken);
  dir.write("admin.token", "a-new-token-of-enough-bytes\n");
  LoadResult second = loadIn(dir, text);
  REQUIRE(second.settings);
  CHECK(second.settings->admin_auth->token == "a-new-token-of-enough-bytes");
  CHECK(second.settings->admin_auth->token_sha256 == sha256("a-new-token-of-enough-bytes"));
  // The first snapshot is immutable: it keeps the token it was loaded with.
  CHECK(first.settings->admin_auth->token == kToken);
  std::filesystem::remove(dir.path() + "/admin.token");
  LoadResult gone = loadIn(dir, text);
  CHECK_FALSE(gone.settings);
  CHECK(dump(gone).find(":5:27: admin token file 'admin.token' does not exist") !=
        std::string::npos);
}

TEST_CASE("admin off loopback needs admin_auth", "[settings][admin_auth]") {
  policy::test::TempDir dir;
  dir.write("admin.token", kToken);
  const std::string upstreams =
      "upstreams:\n"                        // 1
      "  - name: main\n"                    // 2
      "    endpoints: [127.0.0.1:9000]\n";  // 3
  // Loopback: 127.0.0.0/8, ::1, IPv4-mapped 127.x, and names that resolve there.
  for (const char* admin : {"127.0.0.1:9901", "127.3.2.1:9901", "'[::1]:9901'",
                            "'[::ffff:127.0.0.1]:9901'", "localhost:9901"}) {
    LoadResult r = loadIn(dir, upstreams + "admin: " + admin + "\n");
    INFO(admin);
    INFO(dump(r));
    CHECK(r.settings);
  }
  for (const char* admin : {"0.0.0.0:9901", "'[::]:9901'", "10.1.2.3:9901", "'[::ffff:10.0.0.1]:1'",
                            "128.0.0.1:9901"}) {
    LoadResult r = loadIn(dir, upstreams + "admin: " + admin + "\n");  // 4
    INFO(admin);
    INFO(dump(r));
    CHECK_FALSE(r.settings);
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].line == 4);
    CHECK(r.errors[0].column == 8);
    CHECK(r.errors[0].message.find("(not loopback) without admin_auth; set "
                                   "admin_auth.token_file or bind admin to 127.0.0.1") !=
          std::string::npos);
    // With the token, the same address loads.
    LoadResult ok =
        loadIn(dir, upstreams + "admin: " + admin + "\nadmin_auth: { token_file: admin.token }\n");
    INFO(dump(ok));
    CHECK(ok.settings);
  }
  LoadResult r = loadString(upstreams + "admin: 0.0.0.0:9901\n", "/t/gw.yaml");
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].str() ==
        "/t/gw.yaml:4:8: admin listens on 0.0.0.0:9901 (not loopback) without admin_auth; set "
        "admin_auth.token_file or bind admin to 127.0.0.1");
  // admin_auth before admin in the file works the same.
  LoadResult before =
      loadIn(dir, "admin_auth: { token_file: admin.token }\n" + upstreams + "admin: 0.0.0.0:1\n");
  INFO(dump(before));
  CHECK(before.settings);
}

TEST_CASE("isLoopback", "[settings][admin_auth]") {
  for (const char* ip : {"127.0.0.1", "127.255.255.254", "::1", "::ffff:127.0.0.1"}) {
    INFO(ip);
    CHECK(isLoopback(ip));
  }
  for (const char* ip : {"0.0.0.0", "::", "10.0.0.1", "126.255.255.255", "128.0.0.0", "::2",
                         "::ffff:10.0.0.1", "fe80::1", "", "localhost", "127.0.0.1:80"}) {
    INFO(ip);
    CHECK_FALSE(isLoopback(ip));
  }
}

TEST_CASE("/config shows admin_auth's token file, never the token", "[settings][admin_auth]") {
  policy::test::TempDir dir;
  dir.write("admin.token", kToken);
  std::vector<Diagnostic> errors;
  auto snap = filters::Snapshot::load(
      dir.write("gateway.yaml", base("admin_auth: { token_file: admin.token }\n")), nullptr,
      errors);
  REQUIRE(snap);
  std::string json = filters::configJson(*snap);
  INFO(json);
  CHECK(json.find("\"admin_auth\":{\"token_file\":\"" + dir.path() + "/admin.token\"}") !=
        std::string::npos);
  CHECK(json.find(kToken) == std::string::npos);
  auto plain = filters::Snapshot::load(dir.write("gateway.yaml", base("")), nullptr, errors);
  REQUIRE(plain);
  CHECK(filters::configJson(*plain).find("\"admin_auth\":null") != std::string::npos);
}

}  // namespace
}  // namespace gw::settings
