// proxy/: the credentials a request carries to its upstreams (upstream_auth.h).

#include "gateway/proxy/upstream_auth.h"

#include <openssl/rand.h>

#include <algorithm>
#include <chrono>

#include "gateway/core/hex.h"
#include "gateway/filters/pipeline.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/policy/credential_store.h"
#include "gateway/policy/identity_token.h"
#include "gateway/policy/token_answer.h"
#include "gateway/proxy/proxy_context.h"
#include "gateway/tls/signing.h"

namespace gw::proxy {

namespace {

using State = policy::CredentialStore::State;
using std::chrono::milliseconds;

constexpr milliseconds kGrace{1000};

std::string jti() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1) {
    return {};
  }
  return core::hexEncode(std::string_view(reinterpret_cast<const char*>(b), sizeof b));
}

// The key of a caller's signed identity for upstream `up`: everything the JWT says
// of the caller.
std::string identityKey(const settings::Upstream& up, const policy::Identity& id) {
  std::string k = up.name;
  auto part = [&](std::string_view s) {
    k += '\0';
    k += std::to_string(s.size());
    k += ':';
    k += s;
  };
  part(up.auth->issuer);
  part(up.auth->key->kid());
  part(id.subject);
  for (const std::string& g : id.groups) {
    part(g);
  }
  k += '\1';
  for (const std::string& s : id.scopes) {
    part(s);
  }
  if (const std::string* c = id.claim("client_id")) {
    part(*c);
  }
  return k;
}

}  // namespace

const std::string* CredentialMemo::find(std::string_view prefix, std::string_view digest,
                                        core::Nanos now) const noexcept {
  for (const Slot& s : slots_) {
    if (now < s.until && s.digest == digest && s.prefix == prefix) {
      return &s.value;
    }
  }
  return nullptr;
}

void CredentialMemo::keep(std::string_view prefix, std::string_view digest,
                          const std::string& value, core::Nanos until, core::Nanos now) {
  Slot* slot = nullptr;
  for (Slot& s : slots_) {
    if (now >= s.until || (s.digest == digest && s.prefix == prefix)) {
      slot = &s;
      break;
    }
  }
  if (slot == nullptr) {
    slot = &slots_[next_];
    next_ = (next_ + 1) % slots_.size();
  }
  slot->prefix.assign(prefix);
  slot->digest.assign(digest);
  slot->value = value;
  slot->until = std::min(until, now + kKeep);
}

void UpstreamAuth::reset() noexcept {
  wait_.reset();
  items_.clear();
  started_ = false;
}

void UpstreamAuth::cancel() noexcept {
  wait_.cancel();
}

std::string_view UpstreamAuth::authorization(size_t index) const noexcept {
  for (const Item& it : items_) {
    if (it.index == index) {
      return it.value;
    }
  }
  return {};
}

UpstreamAuth::RouteCredentials UpstreamAuth::forRoute(const settings::Route& route) const {
  RouteCredentials out;
  for (size_t index : route.upstream_indexes) {
    out.values.emplace_back(authorization(index));
    out.missing.push_back(failure(index) != nullptr);
  }
  return out;
}

bool UpstreamAuth::makes(size_t index) const noexcept {
  return std::any_of(items_.begin(), items_.end(),
                     [index](const Item& it) { return it.index == index; });
}

filters::FilterStatus UpstreamAuth::run(filters::RequestContext& ctx, ProxyContext& w,
                                        const std::vector<size_t>& upstreams, StageRunner& runner) {
  const settings::Settings& s = *ctx.snapshot->settings;
  const core::Nanos now = w.clock->now();
  if (!started_) {
    started_ = true;
    items_.clear();
    several_ = upstreams.size() > 1;
    milliseconds longest{0};
    for (size_t index : upstreams) {
      const settings::Upstream& up = s.upstreams[index];
      if (up.madeCredential() && !makes(index)) {
        items_.push_back(Item{index, {}, {}});
        longest = std::max(longest, std::chrono::duration_cast<milliseconds>(up.auth->timeout));
      }
    }
    wait_.begin(*w.clock, now, longest + kGrace);
  }
  bool waiting = false;
  policy::CredentialStore& store = policy::CredentialStore::instance();
  for (Item& it : items_) {
    if (!it.value.empty() || it.failure) {
      continue;
    }
    const settings::Upstream& up = s.upstreams[it.index];
    const settings::UpstreamAuth& a = *up.auth;
    if (a.type == settings::UpstreamAuthType::kSignedIdentity) {
      const std::string key = policy::CredentialStore::hashText(identityKey(up, ctx.identity));
      if (policy::CredentialStore::Found held = store.find(key, now); held.state == State::kReady) {
        it.value = std::move(held.value);  // kept as "Bearer <jwt>"
        continue;
      }
      const int64_t unix_now =
          std::chrono::duration_cast<std::chrono::seconds>(core::wallNow().time_since_epoch())
              .count();
      std::string jwt = policy::signIdentity(a, ctx.identity, unix_now, jti());
      if (jwt.empty()) {
        unavailable(ctx, it,
                    "Service Unavailable: the gateway could not sign an identity for "
                    "upstream '" +
                        up.name + "'; retry");
        continue;
      }
      it.value = "Bearer " + jwt;
      store.publish(key, State::kReady, it.value, "", now + a.ttl / 2, now,
                    policy::TokenJob::Kind::kSignedIdentity);
      continue;
    }
    if (a.type == settings::UpstreamAuthType::kTokenExchange && ctx.bearer_token.empty()) {
      filters::bearerRequired(ctx, "this upstream needs a bearer access token to act for you");
      keep(ctx, it);
      continue;
    }
    // This worker's memo first; then the store's key without building the call: the
    // settings' part was made at load, the caller's token digest by the identity stage.
    const bool cc = a.type == settings::UpstreamAuthType::kClientCredentials;
    const bool memo = cc || !ctx.identity.token_digest.empty();
    const std::string_view digest = cc ? std::string_view{} : ctx.identity.token_digest;
    if (memo) {
      if (const std::string* v = w.credential_memo.find(a.key_prefix, digest, now)) {
        it.value = *v;
        continue;
      }
    }
    std::string key;
    if (cc) {
      key = a.cc_key;
    } else if (memo) {
      key = settings::credentialKey(a, digest);
    } else {
      key = policy::upstreamTokenJob(up, ctx.bearer_token).key;
    }
    policy::CredentialStore::Found f = store.find(key, now);
    switch (f.state) {
      case State::kReady:
        if (memo) {
          w.credential_memo.keep(a.key_prefix, digest, f.value, f.until, now);
        }
        it.value = std::move(f.value);
        continue;
      case State::kRefused:
        filters::setReply(ctx, 403, mcp::code::kUpstreamAuthRefused,
                          "Forbidden: the identity provider refused a token for upstream '" +
                              up.name + "' (" + f.error + ")",
                          "upstream_auth_refused");
        keep(ctx, it);
        continue;
      case State::kFailed:
        unavailable(ctx, it,
                    "Service Unavailable: no token for upstream '" + up.name +
                        "': the token endpoint could not be asked; retry");
        continue;
      case State::kNone:
        if (a.type == settings::UpstreamAuthType::kTokenExchange) {
          store.ask(policy::upstreamTokenJob(up, ctx.bearer_token), now);
        }
        // client_credentials: the fetcher brings it (at start, or after a reload).
        waiting = true;
        break;
      case State::kPending:
        waiting = true;
        break;
    }
  }
  if (waiting && wait_.again(w.base, runner)) {
    return filters::FilterStatus::kStop;
  }
  const Item* first_failure = nullptr;
  bool any_made = false;
  for (Item& it : items_) {
    if (it.value.empty() && !it.failure) {
      unavailable(ctx, it,
                  "Service Unavailable: the token endpoint did not answer in time for upstream '" +
                      s.upstreams[it.index].name + "'; retry");
    }
    any_made = any_made || !it.value.empty();
    first_failure = first_failure == nullptr && it.failure ? &it : first_failure;
  }
  // One upstream: its failure is the answer. Several (a federated route): the request goes on
  // while some upstream has its credential; an upstream without one is answered for when the
  // request goes to it (failure()), and left out of fan-outs.
  const bool some_free = several_ && items_.size() < upstreams.size();
  if (first_failure != nullptr && !any_made && !some_free) {
    ctx.reply = *first_failure->failure;
    return filters::FilterStatus::kLocalReply;
  }
  return filters::FilterStatus::kContinue;
}

const filters::LocalReply* UpstreamAuth::failure(size_t index) const noexcept {
  for (const Item& it : items_) {
    if (it.index == index && it.failure) {
      return &*it.failure;
    }
  }
  return nullptr;
}

void UpstreamAuth::keep(filters::RequestContext& ctx, Item& it) {
  it.failure = std::move(ctx.reply);
  ctx.reply = filters::LocalReply{};
}

void UpstreamAuth::unavailable(filters::RequestContext& ctx, Item& it, std::string message) {
  filters::setReply(ctx, 503, mcp::code::kAuthUnavailable, std::move(message),
                    "upstream_auth_unavailable");
  ctx.reply.addField("Retry-After", "1");
  keep(ctx, it);
}

}  // namespace gw::proxy
