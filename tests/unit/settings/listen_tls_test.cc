// Unit tests for the top-level `tls:` block (settings/listen_tls.cc) and the context it
// builds (tls/server_context.cc): every file problem is a load error at the key that names
// the file. Certificates are made at test time with the openssl CLI (no committed keys).

#include <stdlib.h>
#include <unistd.h>

#include <catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "gateway/settings/settings.h"
#include "gateway/tls/server_context.h"
#include "tests/unit/settings/load_util.h"

namespace gw::settings {
namespace {

using test::dump;
using test::hasError;

// A private directory with a CA, a server pair signed by it and a second, unrelated key.
class Certs {
 public:
  Certs() {
    char tmpl[] = "/tmp/gw-tls-unit-XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    REQUIRE(d != nullptr);
    dir_ = d;
    run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 "
        "-subj /CN=unit-ca -keyout ca.key -out ca.pem");
    run("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
        "-subj /CN=localhost -keyout gw.key -out gw.csr");
    write("gw.ext", "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
    run("openssl x509 -req -in gw.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-extfile gw.ext -out gw.pem");
    run("openssl genpkey -algorithm ec -pkeyopt ec_paramgen_curve:P-256 -out other.key");
    write("garbage.pem", "not a certificate\n");
  }
  ~Certs() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& dir() const { return dir_; }
  std::string file(std::string_view name) const { return dir_ + "/" + std::string(name); }
  void run(const std::string& cmd) const {
    std::string full = "cd '" + dir_ + "' && " + cmd + " >/dev/null 2>&1";
    REQUIRE(std::system(full.c_str()) == 0);
  }
  void write(std::string_view name, std::string_view text) const {
    std::ofstream(file(name)) << text;
  }

 private:
  std::string dir_;
};

LoadResult load(const Certs& c, std::string_view tls_block) {
  std::string y =
      "upstreams:\n"
      "  - name: main\n"
      "    endpoints: [127.0.0.1:9000]\n";
  y += tls_block;
  return loadString(y, c.file("gateway.yaml"));
}

TEST_CASE("tls: a valid pair loads, paths relative to the config file", "[settings][tls]") {
  Certs c;
  LoadResult r = load(c,
                      "tls:\n"
                      "  cert: gw.pem\n"
                      "  key: gw.key\n");
  INFO(dump(r));
  REQUIRE(r.errors.empty());
  REQUIRE(r.settings->tls);
  CHECK(r.settings->tls->cert == c.file("gw.pem"));
  CHECK(r.settings->tls->key == c.file("gw.key"));
  CHECK(r.settings->tls->client_ca.empty());
  CHECK(r.settings->tls->min_version == "1.2");
  REQUIRE(r.settings->tls->context);
  CHECK(r.settings->tls->context->fingerprint().size() == 64);
  CHECK_FALSE(r.settings->tls->context->clientCerts());
}

TEST_CASE("tls: client_ca and min_version 1.3", "[settings][tls]") {
  Certs c;
  LoadResult r = load(c,
                      "tls:\n"
                      "  cert: gw.pem\n"
                      "  key: gw.key\n"
                      "  client_ca: ca.pem\n"
                      "  min_version: \"1.3\"\n");
  INFO(dump(r));
  REQUIRE(r.errors.empty());
  CHECK(r.settings->tls->min_version == "1.3");
  CHECK(r.settings->tls->client_ca == c.file("ca.pem"));
  CHECK(r.settings->tls->context->clientCerts());
}

TEST_CASE("tls: no tls block, no TLS", "[settings][tls]") {
  Certs c;
  LoadResult r = load(c, "");
  REQUIRE(r.errors.empty());
  CHECK_FALSE(r.settings->tls);
}

TEST_CASE("tls: file problems are load errors at the key that names the file", "[settings][tls]") {
  Certs c;
  struct Case {
    const char* name;
    std::string block;
    int line;
    int column;
    std::string text;
  };
  // Lines: the base config is 3 lines, `tls:` is line 4, its keys 5, 6, 7.
  const Case cases[] = {
      {"missing cert file", "tls:\n  cert: nope.pem\n  key: gw.key\n", 5, 9,
       "'tls.cert': cannot read " + c.file("nope.pem")},
      {"cert is not PEM", "tls:\n  cert: garbage.pem\n  key: gw.key\n", 5, 9,
       "'tls.cert': no PEM certificate in"},
      {"missing key file", "tls:\n  cert: gw.pem\n  key: nope.key\n", 6, 8,
       "'tls.key': cannot read"},
      {"key is not PEM", "tls:\n  cert: gw.pem\n  key: garbage.pem\n", 6, 8,
       "'tls.key': no usable PEM private key"},
      {"key does not match", "tls:\n  cert: gw.pem\n  key: other.key\n", 6, 8,
       "does not match the certificate in " + c.file("gw.pem")},
      {"a key given as the cert", "tls:\n  cert: gw.key\n  key: gw.key\n", 5, 9,
       "no PEM certificate"},
      {"client_ca missing", "tls:\n  cert: gw.pem\n  key: gw.key\n  client_ca: nope.pem\n", 7, 14,
       "'tls.client_ca': cannot read"},
      {"client_ca not PEM", "tls:\n  cert: gw.pem\n  key: gw.key\n  client_ca: garbage.pem\n", 7,
       14, "'tls.client_ca': no PEM certificate"},
      {"bad min_version", "tls:\n  cert: gw.pem\n  key: gw.key\n  min_version: \"1.1\"\n", 7, 16,
       "must be one of"},
      {"min_version as a number", "tls:\n  cert: gw.pem\n  key: gw.key\n  min_version: 1.0\n", 7,
       16, "must be one of"},
      {"no key", "tls:\n  cert: gw.pem\n", 4, 1, "needs both 'cert' and 'key'"},
      {"empty cert", "tls:\n  cert: \"\"\n  key: gw.key\n", 5, 9, "tls.cert"},
      {"unknown key", "tls:\n  cert: gw.pem\n  key: gw.key\n  ciphers: x\n", 7, 3, "ciphers"},
      {"not a mapping", "tls: yes\n", 4, 6, "must be a mapping"},
  };
  for (const Case& k : cases) {
    SECTION(k.name) {
      LoadResult r = load(c, k.block);
      INFO(dump(r));
      CHECK_FALSE(r.settings);
      CHECK(hasError(r, k.line, k.column, k.text));
    }
  }
}

TEST_CASE("tls: an unreadable key is a load error", "[settings][tls]") {
  if (::geteuid() == 0) {
    WARN("root reads any file: not checked");
    return;
  }
  Certs c;
  std::filesystem::permissions(c.file("gw.key"), std::filesystem::perms::none);
  LoadResult r = load(c, "tls:\n  cert: gw.pem\n  key: gw.key\n");
  INFO(dump(r));
  CHECK(hasError(r, 6, 8, "cannot read"));
}

TEST_CASE("tls: certificates picked by SNI, and their problems at their keys",
          "[settings][tls][servers]") {
  Certs c;
  // A second pair for a.example, signed by the same CA.
  c.run(
      "openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
      "-subj /CN=a.example -keyout a.key -out a.csr");
  c.write("a.ext", "subjectAltName=DNS:a.example\n");
  c.run(
      "openssl x509 -req -in a.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
      "-extfile a.ext -out a.pem");
  LoadResult ok = load(c,
                       "tls:\n"
                       "  cert: gw.pem\n"
                       "  key: gw.key\n"
                       "  certificates:\n"
                       "    - { hosts: [A.Example, \"*.b.example\"], cert: a.pem, key: a.key }\n");
  INFO(dump(ok));
  REQUIRE(ok.settings);
  REQUIRE(ok.settings->tls->certificates.size() == 1);
  CHECK(ok.settings->tls->certificates[0].hosts ==
        std::vector<std::string>{"a.example", "*.b.example"});
  CHECK(ok.settings->tls->certificates[0].cert == c.file("a.pem"));

  struct Case {
    const char* name;
    std::string block;
    int line;
    int column;
    std::string text;
  };
  const std::string head = "tls:\n  cert: gw.pem\n  key: gw.key\n  certificates:\n";  // 4-7
  const Case cases[] = {
      {"a missing cert file", head + "    - { hosts: [a.example], cert: nope.pem, key: a.key }\n",
       8, 35, "'tls.certificates[0].cert': cannot read"},
      {"a key that does not match",
       head + "    - { hosts: [a.example], cert: a.pem, key: gw.key }\n", 8, 47,
       "'tls.certificates[0].key': the private key in"},
      {"no hosts", head + "    - { cert: a.pem, key: a.key }\n", 8, 7,
       "needs 'hosts', 'cert' and 'key'"},
      {"a host with a port", head + "    - { hosts: [a.example:443], cert: a.pem, key: a.key }\n",
       8, 17, "must be a host name"},
      {"a host two certificates name",
       head + "    - { hosts: [a.example], cert: a.pem, key: a.key }\n"
              "    - { hosts: [a.example], cert: a.pem, key: a.key }\n",
       9, 16, "host a.example is already another certificate's"},
      {"not a list", head.substr(0, head.size() - 1) + " a.pem\n", 7, 17,
       "'tls.certificates' must be a list"},
  };
  for (const Case& k : cases) {
    INFO(k.name);
    LoadResult r = load(c, k.block);
    INFO(dump(r));
    CHECK_FALSE(r.settings);
    CHECK(hasError(r, k.line, k.column, k.text));
  }
}

}  // namespace
}  // namespace gw::settings
