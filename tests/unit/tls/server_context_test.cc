// Unit tests for tls/: the identity a client certificate gives (peerSubject).

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <unistd.h>

#include <catch.hpp>
#include <cstdio>
#include <filesystem>
#include <string>

#include "gateway/tls/server_context.h"

namespace gw::tls {
namespace {

// A self-signed certificate with `subj` and, when not empty, these subjectAltName entries.
std::string subjectOf(const std::string& subj, const std::string& san) {
  char tmpl[] = "/tmp/gw-tls-subj-XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  const std::string dir = d;
  std::string cmd = "cd '" + dir +
                    "' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
                    "-days 1 -keyout k.pem -out c.pem -subj '" +
                    subj + "'";
  if (!san.empty()) {
    cmd += " -addext 'subjectAltName=" + san + "'";
  }
  cmd += " >/dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  FILE* f = std::fopen((dir + "/c.pem").c_str(), "r");
  REQUIRE(f != nullptr);
  X509* x = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  REQUIRE(x != nullptr);
  std::string out = peerSubject(x);
  X509_free(x);
  std::filesystem::remove_all(dir);
  return out;
}

TEST_CASE("peerSubject: the first DNS or URI SAN, else the CN", "[tls]") {
  CHECK(subjectOf("/CN=ignored", "DNS:agent.example.com,DNS:second.example.com") ==
        "agent.example.com");
  CHECK(subjectOf("/CN=ignored", "URI:spiffe://example.org/ns/a/sa/agent") ==
        "spiffe://example.org/ns/a/sa/agent");
  // An email or IP SAN is no identity: the first DNS/URI after it is.
  CHECK(subjectOf("/CN=ignored", "email:a@example.com,IP:10.0.0.1,URI:urn:agent:7") ==
        "urn:agent:7");
  CHECK(subjectOf("/CN=ignored", "IP:10.0.0.1") == "ignored");
  CHECK(subjectOf("/O=Org/CN=alice", "") == "alice");
  CHECK(subjectOf("/O=Org only", "") == "");
  CHECK(peerSubject(nullptr).empty());
}

}  // namespace
}  // namespace gw::tls
