// settings/: the top-level `tls:` block — the client port serves HTTPS only. The files are
// read and the SSL_CTX is built here, at load (tls::buildServerContext), so a missing or
// unreadable file, a key that does not match its certificate or a client_ca without a
// certificate is a load error at the key that names the file, and a reload with such a
// pair keeps the running configuration (and its certificate).

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#include "gateway/settings/loader.h"
#include "gateway/tls/server_context.h"

namespace gw::settings {

namespace {

constexpr std::string_view kTlsKeys[] = {"cert", "key", "client_ca", "min_version"};
constexpr std::string_view kMinVersions[] = {"1.2", "1.3"};

}  // namespace

void Loader::walkTls(const Entry& te, Settings& s) {
  const size_t errors_before = errorCount();
  ListenTls t;
  const Entry* cert_e = nullptr;
  const Entry* key_e = nullptr;
  const Entry* ca_e = nullptr;
  std::vector<Entry> tls_entries = entries(te.value, te.key_node.Mark(), kTlsKeys, te.path);
  for (const Entry& e : tls_entries) {
    std::string path;
    if (e.key == "min_version") {
      readEnum(e, kMinVersions, t.min_version);
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
  tls::ServerConfig cfg{t.cert, t.key, t.client_ca,
                        t.min_version == "1.3" ? tls::MinVersion::kTls13 : tls::MinVersion::kTls12};
  tls::BuildResult built = tls::buildServerContext(cfg);
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
  s.tls = std::move(t);
}

}  // namespace gw::settings
