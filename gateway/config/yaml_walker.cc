// config/: the YAML walker both loaders build on (see yaml_walker.h). yaml-cpp's exceptions
// are caught in walk() and turned into diagnostics.

#include "gateway/config/yaml_walker.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <exception>
#include <filesystem>
#include <limits>
#include <optional>

#include "gateway/config/values.h"
#include "gateway/core/ascii.h"

namespace gw::config {

namespace {

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

bool contains(Keys keys, std::string_view k) {
  return std::find(keys.begin(), keys.end(), k) != keys.end();
}

std::string joinKeys(Keys keys, std::string_view sep, std::string_view last_sep) {
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i > 0) {
      out += i + 1 == keys.size() ? last_sep : sep;
    }
    out += keys[i];
  }
  return out;
}

std::string line(const YAML::Mark& m) {
  return std::to_string(m.is_null() ? 0 : m.line + 1);
}

}  // namespace

const Entry* find(const std::vector<Entry>& entries, std::string_view key) {
  for (const Entry& e : entries) {
    if (e.key == key) {
      return &e;
    }
  }
  return nullptr;
}

bool appendDidYouMean(std::string& msg, std::string_view word, Keys candidates) {
  std::string_view best;
  size_t best_d = 3;
  for (std::string_view cand : candidates) {
    size_t d = editDistance(word, cand);
    if (d < best_d && d < word.size()) {
      best = cand;
      best_d = d;
    }
  }
  if (best.empty()) {
    return false;
  }
  msg += "; did you mean '" + std::string(best) + "'?";
  return true;
}

Walker::Walker(std::vector<Diagnostic>& out, std::string document)
    : errors_(out), document_(std::move(document)) {}

void Walker::walk(std::string_view yaml, const std::function<void(const YAML::Node&)>& fn) {
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    if (!root.IsNull()) {
      fn(root);
    }
  } catch (const YAML::Exception& e) {
    error(e.mark, e.msg);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    errors_.push_back(Diagnostic{file_, 0, 0, std::string("internal error: ") + e.what()});
  } catch (...) {
    errors_.push_back(Diagnostic{file_, 0, 0, "internal error"});
  }
}

void Walker::error(const YAML::Mark& m, std::string message) {
  Diagnostic d;
  d.file = file_;
  if (!m.is_null()) {
    d.line = m.line + 1;
    d.column = m.column + 1;
  }
  d.message = std::move(message);
  errors_.push_back(std::move(d));
}

YAML::Mark Walker::valueMark(const Entry& e) {
  if (e.value.IsNull() || e.value.Mark().is_null()) {
    return e.key_node.Mark();
  }
  return e.value.Mark();
}

std::vector<Entry> Walker::entries(const YAML::Node& node, const YAML::Mark& where, Keys allowed,
                                   const std::string& prefix) {
  std::vector<Entry> out;
  if (!node.IsMap()) {
    error(
        node.IsNull() || node.Mark().is_null() ? where : node.Mark(),
        (prefix.empty() ? document_ : "'" + prefix + "'") + " must be a mapping of keys to values");
    return out;
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    // `*it` by value: yaml-cpp 0.7's operator-> points into a temporary (ASan:
    // stack-use-after-scope).
    const YAML::detail::iterator_value kv = *it;
    const YAML::Node k = kv.first;
    if (!k.IsScalar()) {
      error(k.Mark(), "keys must be plain strings");
      continue;
    }
    const std::string& key = k.Scalar();
    std::string path = prefix.empty() ? key : prefix + "." + key;
    if (!contains(allowed, key)) {
      std::string msg = "unknown key '" + path + "'";
      if (!appendDidYouMean(msg, key, allowed)) {
        msg += " (expected one of: " + joinKeys(allowed, ", ", ", ") + ")";
      }
      error(k.Mark(), std::move(msg));
      continue;
    }
    if (const Entry* first = find(out, key)) {
      error(k.Mark(),
            "duplicate key '" + path + "' (first at line " + line(first->key_node.Mark()) + ")");
      continue;
    }
    out.push_back(Entry{key, std::move(path), k, kv.second});
  }
  return out;
}

bool Walker::scalar(const Entry& e, std::string& out, std::string_view what) {
  if (!e.value.IsScalar()) {
    error(valueMark(e), "'" + e.path + "' must be " + std::string(what));
    return false;
  }
  out = e.value.Scalar();
  return true;
}

bool Walker::readString(const Entry& e, std::string& out) {
  return scalar(e, out, "a string");
}

namespace fs = std::filesystem;

bool Walker::readTrimmedFile(const Entry& e, const std::string& abs, const std::string& what,
                             std::string& out) {
  std::error_code ec;
  const fs::file_status st = fs::status(abs, ec);
  if (ec || !fs::exists(st)) {
    error(valueMark(e), what + " does not exist (looked for " + abs + ")");
    return false;
  }
  if (!fs::is_regular_file(st)) {
    error(valueMark(e), what + " is not a regular file (" + abs + ")");
    return false;
  }
  std::string reason;
  if (!readWholeFile(abs, out, reason)) {
    error(valueMark(e), what + " cannot be read (" + abs + "): " + reason);
    return false;
  }
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) {
    out.pop_back();
  }
  if (out.empty()) {
    error(valueMark(e), what + " is empty (" + abs + ")");
    return false;
  }
  return true;
}

bool Walker::readSecretFile(const Entry& e, const std::string& abs, const std::string& text,
                            std::string& secret) {
  constexpr size_t kMaxSecretBytes = 4096;
  const std::string what = "'" + e.path + "': file '" + text + "'";
  if (hermeticLoad()) {
    secret = "hermetic";
    return true;  // files not read (hermetic test load)
  }
  if (!readTrimmedFile(e, abs, what, secret)) {
    return false;
  }
  if (secret.size() > kMaxSecretBytes) {
    error(valueMark(e), what + " holds more than " + std::to_string(kMaxSecretBytes) +
                            " bytes; is it the right file? (" + abs + ")");
    return false;
  }
  for (char c : secret) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7f) {
      error(valueMark(e), what + " holds a control character (" + abs + ")");
      return false;
    }
  }
  return true;
}

bool Walker::readNonEmptyString(const Entry& e, std::string& out) {
  std::string v;
  if (!readString(e, v)) {
    return false;
  }
  if (v.empty()) {
    error(valueMark(e), "'" + e.path + "' must not be empty");
    return false;
  }
  out = std::move(v);
  return true;
}

bool Walker::readBool(const Entry& e, bool& out) {
  bool b = false;
  if (!e.value.IsScalar() || !YAML::convert<bool>::decode(e.value, b)) {
    error(valueMark(e), "'" + e.path + "' must be true or false");
    return false;
  }
  out = b;
  return true;
}

bool Walker::readUint(const Entry& e, uint64_t max, uint64_t& out) {
  std::string text;
  if (!scalar(e, text, "a non-negative integer")) {
    return false;
  }
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != text.data() + text.size()) {
    error(valueMark(e), "'" + e.path + "' must be a non-negative integer, not '" + text + "'");
    return false;
  }
  if (ec == std::errc::result_out_of_range || v > max) {
    error(valueMark(e), "'" + e.path + "' is out of range (at most " + std::to_string(max) + ")");
    return false;
  }
  out = v;
  return true;
}

bool Walker::readUint32(const Entry& e, uint32_t& out) {
  uint64_t v = 0;
  if (!readUint(e, std::numeric_limits<uint32_t>::max(), v)) {
    return false;
  }
  out = static_cast<uint32_t>(v);
  return true;
}

bool Walker::readDuration(const Entry& e, Duration& out) {
  std::string text;
  if (!scalar(e, text, "a duration (250ms, 10s, 5m, 1h)")) {
    return false;
  }
  if (!parseDuration(text, out)) {
    std::string msg = "'" + e.path + "': invalid duration '" + text + "'";
    bool digits = !text.empty() && std::all_of(text.begin(), text.end(),
                                               [](char c) { return c >= '0' && c <= '9'; });
    msg += digits ? " (needs a unit: 250ms, 10s, 5m, 1h)" : " (expected e.g. 250ms, 10s, 5m, 1h)";
    error(valueMark(e), std::move(msg));
    return false;
  }
  return true;
}

bool Walker::readSize(const Entry& e, uint64_t& out) {
  std::string text;
  if (!scalar(e, text, "a size (bytes, or with KiB, MiB, GiB, KB, MB, GB)")) {
    return false;
  }
  if (!parseSize(text, out)) {
    error(valueMark(e), "'" + e.path + "': invalid size '" + text +
                            "' (expected e.g. 512, 8KiB, 4MiB, 1GiB, 10KB)");
    return false;
  }
  return true;
}

bool Walker::readEnum(const Entry& e, Keys choices, std::string& out) {
  std::string text;
  if (!readString(e, text)) {
    return false;
  }
  if (!contains(choices, text)) {
    error(valueMark(e), "'" + e.path + "' must be one of " + joinKeys(choices, " | ", " | ") +
                            ", not '" + text + "'");
    return false;
  }
  out = std::move(text);
  return true;
}

bool Walker::readChoice(const Entry& e, Keys choices, size_t& index) {
  std::string v = e.value.IsScalar() ? e.value.Scalar() : std::string();
  auto it = std::find(choices.begin(), choices.end(), v);
  if (!e.value.IsScalar() || it == choices.end()) {
    error(valueMark(e), "'" + e.path + "' must be " + joinKeys(choices, ", ", " or ") +
                            (v.empty() ? "" : ", not '" + v + "'"));
    return false;
  }
  index = static_cast<size_t>(it - choices.begin());
  return true;
}

bool Walker::readChoice(const Entry& e, std::string_view a, std::string_view b, bool& is_a) {
  const std::string_view choices[] = {a, b};
  size_t i = 0;
  if (!readChoice(e, choices, i)) {
    return false;
  }
  is_a = i == 0;
  return true;
}

bool Walker::readStringList(const Entry& e, std::vector<std::string>& out,
                            std::vector<YAML::Node>* nodes, bool non_empty) {
  if (!e.value.IsSequence()) {
    error(valueMark(e), "'" + e.path + "' must be a list");
    return false;
  }
  bool ok = true;
  std::vector<std::string> items;
  size_t i = 0;
  for (const YAML::Node& item : e.value) {
    std::string where = "'" + e.path + "[" + std::to_string(i++) + "]'";
    if (!item.IsScalar()) {
      error(item.Mark(), where + " must be a string");
      ok = false;
    } else if (non_empty && item.Scalar().empty()) {
      error(item.Mark(), where + " must not be empty");
      ok = false;
    } else {
      items.push_back(item.Scalar());
      if (nodes != nullptr) {
        nodes->push_back(item);
      }
    }
  }
  if (ok) {
    out = std::move(items);
  }
  return ok;
}

bool Walker::readNameMap(const Entry& e, const NameRule& rule,
                         std::vector<std::pair<std::string, std::string>>& out,
                         std::vector<YAML::Node>* values) {
  if (!e.value.IsMap()) {
    error(valueMark(e), "'" + e.path + "' must be a mapping of " + rule.mapping);
    return false;
  }
  bool ok = true;
  std::vector<YAML::Mark> marks;  // of each name in `out` from this mapping
  const size_t base = out.size();
  for (auto it = e.value.begin(); it != e.value.end(); ++it) {
    const YAML::detail::iterator_value kv = *it;
    const YAML::Node k = kv.first;
    const YAML::Node v = kv.second;
    if (!k.IsScalar()) {
      error(k.Mark(), "'" + e.path + "': keys must be plain strings");
      ok = false;
      continue;
    }
    const std::string& name = k.Scalar();
    if (std::string why = rule.check(e.path, name); !why.empty()) {
      error(k.Mark(), std::move(why));
      ok = false;
      continue;
    }
    std::optional<size_t> dup;
    for (size_t i = base; i < out.size(); ++i) {
      if (rule.ignore_case ? core::iequals(out[i].first, name) : out[i].first == name) {
        dup = i - base;
        break;
      }
    }
    if (dup) {
      error(k.Mark(), "'" + e.path + "': '" + name + "' is listed twice (first at line " +
                          line(marks[*dup]) + (rule.ignore_case ? "; names ignore case)" : ")"));
      ok = false;
      continue;
    }
    if (!v.IsScalar()) {
      error(v.IsNull() || v.Mark().is_null() ? k.Mark() : v.Mark(),
            "'" + e.path + "." + name + "' must be a string");
      ok = false;
      continue;
    }
    out.emplace_back(name, v.Scalar());
    marks.push_back(k.Mark());
    if (values != nullptr) {
      values->push_back(v);
    }
  }
  return ok;
}

bool Walker::readAddress(const Entry& e, Address& out, bool allow_port0) {
  std::string text;
  if (!scalar(e, text, "an address (host:port)")) {
    return false;
  }
  return checkAddress(e.value, text, e.path, out, allow_port0);
}

bool Walker::checkAddress(const YAML::Node& n, const std::string& text, const std::string& path,
                          Address& out, bool allow_port0) {
  Address a;
  if (!parseAddress(text, a)) {
    error(n.Mark(), "'" + path + "': invalid address '" + text +
                        "' (expected IPv4:port, [IPv6]:port or hostname:port, port 0-65535)");
    return false;
  }
  if (!allow_port0 && a.port == 0) {
    error(n.Mark(), "'" + path + "': port 0 is not a valid destination in '" + text + "'");
    return false;
  }
  if (a.ip.empty()) {
    std::string why = "name resolution is off (hermetic test load)";
    if (hermeticLoad() || !resolveHost(a.host, a.ip, why)) {
      error(n.Mark(), "'" + path + "': cannot resolve '" + a.host + "': " + why);
      return false;
    }
  }
  out = std::move(a);
  return true;
}

}  // namespace gw::config
