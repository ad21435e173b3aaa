#pragma once
// policy/: what the gateway learned from OAuth endpoints on its own or a caller's behalf —
// tokens issued to it by client_credentials, tokens exchanged for a caller (RFC 8693), and
// introspection answers (RFC 7662) — shared by every worker, and the calls still to make.
// The I/O half is server/token_fetcher.h (one thread with the one outbound HTTP client);
// requests that need an answer not here yet ask for it (ask) and wait for it as a stage
// (proxy/upstream_auth.h), looking again until it is in.
//
// Entries are keyed by a SHA-256 of what the answer depends on (the endpoint, the client, the
// audience, resource and scopes asked for, and the caller's token): a caller's token is never
// a key, never logged, and held only in the job that carries it to the fetcher. One entry per
// key: asking while one is pending or still valid starts nothing (single flight). Bounded:
// past kMaxEntries the expired entries go, then the oldest.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gateway/core/clock.h"

namespace gw::policy {

// One call to make. Everything it needs is copied in (a reload may end the settings).
struct TokenJob {
  // kSignedIdentity: no call — a JWT the gateway signed, kept for reuse (proxy/upstream_auth.h).
  enum class Kind : uint8_t { kClientCredentials, kTokenExchange, kIntrospection, kSignedIdentity };
  Kind kind = Kind::kClientCredentials;
  std::string key;  // the store's (hashKey)
  std::string endpoint;
  std::string client_id;
  std::string client_secret;
  bool client_auth_post = false;
  std::string audience;
  std::string resource;
  std::string scope;  // space-separated
  std::string ca;     // "" = the system store
  std::chrono::milliseconds timeout{5000};
  std::string subject_token;        // token_exchange, introspection: the caller's token
  std::chrono::seconds cache{120};  // introspection: how long an active answer is reused
  std::string label;                // the upstream's name, or "introspection" (logs, metrics)
};

const char* tokenJobKindName(TokenJob::Kind k) noexcept;

class CredentialStore {
 public:
  static constexpr size_t kMaxEntries = 10000;

  enum class State : uint8_t {
    kNone,     // nothing known: ask
    kPending,  // a call is running
    kReady,    // `value` holds the answer until `until`
    kRefused,  // the endpoint said no (`error`: its OAuth error code); remembered briefly
    kFailed,   // the endpoint could not be asked (`error`: why); remembered briefly
  };
  struct Found {
    State state = State::kNone;
    std::string value;  // kReady: the access token, or the introspection answer (JSON)
    std::string error;  // kRefused / kFailed
    core::Nanos until{};
  };

  // The process's store (every worker and the fetcher).
  static CredentialStore& instance();

  // A key for `job` (its kind, endpoint, client, audience, resource, scope, and the caller's
  // token when it has one): 64 hex digits.
  static std::string hashKey(const TokenJob& job);

  // What is known for `key` at `now` (an entry past its time counts as kNone).
  Found find(const std::string& key, core::Nanos now) const;
  // Asks for `job` unless its key has a pending call or a live answer; returns the state after
  // (kPending when a call was queued). The fetcher is woken.
  State ask(TokenJob job, core::Nanos now);

  // ---- the fetcher's side (server/token_fetcher.h) ----
  // Called (under no lock of the caller's) when a job is queued; the fetcher's wake-up.
  void setWaker(std::function<void()> waker);
  std::vector<TokenJob> takeJobs();
  // The answer for `key` (at `now`), in force until `until`.
  void publish(const std::string& key, State state, std::string value, std::string error,
               core::Nanos until, core::Nanos now,
               TokenJob::Kind kind = TokenJob::Kind::kClientCredentials);
  // The SHA-256 (hex) of `text`: a key for what is not a call (signed identities).
  static std::string hashText(std::string_view text);
  // Marks `key` pending (a fetch the fetcher starts itself; a live answer stays in use while
  // it runs); false when a fetch for it already runs.
  bool markPending(const std::string& key, core::Nanos now);

  size_t size() const;
  size_t size(TokenJob::Kind kind) const;
  // Tests: forget everything.
  void clear();

 private:
  struct Entry {
    State state = State::kNone;
    bool refreshing = false;  // kReady, and a new answer is being fetched
    TokenJob::Kind kind = TokenJob::Kind::kClientCredentials;
    std::string value;
    std::string error;
    core::Nanos until{};
    core::Nanos made{};
  };
  void trim(core::Nanos now);  // under mu_

  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  std::vector<TokenJob> jobs_;
  std::function<void()> waker_;
};

}  // namespace gw::policy
