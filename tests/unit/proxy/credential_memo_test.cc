// proxy::CredentialMemo: a worker's recent credentials towards upstreams, per upstream
// settings and caller token, kept at most a second and never past the store's expiry.

#include <catch.hpp>

#include <chrono>
#include <string>

#include "gateway/proxy/upstream_auth.h"

namespace {

using gw::core::Nanos;
using gw::proxy::CredentialMemo;
using std::chrono::milliseconds;

const std::string kDigestA(32, 'a');
const std::string kDigestB(32, 'b');

}  // namespace

TEST_CASE("credential memo: a kept value is found for exactly its settings and caller token",
          "[proxy][upstream_auth]") {
  CredentialMemo memo;
  const Nanos t0{std::chrono::seconds(100)};
  memo.keep("12:token_exchange|gh", kDigestA, "Bearer one", t0 + std::chrono::minutes(5), t0);
  const std::string* v = memo.find("12:token_exchange|gh", kDigestA, t0);
  REQUIRE(v != nullptr);
  CHECK(*v == "Bearer one");
  CHECK(memo.find("12:token_exchange|gh", kDigestB, t0) == nullptr);   // another caller
  CHECK(memo.find("12:token_exchange|db", kDigestA, t0) == nullptr);   // another upstream
  CHECK(memo.find("12:token_exchange|gh", "", t0) == nullptr);         // no caller token
  CHECK(memo.find("12:token_exchange|g", kDigestA, t0) == nullptr);    // a prefix of it
  CHECK(memo.find("12:token_exchange|ghx", kDigestA, t0) == nullptr);  // longer
}

TEST_CASE("credential memo: an entry lives at most a second and never past the store's expiry",
          "[proxy][upstream_auth]") {
  CredentialMemo memo;
  const Nanos t0{std::chrono::seconds(100)};
  memo.keep("p", kDigestA, "Bearer long", t0 + std::chrono::hours(1), t0);
  CHECK(memo.find("p", kDigestA, t0 + milliseconds(999)) != nullptr);
  CHECK(memo.find("p", kDigestA, t0 + CredentialMemo::kKeep) == nullptr);

  memo.keep("p", kDigestB, "Bearer short", t0 + milliseconds(200), t0);
  CHECK(memo.find("p", kDigestB, t0 + milliseconds(199)) != nullptr);
  CHECK(memo.find("p", kDigestB, t0 + milliseconds(200)) == nullptr);

  // Kept again: the new value replaces the old one.
  memo.keep("p", kDigestA, "Bearer newer", t0 + std::chrono::hours(1), t0 + milliseconds(10));
  const std::string* v = memo.find("p", kDigestA, t0 + milliseconds(20));
  REQUIRE(v != nullptr);
  CHECK(*v == "Bearer newer");
}

TEST_CASE("credential memo: client credentials are kept without a caller token",
          "[proxy][upstream_auth]") {
  CredentialMemo memo;
  const Nanos t0{std::chrono::seconds(5)};
  memo.keep("cc|search", "", "Bearer gateway", t0 + std::chrono::minutes(1), t0);
  REQUIRE(memo.find("cc|search", "", t0) != nullptr);
  CHECK(memo.find("cc|search", kDigestA, t0) == nullptr);
}

TEST_CASE("credential memo: more callers than slots push out the oldest, and nothing is wrong",
          "[proxy][upstream_auth]") {
  CredentialMemo memo;
  const Nanos t0{std::chrono::seconds(5)};
  constexpr int kCallers = 40;  // more than the memo's slots
  for (int i = 0; i < kCallers; ++i) {
    const std::string digest(32, static_cast<char>('A' + i));
    memo.keep("p", digest, "Bearer " + std::to_string(i), t0 + std::chrono::minutes(1), t0);
  }
  int found = 0;
  for (int i = 0; i < kCallers; ++i) {
    const std::string digest(32, static_cast<char>('A' + i));
    if (const std::string* v = memo.find("p", digest, t0)) {
      CHECK(*v == "Bearer " + std::to_string(i));  // a caller never gets another's token
      ++found;
    }
  }
  CHECK(found > 0);
  CHECK(found < kCallers);
  // The last caller kept is always found.
  CHECK(memo.find("p", std::string(32, static_cast<char>('A' + kCallers - 1)), t0) != nullptr);
}
