// tools/list learning (spec items 42-47): which tool arguments are mirrored into which
// Mcp-Param-{Name} headers, per upstream, with the result's ttlMs. Parsing runs on the
// response relay path (off the request hot path); lookups run per tools/call in verify mode.

#include "gateway/mcp/schema.h"

#include <simdjson.h>

#include <algorithm>

#include "gateway/core/ascii.h"

namespace gw::mcp {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

constexpr std::string_view kAnnotation = "x-mcp-header";
// Deeper schemas are refused (tool left out) rather than walked.
constexpr size_t kMaxSchemaDepth = 128;
// Largest ttlMs honoured (keeps time_point arithmetic far from overflow).
constexpr uint64_t kMaxTtlMs = uint64_t{365} * 24 * 3600 * 1000;

// JSON Schema keywords whose values are instance data, not subschemas: an "x-mcp-header"
// inside them is a value, never an annotation (rust-sdk PR #1111).
bool isDataKeyword(std::string_view k) {
  return k == "default" || k == "const" || k == "enum" || k == "examples";
}

struct ToolWalk {
  std::vector<HeaderParam> params;
  std::vector<std::string> path;
  bool invalid = false;
};

void walkElsewhere(element e, size_t depth, ToolWalk& w);

// A `properties` object seen outside the annotation chain: its keys are property names,
// its values schemas.
void walkPropertiesElsewhere(object props, size_t depth, ToolWalk& w) {
  for (auto field : props) {
    walkElsewhere(field.value, depth + 1, w);
    if (w.invalid) {
      return;
    }
  }
}

// Any JSON not reached solely through `properties` from the root: an annotation found
// anywhere in it makes the tool invalid (items, oneOf/anyOf/allOf/not, if/then/else, $defs,
// additionalProperties, patternProperties, unknown keywords...).
void walkElsewhere(element e, size_t depth, ToolWalk& w) {
  if (depth > kMaxSchemaDepth) {
    w.invalid = true;
    return;
  }
  if (e.type() == element_type::ARRAY) {
    simdjson::dom::array a;
    if (e.get_array().get(a) != simdjson::SUCCESS) {
      return;
    }
    for (element child : a) {
      walkElsewhere(child, depth + 1, w);
      if (w.invalid) {
        return;
      }
    }
    return;
  }
  object o;
  if (e.get_object().get(o) != simdjson::SUCCESS) {
    return;
  }
  for (auto field : o) {
    if (field.key == kAnnotation) {
      w.invalid = true;
      return;
    }
    if (isDataKeyword(field.key)) {
      continue;
    }
    object props;
    if (field.key == "properties" && field.value.get_object().get(props) == simdjson::SUCCESS) {
      walkPropertiesElsewhere(props, depth + 1, w);
    } else {
      walkElsewhere(field.value, depth + 1, w);
    }
    if (w.invalid) {
      return;
    }
  }
}

// Records the annotation of the property at w.path. False when it breaks item 43.
bool recordAnnotation(object schema, element value, ToolWalk& w) {
  std::string_view name;
  if (w.path.empty() || value.get_string().get(name) != simdjson::SUCCESS || !core::isToken(name)) {
    return false;
  }
  element type_el;
  std::string_view type;
  if (schema.at_key("type").get(type_el) != simdjson::SUCCESS ||
      type_el.get_string().get(type) != simdjson::SUCCESS) {
    return false;
  }
  HeaderParam hp;
  if (type == "string") {
    hp.type = ParamType::kString;
  } else if (type == "integer") {
    hp.type = ParamType::kInteger;
  } else if (type == "boolean") {
    hp.type = ParamType::kBoolean;
  } else {
    return false;
  }
  for (const HeaderParam& other : w.params) {
    if (core::iequals(other.header, name)) {
      return false;
    }
  }
  hp.header.assign(name);
  hp.path = w.path;
  w.params.push_back(std::move(hp));
  return true;
}

// A schema reached from the root solely through `properties` keys (w.path names them).
void walkChain(element e, size_t depth, ToolWalk& w) {
  if (depth > kMaxSchemaDepth) {
    w.invalid = true;
    return;
  }
  object o;
  if (e.get_object().get(o) != simdjson::SUCCESS) {
    return;  // boolean schema or garbage: nothing to learn, nothing hidden
  }
  for (auto field : o) {
    if (field.key == kAnnotation) {
      if (!recordAnnotation(o, field.value, w)) {
        w.invalid = true;
        return;
      }
      continue;
    }
    if (isDataKeyword(field.key)) {
      continue;
    }
    object props;
    if (field.key == "properties" && field.value.get_object().get(props) == simdjson::SUCCESS) {
      for (auto prop : props) {
        w.path.emplace_back(prop.key);
        walkChain(prop.value, depth + 1, w);
        w.path.pop_back();
        if (w.invalid) {
          return;
        }
      }
      continue;
    }
    walkElsewhere(field.value, depth + 1, w);
    if (w.invalid) {
      return;
    }
  }
}

}  // namespace

bool parseToolsList(std::string_view json, std::vector<ToolSchema>& out, uint64_t& ttl_ms) {
  thread_local simdjson::dom::parser parser;
  // A large list leaves no buffers of its size on this thread (they run to several times the
  // text): replaced once this call is done with every element.
  struct ShrinkAfter {
    simdjson::dom::parser& p;
    size_t n;
    ~ShrinkAfter() {
      if (n > 1024 * 1024) {
        p = simdjson::dom::parser();
      }
    }
  } shrink{parser, json.size()};
  ttl_ms = 0;
  element root;
  if (parser.parse(json.data(), json.size(), true).get(root) != simdjson::SUCCESS) {
    return false;
  }
  object result;
  simdjson::dom::array tools;
  if (root.at_key("result").get_object().get(result) != simdjson::SUCCESS ||
      result.at_key("tools").get_array().get(tools) != simdjson::SUCCESS) {
    return false;
  }
  uint64_t ttl = 0;
  if (result.at_key("ttlMs").get_uint64().get(ttl) == simdjson::SUCCESS) {
    ttl_ms = ttl;
  }
  ToolWalk w;
  for (element tool : tools) {
    std::string_view name;
    if (tool.at_key("name").get_string().get(name) != simdjson::SUCCESS) {
      continue;
    }
    w.params.clear();
    w.path.clear();
    w.invalid = false;
    element schema;
    if (tool.at_key("inputSchema").get(schema) == simdjson::SUCCESS) {
      walkChain(schema, 1, w);
    }
    if (w.invalid) {
      continue;
    }
    ToolSchema ts;
    ts.tool.assign(name);
    ts.params = std::move(w.params);
    object hints;
    if (tool.at_key("annotations").get_object().get(hints) == simdjson::SUCCESS) {
      bool b = false;
      ts.read_only = hints.at_key("readOnlyHint").get_bool().get(b) == simdjson::SUCCESS && b;
      b = false;
      ts.idempotent = hints.at_key("idempotentHint").get_bool().get(b) == simdjson::SUCCESS && b;
    }
    out.push_back(std::move(ts));
  }
  return true;
}

uint64_t SchemaCache::learn(std::string_view upstream, std::vector<ToolSchema> tools,
                            uint64_t ttl_ms, Clock::time_point now) {
  Entry entry;
  const auto ttl = std::max(std::chrono::milliseconds(std::min(ttl_ms, kMaxTtlMs)), min_ttl_);
  entry.expires = now + ttl;
  for (ToolSchema& t : tools) {
    std::string key = t.tool;
    entry.tools.insert_or_assign(std::move(key), std::make_shared<const ToolSchema>(std::move(t)));
  }
  std::unique_lock lock(mu_);
  entry.generation = ++generations_;
  const uint64_t generation = entry.generation;
  upstreams_.insert_or_assign(std::string(upstream), std::move(entry));
  return generation;
}

bool SchemaCache::renew(std::string_view upstream, uint64_t generation, uint64_t ttl_ms,
                        Clock::time_point now) {
  const auto ttl = std::max(std::chrono::milliseconds(std::min(ttl_ms, kMaxTtlMs)), min_ttl_);
  std::unique_lock lock(mu_);
  const auto up = upstreams_.find(upstream);
  if (up == upstreams_.end() || now >= up->second.expires || up->second.generation != generation) {
    return false;
  }
  up->second.expires = now + ttl;
  return true;
}

std::shared_ptr<const ToolSchema> SchemaCache::find(std::string_view upstream,
                                                    std::string_view tool,
                                                    Clock::time_point now) const {
  std::shared_lock lock(mu_);
  const auto up = upstreams_.find(upstream);
  if (up == upstreams_.end() || now >= up->second.expires) {
    return nullptr;
  }
  const auto it = up->second.tools.find(tool);
  if (it == up->second.tools.end()) {
    return nullptr;
  }
  return it->second;
}

}  // namespace gw::mcp
