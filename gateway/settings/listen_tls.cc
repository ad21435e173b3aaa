// settings/: the top-level `tls:` block — the client port serves HTTPS only. The files are
// read and the SSL_CTX is built here, at load (tls::buildServerContext), so a missing or
// unreadable file, a key that does not match its certificate or a client_ca without a
// certificate is a load error at the key that names the file, and a reload with such a
// pair keeps the running configuration (and its certificate).

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#include "gateway/settings/loader.h"
#include "gateway/tls/server_context.h"

namespace gw::settings {

namespace {

constexpr std::string_view kTlsKeys[] = {"cert", "key", "client_ca", "min_version", "certificates"};
constexpr std::string_view kCertificateKeys[] = {"hosts", "cert", "key"};
constexpr std::string_view kMinVersions[] = {"1.2", "1.3"};

}  // namespace

void Loader::walkTls(const Entry& te, Settings& s) {
  walkTls(te, s.tls);
}

void Loader::walkTls(const Entry& te, std::optional<ListenTls>& out) {
  const size_t errors_before = errorCount();
  ListenTls t;
  const Entry* cert_e = nullptr;
  const Entry* key_e = nullptr;
  const Entry* ca_e = nullptr;
  std::vector<Entry> tls_entries = entries(te.value, te.key_node.Mark(), kTlsKeys, te.path);
  std::vector<const Entry*> sni_cert_entries;
  std::vector<const Entry*> sni_key_entries;
  std::vector<YAML::Node> sni_items;
  for (const Entry& e : tls_entries) {
    std::string path;
    if (e.key == "min_version") {
      readEnum(e, kMinVersions, t.min_version);
      continue;
    }
    if (e.key == "certificates") {
      walkTlsCertificates(e, t, sni_cert_entries, sni_key_entries, sni_items);
      continue;
    }
    if (!readNonEmptyString(e, path)) {
      continue;
    }
    if (e.key == "cert") {
      t.cert = resolve(path);
      cert_e = &e;
    } else if (e.key == "key") {
      t.key = resolve(path);
      key_e = &e;
    } else if (e.key == "client_ca") {
      t.client_ca = resolve(path);
      ca_e = &e;
    }
  }
  if (errorCount() != errors_before) {
    return;
  }
  if (cert_e == nullptr || key_e == nullptr) {
    error(te.key_node.Mark(), "'tls' needs both 'cert' and 'key' (PEM files)");
    return;
  }
  if (hermeticLoad()) {
    error(valueMark(*cert_e), "TLS files not looked at (hermetic test load)");
    return;
  }
  tls::ServerConfig cfg{t.cert,
                        t.key,
                        t.client_ca,
                        t.min_version == "1.3" ? tls::MinVersion::kTls13 : tls::MinVersion::kTls12,
                        {}};
  for (const ListenTls::Certificate& c : t.certificates) {
    cfg.certificates.push_back(tls::SniCertificate{c.hosts, c.cert, c.key});
  }
  tls::BuildResult built = tls::buildServerContext(cfg);
  if (!built.context && built.certificate >= 0 &&
      static_cast<size_t>(built.certificate) < sni_items.size()) {
    const auto i = static_cast<size_t>(built.certificate);
    const bool key = built.field == tls::Field::kKey;
    const Entry* at = key ? sni_key_entries[i] : sni_cert_entries[i];
    error(at != nullptr ? valueMark(*at) : sni_items[i].Mark(),
          "'" + te.path + ".certificates[" + std::to_string(i) + "]." + (key ? "key" : "cert") +
              "': " + built.error);
    return;
  }
  if (!built.context) {
    const Entry* at = built.field == tls::Field::kKey        ? key_e
                      : built.field == tls::Field::kClientCa ? ca_e
                                                             : cert_e;
    const char* key = built.field == tls::Field::kKey        ? "tls.key"
                      : built.field == tls::Field::kClientCa ? "tls.client_ca"
                                                             : "tls.cert";
    error(valueMark(at != nullptr ? *at : *cert_e), "'" + std::string(key) + "': " + built.error);
    return;
  }
  t.context = std::move(built.context);
  out = std::move(t);
}

// tls.certificates: [{hosts, cert, key}] — each entry's hosts (DNS names or "*." wildcards,
// none named by two entries), its certificate and key files.
void Loader::walkTlsCertificates(const Entry& ce, ListenTls& t,
                                 std::vector<const Entry*>& cert_entries,
                                 std::vector<const Entry*>& key_entries,
                                 std::vector<YAML::Node>& items) {
  if (!ce.value.IsSequence() || ce.value.size() == 0) {
    error(valueMark(ce), "'" + ce.path + "' must be a list of {hosts, cert, key}");
    return;
  }
  // The entries' storage must outlive the pointers handed back: kept in the loader.
  for (size_t i = 0; i < ce.value.size(); ++i) {
    const YAML::Node& node = ce.value[i];
    const std::string path = ce.path + "[" + std::to_string(i) + "]";
    tls_entry_store_.push_back(entries(node, ce.key_node.Mark(), kCertificateKeys, path));
    const std::vector<Entry>& es = tls_entry_store_.back();
    if (!node.IsMap()) {
      continue;
    }
    ListenTls::Certificate c;
    const Entry* hosts = find(es, "hosts");
    const Entry* cert = find(es, "cert");
    const Entry* key = find(es, "key");
    if (hosts == nullptr || cert == nullptr || key == nullptr) {
      error(node.Mark(), "'" + path + "' needs 'hosts', 'cert' and 'key'");
      continue;
    }
    readServerHosts(*hosts, c.hosts);
    for (const std::string& h : c.hosts) {
      for (const ListenTls::Certificate& other : t.certificates) {
        if (std::find(other.hosts.begin(), other.hosts.end(), h) != other.hosts.end()) {
          error(valueMark(*hosts),
                "'" + hosts->path + "': host " + h + " is already another certificate's");
        }
      }
    }
    std::string text;
    if (readNonEmptyString(*cert, text)) {
      c.cert = resolve(text);
    }
    if (readNonEmptyString(*key, text)) {
      c.key = resolve(text);
    }
    t.certificates.push_back(std::move(c));
    cert_entries.push_back(cert);
    key_entries.push_back(key);
    items.push_back(node);
  }
}

namespace {
constexpr std::string_view kListenerKeys[] = {"address", "tls", "servers"};
}  // namespace

// `listeners:` — each an address, optional TLS and the servers it serves. The first is what
// `listen` (and `tls`) would be; the servers named are checked once `servers` is walked.
void Loader::walkListeners(const Entry& le, const std::vector<Entry>& top, Settings& s) {
  for (std::string_view key : {"listen", "tls"}) {
    if (const Entry* e = find(top, key)) {
      error(e->key_node.Mark(), "top-level '" + std::string(key) +
                                    "' cannot be used with 'listeners' (line " +
                                    std::to_string(le.key_node.Mark().line + 1) +
                                    "): give each listener its 'address' and 'tls'");
    }
  }
  if (!le.value.IsSequence() || le.value.size() == 0) {
    error(valueMark(le), "'listeners' must be a list of at least one listener");
    return;
  }
  if (le.value.size() > kMaxListeners) {
    error(valueMark(le), "'listeners' may list at most " + std::to_string(kMaxListeners));
    return;
  }
  for (size_t i = 0; i < le.value.size(); ++i) {
    const YAML::Node& node = le.value[i];
    const std::string path = "listeners[" + std::to_string(i) + "]";
    std::vector<Entry> es = entries(node, le.key_node.Mark(), kListenerKeys, path);
    if (!node.IsMap()) {
      continue;
    }
    Listener l;
    const Entry* address = find(es, "address");
    if (address == nullptr) {
      error(node.Mark(), "'" + path + "' has no 'address'");
    } else if (readAddress(*address, l.address, true)) {
      for (const Listener& other : s.listeners) {
        if (other.address.ip == l.address.ip && other.address.port == l.address.port &&
            l.address.port != 0) {
          error(valueMark(*address),
                "'" + address->path + "' " + l.address.text + " is already a listener's address");
        }
      }
    }
    for (const Entry& e : es) {
      if (e.key == "tls") {
        walkTls(e, l.tls);
      } else if (e.key == "servers") {
        std::vector<YAML::Node> nodes;
        if (readStringList(e, l.servers, &nodes, true)) {
          listener_server_marks_.push_back(std::move(nodes));
        } else {
          listener_server_marks_.emplace_back();
        }
      }
    }
    if (find(es, "servers") == nullptr) {
      listener_server_marks_.emplace_back();
    }
    s.listeners.push_back(std::move(l));
  }
  if (!s.listeners.empty()) {
    s.listen = s.listeners.front().address;
    s.tls = s.listeners.front().tls;
  }
}

// Each server a listener names exists; each server's listener_mask says where it is served.
void Loader::checkListenerServers(Settings& s) {
  std::vector<std::string_view> names;
  if (s.servers.empty()) {
    names.push_back(s.server_name);
  }
  for (const auto& v : s.servers) {
    names.push_back(v->server_name);
  }
  for (size_t i = 0; i < s.listeners.size() && i < listener_server_marks_.size(); ++i) {
    const Listener& l = s.listeners[i];
    for (size_t k = 0; k < l.servers.size() && k < listener_server_marks_[i].size(); ++k) {
      if (std::find(names.begin(), names.end(), l.servers[k]) == names.end()) {
        std::string msg =
            "listener " + l.address.text + " names unknown server '" + l.servers[k] + "'";
        config::appendDidYouMean(msg, l.servers[k], names);
        error(listener_server_marks_[i][k].Mark(), std::move(msg));
      }
    }
  }
  auto maskOf = [&](std::string_view name) {
    uint64_t mask = 0;
    for (size_t i = 0; i < s.listeners.size(); ++i) {
      const auto& list = s.listeners[i].servers;
      if (list.empty() || std::find(list.begin(), list.end(), name) != list.end()) {
        mask |= uint64_t{1} << i;
      }
    }
    return mask;
  };
  if (s.listeners.empty()) {
    return;
  }
  s.listener_mask = maskOf(s.server_name);
  for (auto& v : s.servers) {
    auto copy = std::make_shared<Settings>(*v);
    copy->listener_mask = maskOf(copy->server_name);
    copy->listeners = s.listeners;
    v = std::move(copy);
  }
}

}  // namespace gw::settings
