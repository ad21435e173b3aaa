// server/discover: the upstreams' answers merged into the one the gateway gives (common
// protocol versions, the union of capabilities, every upstream's instructions), and the
// object union it uses for capabilities (see federation.h).

#include <cstdint>
#include <unordered_map>
#include <unordered_set>

#include "gateway/federation/federation.h"
#include "gateway/federation/json_scan.h"

namespace gw::federation {

namespace {

// The union of JSON values under construction. Nodes live in one vector and refer to each other
// by index; every text is a view into the caller's inputs.
class Union {
 public:
  // Merges the value starting at text[at] into node `n` (see mergeObjects for the rules).
  // Recursion follows the input's nesting, which validate() bounded to kMaxDepth.
  void merge(size_t n, std::string_view text, size_t at) {
    const char t = text[at];
    switch (nodes_[n].kind) {
      case Kind::kObject: {
        if (t != '{') {
          return;
        }
        json::ObjectReader r(text, at);
        std::string key;
        while (r.next()) {
          if (!json::unescape(r.keyToken(), key)) {
            continue;
          }
          const auto found = nodes_[n].index.find(key);
          if (found != nodes_[n].index.end()) {
            merge(found->second, text, r.valueBegin());
            continue;
          }
          const size_t child = make(text, r.valueBegin());
          nodes_[n].index.emplace(key, child);
          nodes_[n].members.emplace_back(r.keyToken(), child);
          merge(child, text, r.valueBegin());
        }
        return;
      }
      case Kind::kArray: {
        if (t != '[') {
          return;
        }
        json::ArrayReader r(text, at);
        while (r.next()) {
          if (nodes_[n].seen.insert(r.value()).second) {
            nodes_[n].elements.push_back(r.value());
          }
        }
        return;
      }
      case Kind::kBool:
        if (t == 't') {
          nodes_[n].flag = true;
        }
        return;
      case Kind::kOther:
        return;
    }
  }

  // A new node for the value at text[at] (its content is merged in by merge()).
  size_t make(std::string_view text, size_t at) {
    Node node;
    const char t = text[at];
    node.kind = t == '{'               ? Kind::kObject
                : t == '['             ? Kind::kArray
                : t == 't' || t == 'f' ? Kind::kBool
                                       : Kind::kOther;
    if (node.kind == Kind::kOther) {
      const size_t end = json::skipValue(text, at);
      node.text = text.substr(at, end == json::kNpos ? 0 : end - at);
    }
    nodes_.push_back(std::move(node));
    return nodes_.size() - 1;
  }

  void write(size_t n, std::string& out) const {
    const Node& node = nodes_[n];
    switch (node.kind) {
      case Kind::kObject:
        out.push_back('{');
        for (size_t i = 0; i < node.members.size(); ++i) {
          if (i > 0) {
            out.push_back(',');
          }
          out.append(node.members[i].first);
          out.push_back(':');
          write(node.members[i].second, out);
        }
        out.push_back('}');
        return;
      case Kind::kArray:
        out.push_back('[');
        for (size_t i = 0; i < node.elements.size(); ++i) {
          if (i > 0) {
            out.push_back(',');
          }
          out.append(node.elements[i]);
        }
        out.push_back(']');
        return;
      case Kind::kBool:
        out.append(node.flag ? "true" : "false");
        return;
      case Kind::kOther:
        out.append(node.text);
        return;
    }
  }

 private:
  enum class Kind : uint8_t { kObject, kArray, kBool, kOther };
  struct Node {
    Kind kind = Kind::kOther;
    bool flag = false;                                         // kBool
    std::string_view text;                                     // kOther: the first value
    std::vector<std::pair<std::string_view, size_t>> members;  // kObject: key token, node
    std::unordered_map<std::string, size_t> index;             // kObject: unescaped key
    std::vector<std::string_view> elements;                    // kArray
    std::unordered_set<std::string_view> seen;                 // kArray
  };
  std::vector<Node> nodes_;
};

// The root object of a JSON text, if it is one (valid, nested at most 64 deep).
bool rootObject(std::string_view text, size_t& open) {
  size_t end = 0;
  return json::validate(text) == json::Validity::kValid && json::rootSpan(text, open, end) &&
         text[open] == '{';
}

}  // namespace

std::string mergeObjects(std::span<const std::string_view> objects) {
  Union u;
  bool any = false;
  size_t root = 0;
  for (const std::string_view text : objects) {
    size_t open = 0;
    if (!rootObject(text, open)) {
      continue;
    }
    if (!any) {
      root = u.make(text, open);
      any = true;
    }
    u.merge(root, text, open);
  }
  if (!any) {
    return "{}";
  }
  std::string out;
  u.write(root, out);
  return out;
}

bool mergeDiscover(std::span<const DiscoverPart> parts,
                   std::span<const std::string> gateway_versions, std::string_view server_name,
                   std::string_view server_version, std::string& members, std::string& error) {
  members.clear();
  error.clear();
  std::vector<char> common(gateway_versions.size(), 1);
  size_t left = gateway_versions.size();
  std::vector<std::string_view> capabilities;
  std::string instructions;
  std::unordered_set<std::string> supported;
  std::string s;
  for (const DiscoverPart& part : parts) {
    supported.clear();
    size_t open = 0;
    if (rootObject(part.result, open)) {
      size_t b = 0;
      size_t e = 0;
      if (json::findMember(part.result, open, "supportedVersions", b, e) && part.result[b] == '[') {
        json::ArrayReader r(part.result, b);
        while (r.next()) {
          if (r.valueType() == '"' && json::unescape(r.value(), s)) {
            supported.insert(s);
          }
        }
      }
      if (json::findMember(part.result, open, "capabilities", b, e) && part.result[b] == '{') {
        capabilities.push_back(part.result.substr(b, e - b));
      }
      if (json::stringMember(part.result, open, "instructions", s) && !s.empty()) {
        if (!instructions.empty()) {
          instructions.append("\n\n");
        }
        instructions.append(part.upstream);
        instructions.append(":\n");
        instructions.append(s);
      }
    }
    const size_t before = left;
    for (size_t g = 0; g < gateway_versions.size(); ++g) {
      if (common[g] != 0 && supported.count(gateway_versions[g]) == 0) {
        common[g] = 0;
        --left;
      }
    }
    if (left == 0 && before > 0) {
      error = "no protocol version common to the gateway and every upstream (none left with ";
      error.append(part.upstream);
      error.push_back(')');
      return false;
    }
  }
  if (left == 0) {
    error = "the gateway has no protocol version to offer";
    return false;
  }

  members.append(R"("supportedVersions":[)");
  bool first = true;
  for (size_t g = 0; g < gateway_versions.size(); ++g) {
    if (common[g] == 0) {
      continue;
    }
    if (!first) {
      members.push_back(',');
    }
    first = false;
    json::appendString(members, gateway_versions[g]);
  }
  members.append(R"(],"capabilities":)");
  members.append(mergeObjects(capabilities));
  if (!instructions.empty()) {
    members.append(R"(,"instructions":)");
    json::appendString(members, instructions);
  }
  members.append(R"(,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{)");
  members.append(R"("name":)");
  json::appendString(members, server_name);
  members.append(R"(,"version":)");
  json::appendString(members, server_version);
  members.append("}}");
  return true;
}

}  // namespace gw::federation
