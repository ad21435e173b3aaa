// policy/: policy files → a validated, compiled PolicySet (see policy.h). The files are
// walked with config::Walker (config/yaml_walker.h), which catches yaml-cpp's exceptions and
// turns them into diagnostics with file:line:column; the JWKS a file names is read and parsed
// here and `redis.address` is resolved here, so nothing on the request path touches the
// filesystem or the resolver. This file: reading files, the top level, the readers the
// sections share and the finished set; each section has its own loader_*.cc
// (loader_internal.h).

#include <algorithm>
#include <filesystem>

#include "gateway/core/ascii.h"
#include "gateway/policy/loader_internal.h"

namespace gw::policy {

namespace {

using config::Entry;
using config::find;

namespace fs = std::filesystem;

constexpr std::string_view kTopKeys[] = {"identity", "rules",      "default",     "rate_limits",
                                         "redis",    "visibility", "tool_pinning"};

}  // namespace

bool Loader::validClaimName(std::string_view s) {
  if (s.empty()) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == ':' || c == '/';
  });
}

const config::NameRule Loader::kClaimNames{
    "claim names to values", [](const std::string& path, const std::string& name) {
      return validClaimName(name) ? std::string()
                                  : "'" + path + "': invalid claim names '" + name + "'";
    }};
const config::NameRule Loader::kParamNames{
    "param names to values",
    [](const std::string& path, const std::string& name) {
      return core::isToken(name) ? std::string()
                                 : "'" + path + "': invalid param names '" + name + "'";
    },
    true};

void Loader::walkFile(std::string_view yaml, const std::string& name) {
  setFile(name);
  std::error_code ec;
  fs::path abs = fs::absolute(fs::path(name), ec);
  base_dir_ = (ec ? fs::path(name) : abs).lexically_normal().parent_path();
  walk(yaml, [&](const YAML::Node& root) { walkTop(root); });
}

void Loader::readFile(const std::string& path) {
  std::string text;
  std::string reason;
  if (!settings::readWholeFile(path, text, reason)) {
    errors_.push_back(settings::Diagnostic{path, 0, 0, "cannot read policy file: " + reason});
    return;
  }
  walkFile(text, path);
}

std::shared_ptr<const PolicySet> Loader::finish() {
  for (const auto& [where_file, mark] : redis_limits_) {
    if (!set_->redis_.present) {
      errors_.push_back(settings::Diagnostic{where_file, mark.line + 1, mark.column + 1,
                                             "'backend: redis' needs a 'redis' section"});
    }
  }
  checkAudiences();
  if (errorCount() != errors_before_) {
    return nullptr;
  }
  set_->can_deny_ = !set_->default_allow_ ||
                    std::any_of(set_->rules_.begin(), set_->rules_.end(), [](const Rule& r) {
                      return !r.audit && (r.action == Rule::Action::kDeny ||
                                          r.require.has_value() || !r.require_scopes.empty());
                    });
  set_->has_audit_ = std::any_of(set_->rules_.begin(), set_->rules_.end(),
                                 [](const Rule& r) { return r.audit; }) ||
                     std::any_of(set_->rate_limits_.begin(), set_->rate_limits_.end(),
                                 [](const RateLimitSpec& l) { return l.audit; });
  return std::shared_ptr<const PolicySet>(set_.release());
}

void Loader::walkTop(const YAML::Node& root) {
  for (const Entry& e : entries(root, root.Mark(), kTopKeys, "")) {
    if (e.key == "identity") {
      walkIdentity(e);
    } else if (e.key == "rules") {
      walkList(e, [&](const YAML::Node& n, const std::string& path) { walkRule(n, path); });
    } else if (e.key == "default") {
      readChoice(e, "allow", "deny", set_->default_allow_);
    } else if (e.key == "rate_limits") {
      walkList(e, [&](const YAML::Node& n, const std::string& path) { walkLimit(n, path); });
    } else if (e.key == "redis") {
      walkRedis(e);
    } else if (e.key == "visibility") {
      readChoice(e, "filter", "all", set_->visibility_filter_);
    } else if (e.key == "tool_pinning") {
      walkPinning(e);
    }
  }
}

bool Loader::readList(const Entry& e, std::vector<std::string>& out) {
  return readStringList(e, out, nullptr, true);
}

bool Loader::readScopes(const Entry& e, std::vector<std::string>& out) {
  if (!readList(e, out)) {
    return false;
  }
  for (const std::string& sc : out) {
    bool bad = std::any_of(sc.begin(), sc.end(),
                           [](char c) { return c <= 0x20 || c >= 0x7f || c == '"' || c == '\\'; });
    if (bad) {
      error(valueMark(e), "'" + e.path + "': invalid scope '" + sc +
                              "' (printable ASCII without spaces, quotes or backslashes)");
      return false;
    }
  }
  return true;
}

std::string Loader::resolve(const std::string& rel) const {
  fs::path p(rel);
  if (p.is_relative()) {
    p = base_dir_ / p;
  }
  return p.lexically_normal().string();
}

std::shared_ptr<const PolicySet> PolicySet::load(const std::vector<std::string>& files,
                                                 std::vector<settings::Diagnostic>& errors) {
  Loader l(errors);
  for (const std::string& f : files) {
    l.readFile(f);
  }
  return l.finish();
}

std::shared_ptr<const PolicySet> PolicySet::loadString(std::string_view yaml,
                                                       const std::string& file,
                                                       std::vector<settings::Diagnostic>& errors) {
  Loader l(errors);
  l.walkFile(yaml, file);
  return l.finish();
}

}  // namespace gw::policy
