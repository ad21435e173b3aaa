#pragma once
// proxy/: the credentials a request carries to its upstreams (upstreams[].auth) — the stage
// that makes them before anything goes upstream, for every upstream the request may reach (a
// plain route's upstream, a federated call's owner, every upstream of a federated fan-out):
// - client_credentials: the gateway's own token for that upstream, from the shared store
//   (policy/credential_store.h) the token fetcher keeps fresh;
// - token_exchange: a token the identity provider issued for this caller and upstream
//   (RFC 8693), from the store, or exchanged now: the stage stops until the answer is in
//   (poll_wait.h), at most the auth timeout and a second;
// - signed_identity: a JWT the gateway signs for this caller (policy/identity_token.h), kept
//   in the shared store (all workers) per caller and upstream until half its lifetime has
//   passed.
// A refusal by the token endpoint is 403 (-31017) naming the upstream and the OAuth error, an
// endpoint that cannot be asked is 503 (-31018) with Retry-After, a caller without a bearer
// token for token_exchange gets the 401 challenge; that upstream is not contacted. On a
// federated route the request goes on while some upstream has its credential (or needs none):
// a call whose owner has none gets that answer, and fan-outs leave it out.

#include <array>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/core/clock.h"
#include "gateway/event/owners.h"
#include "gateway/filters/context.h"
#include "gateway/proxy/poll_wait.h"
#include "gateway/proxy/stage.h"
#include "gateway/settings/settings.h"

namespace gw::proxy {

struct ProxyContext;

// One worker's recent answers of the shared store (policy/credential_store.h) for an upstream's
// settings (UpstreamAuth::key_prefix) and a caller's token (its SHA-256, Identity::token_digest;
// empty for client_credentials), each kept at most a second and never beyond the store's own
// expiry: a caller's next requests then take no lock, no key hashing and no copy of the
// store's entry. Only tokens the store holds ready are kept; refusals and failures always come
// from the store.
class CredentialMemo {
 public:
  static constexpr std::chrono::milliseconds kKeep{1000};
  // The kept "Bearer …" value, or null.
  const std::string* find(std::string_view prefix, std::string_view digest,
                          core::Nanos now) const noexcept;
  void keep(std::string_view prefix, std::string_view digest, const std::string& value,
            core::Nanos until, core::Nanos now);

 private:
  struct Slot {
    std::string prefix;
    std::string digest;
    std::string value;
    core::Nanos until{};
  };
  std::array<Slot, 16> slots_;
  size_t next_ = 0;  // the slot the next keep() takes when none is free or expired
};

class UpstreamAuth {
 public:
  UpstreamAuth() = default;
  UpstreamAuth(const UpstreamAuth&) = delete;
  UpstreamAuth& operator=(const UpstreamAuth&) = delete;
  ~UpstreamAuth() { cancel(); }

  // The stage: the Authorization for each upstream (indexes into Settings::upstreams) in
  // `upstreams`. kContinue: made; kStop: waiting (runner.resume later); kLocalReply: ctx.reply.
  filters::FilterStatus run(filters::RequestContext& ctx, ProxyContext& w,
                            const std::vector<size_t>& upstreams, StageRunner& runner);
  // The request ends while the stage waits: no resume.
  void cancel() noexcept;
  // A new request.
  void reset() noexcept;

  // The Authorization field value made for upstream `index` ("" when it gets none made here).
  std::string_view authorization(size_t index) const noexcept;
  // Why no credential could be made for upstream `index` (a federated route's upstream whose
  // token endpoint refused, say: the request goes on for the others), or null.
  const filters::LocalReply* failure(size_t index) const noexcept;
  // authorization() for each upstream of a federated `route`, in route order, and which of
  // them have none for want of one (failure(): a fan-out leaves those out).
  struct RouteCredentials {
    std::vector<std::string> values;
    std::vector<bool> missing;
  };
  RouteCredentials forRoute(const settings::Route& route) const;
  // Whether upstream `index` takes a credential made here (every Authorization the request
  // carries is then dropped).
  bool makes(size_t index) const noexcept;

 private:
  struct Item {
    size_t index = 0;
    std::string value;                           // "Bearer …" once made
    std::optional<filters::LocalReply> failure;  // why none could be made
  };
  // The reply in ctx becomes `it`'s failure (ctx.reply is cleared).
  static void keep(filters::RequestContext& ctx, Item& it);
  static void unavailable(filters::RequestContext& ctx, Item& it, std::string message);
  std::vector<Item> items_;
  bool started_ = false;
  bool several_ = false;  // a federated route's upstreams
  PollWait wait_;
};

}  // namespace gw::proxy
