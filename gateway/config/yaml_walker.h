#pragma once
// config/: what the gateway.yaml and policy-file loaders share — the value grammars
// (durations, sizes, addresses), host resolution, diagnostics, the file reader, and the YAML
// walker their schemas are built on.
// One YAML walker settings/ and policy/ build their schemas on: key checks with
// did-you-mean hints, duplicate keys, marks, typed scalar readers, error collection. A schema
// (settings/loader.cc for gateway.yaml, policy/loader.cc for policy files) walks each mapping
// with entries() and reads each value with a reader; every problem becomes a Diagnostic with
// file:line:column (1-based) and the walk goes on, so one load reports every error. yaml-cpp
// throws: its exceptions are caught in Walker::walk and in the loaders, never further out,
// and none of this is called on the request path.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/config/values.h"

namespace gw::config {

using Keys = std::span<const std::string_view>;

// One key/value pair of a mapping, with the dotted path used in messages
// ("limits.max_headers", "upstreams[1].name", "rules[0].match.method").
struct Entry {
  std::string key;
  std::string path;
  YAML::Node key_node;
  YAML::Node value;
};

// The entry for `key`, or null.
const Entry* find(const std::vector<Entry>& entries, std::string_view key);

// Appends "; did you mean 'X'?" for the candidate closest to `word` (edit distance under 3
// and under the word's length, the first of equals); appends nothing when none is that close.
// True when it appended.
bool appendDidYouMean(std::string& msg, std::string_view word, Keys candidates);

// How Walker::readNameMap checks the names of a `{ Name: value, ... }` mapping.
struct NameRule {
  const char* mapping;  // "'P' must be a mapping of <mapping>", e.g. "names to patterns"
  // The message for a name that is not allowed (`path` is the mapping's), "" when allowed.
  std::string (*check)(const std::string& path, const std::string& name);
  bool ignore_case = false;  // names differing only in ASCII case are the same name
};

class Walker {
 public:
  // Diagnostics are appended to `out`, which must outlive the walker. `document` names a
  // whole file in messages ("the file", "the policy file").
  Walker(std::vector<Diagnostic>& out, std::string document);

  // The file diagnostics name from now on.
  void setFile(std::string file) { file_ = std::move(file); }
  const std::string& file() const noexcept { return file_; }

  // Parses `yaml` and hands the root to `fn`, unless the document is empty. A syntax error,
  // and anything yaml-cpp or `fn` throws, becomes a diagnostic; only std::bad_alloc can
  // escape. Diagnostics are in the order the walk found them.
  void walk(std::string_view yaml, const std::function<void(const YAML::Node&)>& fn);

  // Records a problem at `m` (no position when `m` is null).
  void error(const YAML::Mark& m, std::string message);
  size_t errorCount() const noexcept { return errors_.size(); }

  // The value's position, or the key's when the value is empty (yaml-cpp marks an empty
  // value at the start of the next line).
  static YAML::Mark valueMark(const Entry& e);

  // The pairs of a mapping, in order. Reported and left out: a key not in `allowed` (with a
  // did-you-mean hint, or the allowed keys when none is near), a key given twice (at the
  // second, with the line of the first), a key that is not a scalar. Empty, with an error at
  // `where` (or the node), when `node` is not a mapping; `prefix` is the mapping's path, ""
  // for the top level.
  std::vector<Entry> entries(const YAML::Node& node, const YAML::Mark& where, Keys allowed,
                             const std::string& prefix);

  // Typed readers: true and `out` set when the value is valid, else false with an error at
  // the value and `out` unchanged.
  bool readString(const Entry& e, std::string& out);
  bool readNonEmptyString(const Entry& e, std::string& out);
  bool readBool(const Entry& e, bool& out);  // YAML booleans: true/false, yes/no, on/off
  bool readUint(const Entry& e, uint64_t max, uint64_t& out);
  bool readUint32(const Entry& e, uint32_t& out);
  bool readDuration(const Entry& e, Duration& out);  // parseDuration
  bool readSize(const Entry& e, uint64_t& out);      // parseSize
  // One of `choices`: "'P' must be one of a | b | c, not 'x'".
  bool readEnum(const Entry& e, Keys choices, std::string& out);
  // One of `choices` (`index` into it): "'P' must be a, b or c, not 'x'".
  bool readChoice(const Entry& e, Keys choices, size_t& index);
  // `a` or `b` (e.g. allow | deny); `is_a` true when the value is `a`.
  bool readChoice(const Entry& e, std::string_view a, std::string_view b, bool& is_a);
  // A sequence of scalars (empty strings refused when `non_empty`); `nodes`, when given, gets
  // each item's node beside the strings. `out` is only set when every item is valid.
  bool readStringList(const Entry& e, std::vector<std::string>& out,
                      std::vector<YAML::Node>* nodes = nullptr, bool non_empty = false);
  // `{ Name: "value", ... }`: each name checked by `rule`, a name given twice reported (at
  // the second, with the line of the first), each value a scalar. `out` gets the valid pairs;
  // `values`, when given, each valid pair's value node beside them (for later messages).
  bool readNameMap(const Entry& e, const NameRule& rule,
                   std::vector<std::pair<std::string, std::string>>& out,
                   std::vector<YAML::Node>* values = nullptr);

  // The content of the file `abs` (named `what` in messages) without trailing whitespace;
  // a missing, irregular, unreadable or empty file is an error at `e`'s value. Messages never
  // show a byte of the content (secret files: tokens, client secrets).
  bool readTrimmedFile(const Entry& e, const std::string& abs, const std::string& what,
                       std::string& out);

  // A secret kept in the file `abs` (written `text` in the config; client_secret_file): as
  // readTrimmedFile, at most 4096 bytes, no control character. Under hermetic test loads the
  // file is not read and the secret is "hermetic".
  bool readSecretFile(const Entry& e, const std::string& abs, const std::string& text,
                      std::string& secret);

  // An address (IPv4:port, [IPv6]:port or hostname:port). A host name is resolved here, once
  // (resolveHost; refused under hermetic test loads): `out.ip` is always numeric afterwards,
  // and a name that does not resolve is an error at the value.
  bool readAddress(const Entry& e, Address& out, bool allow_port0);
  // The same for a value that is not an entry's (a list item): `n` is where errors point.
  bool checkAddress(const YAML::Node& n, const std::string& text, const std::string& path,
                    Address& out, bool allow_port0);

  // Calls fn(item, "P[i]") for each item of a sequence; an empty value has no items, any
  // other non-sequence is an error.
  template <class Fn>
  void walkList(const Entry& e, Fn fn) {
    if (e.value.IsNull()) {
      return;
    }
    if (!e.value.IsSequence()) {
      error(valueMark(e), "'" + e.path + "' must be a list");
      return;
    }
    for (size_t i = 0; i < e.value.size(); ++i) {
      fn(e.value[i], e.path + "[" + std::to_string(i) + "]");
    }
  }

 private:
  bool scalar(const Entry& e, std::string& out, std::string_view what);

  std::vector<Diagnostic>& errors_;
  std::string document_;
  std::string file_;
};

}  // namespace gw::config
