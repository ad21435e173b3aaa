// policy/: the `rules` section of a policy file (see loader_internal.h): each rule's match
// and unless conditions, its action, and the `require` checks (a param equal to a claim,
// scopes) compiled into policy::Rule in file order.

#include "gateway/core/ascii.h"
#include "gateway/policy/loader_internal.h"

namespace gw::policy {

namespace {

using config::Entry;
using config::find;

constexpr std::string_view kRuleKeys[] = {"name", "match", "unless", "action", "require", "mode"};
constexpr std::string_view kMatchKeys[] = {"method",  "name",   "params",
                                           "subject", "groups", "claims"};
constexpr std::string_view kRequireKeys[] = {"param", "equals_claim", "scopes"};

}  // namespace

void Loader::walkRule(const YAML::Node& n, const std::string& path) {
  Rule r;
  r.file = file();
  r.line = n.Mark().is_null() ? 0 : n.Mark().line + 1;
  bool ok = true;
  bool has_action = false;
  std::vector<Entry> es = entries(n, n.Mark(), kRuleKeys, path);
  if (!n.IsMap()) {
    return;
  }
  for (const Entry& e : es) {
    if (e.key == "name") {
      ok = readNonEmptyString(e, r.name) && ok;
    } else if (e.key == "match") {
      ok = walkMatch(e, r.match) && ok;
    } else if (e.key == "unless") {
      r.unless.emplace();
      ok = walkMatch(e, *r.unless) && ok;
    } else if (e.key == "action") {
      bool allow = true;
      has_action = readChoice(e, "allow", "deny", allow);
      ok = has_action && ok;
      r.action = allow ? Rule::Action::kAllow : Rule::Action::kDeny;
    } else if (e.key == "mode") {
      bool enforce = true;
      ok = readChoice(e, "enforce", "audit", enforce) && ok;
      r.audit = !enforce;
    } else if (e.key == "require") {
      std::string param;
      std::string claim;
      bool scopes = false;
      for (const Entry& q : entries(e.value, e.key_node.Mark(), kRequireKeys, e.path)) {
        if (q.key == "scopes") {
          scopes = true;
          ok = readScopes(q, r.require_scopes) && ok;
          if (q.value.IsSequence() && q.value.size() == 0) {
            error(valueMark(q), "'" + q.path + "' must list at least one scope");
            ok = false;
          }
        } else if (!readNonEmptyString(q, q.key == "param" ? param : claim)) {
          ok = false;
        } else if (q.key == "param" && !core::isToken(param)) {
          error(valueMark(q), "'" + q.path + "': invalid param name '" + param + "'");
          ok = false;
        } else if (q.key == "equals_claim" && !validClaimName(claim)) {
          error(valueMark(q), "'" + q.path + "': invalid claim name '" + claim + "'");
          ok = false;
        }
      }
      if (scopes && param.empty() && claim.empty()) {
        continue;  // scopes alone
      }
      if (param.empty() || claim.empty()) {
        if (ok) {
          error(e.key_node.Mark(),
                "'" + e.path + "' needs " +
                    (param.empty() && claim.empty() ? "'scopes', or 'param' and 'equals_claim'"
                                                    : "'param' and 'equals_claim'"));
        }
        ok = false;
      }
      r.require.emplace(std::move(param), std::move(claim));
    }
  }
  if (find(es, "name") == nullptr) {
    error(n.Mark(), "'" + path + "' needs a 'name'");
    ok = false;
  }
  if (!has_action && find(es, "require") == nullptr && find(es, "action") == nullptr) {
    error(n.Mark(), "'" + path + "' needs 'action' (allow | deny) or 'require'");
    ok = false;
  }
  if (!r.name.empty()) {
    for (const Rule& other : set_->rules_) {
      if (other.name == r.name) {
        error(find(es, "name")->value.Mark(), "rule name '" + r.name + "' is used twice");
        ok = false;
      }
    }
  }
  if (ok) {
    set_->rules_.push_back(std::move(r));
  }
}

bool Loader::walkMatch(const Entry& me, Match& m) {
  bool ok = true;
  if (me.value.IsNull()) {
    return true;
  }
  for (const Entry& e : entries(me.value, me.key_node.Mark(), kMatchKeys, me.path)) {
    std::string text;
    if (e.key == "method" || e.key == "name" || e.key == "subject") {
      if (!readNonEmptyString(e, text)) {
        ok = false;
        continue;
      }
      std::optional<router::Glob>& dst = e.key == "method" ? m.method
                                         : e.key == "name" ? m.name
                                                           : m.subject;
      dst.emplace(std::move(text));
    } else if (e.key == "groups") {
      ok = readList(e, m.groups) && ok;
    } else if (e.key == "params" || e.key == "claims") {
      std::vector<std::pair<std::string, std::string>> raw;
      bool params = e.key == "params";
      if (params) {
        ok = readNameMap(e, kParamNames, raw) && ok;
      } else {
        ok = readNameMap(e, kClaimNames, raw) && ok;
      }
      auto& dst = params ? m.params : m.claims;
      for (auto& [k, v] : raw) {
        dst.emplace_back(std::move(k), router::Glob(std::move(v)));
      }
    }
  }
  return ok;
}

}  // namespace gw::policy
