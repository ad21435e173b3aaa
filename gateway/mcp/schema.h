#pragma once
// Learned `x-mcp-header` annotations (spec items 42-47). The gateway learns each tool's
// annotations from the tools/list results it relays (JSON or SSE), per upstream, and keeps
// them for the result's ttlMs (a floor of min_ttl applies so ttlMs:0 still helps the next
// call). Thread-safe: workers learn and look up concurrently (shared_mutex; lookups return
// shared_ptr copies).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gw::mcp {

enum class ParamType : uint8_t { kString, kInteger, kBoolean };

struct HeaderParam {
  std::string header;             // the {Name} of Mcp-Param-{Name}, as annotated
  std::vector<std::string> path;  // `properties` keys from arguments root to the property
  ParamType type = ParamType::kString;
};

struct ToolSchema {
  std::string tool;
  std::vector<HeaderParam> params;
  // The tool's `annotations` (hints the server gives about itself): readOnlyHint and
  // idempotentHint as JSON `true`; anything else (absent, false, not a boolean) is false.
  // What upstreams[].retry.tools reads.
  bool read_only = false;
  bool idempotent = false;
};

// Parses one JSON-RPC response text carrying a tools/list result and returns the valid
// tools' annotation sets (x-mcp-header params, readOnlyHint, idempotentHint) (tools whose
// annotations break the rules of item 43 are left out, as a client would). `ttl_ms` receives
// result.ttlMs (0 when absent). False when the text is not a tools/list result.
bool parseToolsList(std::string_view json, std::vector<ToolSchema>& out, uint64_t& ttl_ms);

class SchemaCache {
 public:
  using Clock = std::chrono::steady_clock;

  explicit SchemaCache(std::chrono::milliseconds min_ttl = std::chrono::seconds(60))
      : min_ttl_(min_ttl) {}

  // Replaces everything known for `upstream` with this tools/list; returns the generation of
  // what it learned (renew()).
  uint64_t learn(std::string_view upstream, std::vector<ToolSchema> tools, uint64_t ttl_ms,
                 Clock::time_point now);
  // The same answer as the one `upstream`'s tools were learned from (learn() returned
  // `generation`) came again: what was learned lives `ttl_ms` (as learn()) from now. False
  // when the cache holds something else for `upstream` (learned since from another answer),
  // or nothing, or it expired: the caller learns the answer again.
  bool renew(std::string_view upstream, uint64_t generation, uint64_t ttl_ms,
             Clock::time_point now);
  // The tool's annotations, or nullptr when unknown or expired.
  std::shared_ptr<const ToolSchema> find(std::string_view upstream, std::string_view tool,
                                         Clock::time_point now) const;

 private:
  // Lets find() look up by string_view without building a std::string.
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  template <typename V>
  using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;
  struct Entry {
    StringMap<std::shared_ptr<const ToolSchema>> tools;
    Clock::time_point expires;
    uint64_t generation = 0;
  };
  uint64_t generations_ = 0;  // under mu_
  std::chrono::milliseconds min_ttl_;
  mutable std::shared_mutex mu_;
  StringMap<Entry> upstreams_;
};

}  // namespace gw::mcp
