// policy/: the shared store of OAuth answers (credential_store.h).

#include "gateway/policy/credential_store.h"

#include <openssl/sha.h>

#include <utility>

#include "gateway/core/hex.h"

namespace gw::policy {

const char* tokenJobKindName(TokenJob::Kind k) noexcept {
  switch (k) {
    case TokenJob::Kind::kClientCredentials:
      return "client_credentials";
    case TokenJob::Kind::kTokenExchange:
      return "token_exchange";
    case TokenJob::Kind::kIntrospection:
      return "introspection";
    case TokenJob::Kind::kSignedIdentity:
      return "signed_identity";
  }
  return "?";
}

CredentialStore& CredentialStore::instance() {
  static CredentialStore store;
  return store;
}

std::string CredentialStore::hashKey(const TokenJob& job) {
  std::string input;
  auto part = [&](std::string_view s) {
    // Length-prefixed, so no two different jobs hash the same input.
    input += std::to_string(s.size());
    input += ':';
    input += s;
  };
  const char kind = static_cast<char>('0' + static_cast<int>(job.kind));
  part(std::string_view(&kind, 1));
  part(job.endpoint);
  part(job.client_id);
  part(job.audience);
  part(job.resource);
  part(job.scope);
  part(job.subject_token);
  return hashText(input);
}

std::string CredentialStore::hashText(std::string_view text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  std::string out;
  core::appendHex(out, std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
  return out;
}

CredentialStore::Found CredentialStore::find(const std::string& key, core::Nanos now) const {
  std::lock_guard lock(mu_);
  Found f;
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    return f;
  }
  const Entry& e = it->second;
  if (e.state != State::kPending && now >= e.until) {
    return f;
  }
  f.state = e.state;
  f.value = e.value;
  f.error = e.error;
  f.until = e.until;
  return f;
}

CredentialStore::State CredentialStore::ask(TokenJob job, core::Nanos now) {
  std::function<void()> wake;
  {
    std::lock_guard lock(mu_);
    auto [it, made] = entries_.try_emplace(job.key);
    Entry& e = it->second;
    if (!made && (e.state == State::kPending || e.refreshing || now < e.until)) {
      return e.state == State::kPending || now < e.until ? e.state : State::kPending;
    }
    e.state = State::kPending;
    e.kind = job.kind;
    e.value.clear();
    e.error.clear();
    e.made = now;
    if (made) {
      trim(now);
      if (entries_.size() > kMaxEntries) {
        // Every entry is a call in flight: this one is refused rather than queued (503).
        entries_.erase(job.key);
        return State::kFailed;
      }
    }
    jobs_.push_back(std::move(job));
    wake = waker_;
  }
  if (wake) {
    wake();
  }
  return State::kPending;
}

void CredentialStore::setWaker(std::function<void()> waker) {
  std::lock_guard lock(mu_);
  waker_ = std::move(waker);
}

std::vector<TokenJob> CredentialStore::takeJobs() {
  std::lock_guard lock(mu_);
  return std::exchange(jobs_, {});
}

void CredentialStore::publish(const std::string& key, State state, std::string value,
                              std::string error, core::Nanos until, core::Nanos now,
                              TokenJob::Kind kind) {
  std::lock_guard lock(mu_);
  auto [it, made] = entries_.try_emplace(key);
  Entry& e = it->second;
  if (made) {
    e.made = now;
    e.kind = kind;
  }
  e.state = state;
  e.refreshing = false;
  e.value = std::move(value);
  e.error = std::move(error);
  e.until = until;
  if (made) {
    trim(now);  // (may not erase this one: it is the newest)
  }
}

bool CredentialStore::markPending(const std::string& key, core::Nanos now) {
  std::lock_guard lock(mu_);
  Entry& e = entries_[key];
  if (e.state == State::kPending || e.refreshing) {
    return false;
  }
  if (e.state == State::kReady && now < e.until) {
    e.refreshing = true;  // a refresh: the current answer stays in use until the new one
  } else {
    e.state = State::kPending;
  }
  e.made = now;
  return true;
}

size_t CredentialStore::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

size_t CredentialStore::size(TokenJob::Kind kind) const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [key, e] : entries_) {
    n += e.kind == kind ? 1 : 0;
  }
  return n;
}

void CredentialStore::clear() {
  std::lock_guard lock(mu_);
  entries_.clear();
  jobs_.clear();
}

void CredentialStore::trim(core::Nanos now) {
  if (entries_.size() <= kMaxEntries) {
    return;
  }
  std::erase_if(entries_, [&](const auto& kv) {
    return kv.second.state != State::kPending && now >= kv.second.until;
  });
  while (entries_.size() > kMaxEntries) {
    auto oldest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.state != State::kPending &&
          (oldest == entries_.end() || it->second.made < oldest->second.made)) {
        oldest = it;
      }
    }
    if (oldest == entries_.end()) {
      break;
    }
    entries_.erase(oldest);
  }
}

}  // namespace gw::policy
