// libFuzzer target: pins/ — the canonical form and hash of a tools/list item an upstream
// sends (canonicalJson, hashTool) and the store file's reader (Store::parse), all fed text an
// upstream or a shared volume controls. Must never crash; checks that an accepted text's
// canonical form is valid UTF-8 and its own canonical form (idempotent), that a hashed tool
// hashes the same from its canonical form, that a store observing it serializes to a text
// that parses back the same, and that merging a store with a copy of itself changes nothing.

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "gateway/pins/pins.h"

namespace {

namespace pins = gw::pins;

void check(bool ok) {
  if (!ok) {
    std::abort();
  }
}

bool isHex64(std::string_view s) {
  if (s.size() != 64) {
    return false;
  }
  for (const char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return true;
}

void canonical(std::string_view text) {
  std::string out;
  std::string error;
  if (!pins::canonicalJson(text, out, error)) {
    check(!error.empty());
    return;
  }
  // Valid UTF-8, and its own canonical form. (Not checked with simdjson's DOM: it refuses
  // integers beyond 64 bits, which JSON allows and the canonical form keeps as written.)
  check(simdjson::validate_utf8(out.data(), out.size()));
  std::string again;
  check(pins::canonicalJson(out, again, error));
  check(again == out);
}

void tool(std::string_view text) {
  pins::Definition def;
  std::string error;
  std::string name;
  if (!pins::hashTool(text, def, error, &name)) {
    check(!error.empty());
    return;
  }
  check(isHex64(def.sha256));
  check(!def.fields[0].empty());
  for (const std::string& f : def.fields) {
    check(f.empty() || isHex64(f));
  }
  check(pins::changedFields(def, def).empty());
  // The canonical text of the item is the same definition.
  std::string canon;
  check(pins::canonicalJson(text, canon, error));
  pins::Definition same;
  std::string same_name;
  check(pins::hashTool(canon, same, error, &same_name));
  check(same == def && same_name == name);

  // Recorded, then a change of it, then approved: the file reads back as the store.
  pins::Store store;
  check(store.observe("up", name, def, false, "2026-01-01T00:00:00Z") == pins::Seen::kRecorded);
  check(!store.wouldChange("up", name, def));
  pins::Definition other = def;
  other.sha256.assign(64, 'a');
  other.fields[1].assign(64, 'b');
  check(store.observe("up", name, other, false, "2026-01-02T00:00:00Z") == pins::Seen::kChanged);
  check(store.blocked("up", name));
  check(store.observe("new", name, def, true, "2026-01-03T00:00:00Z") == pins::Seen::kNewPending);
  const std::string text_out = store.serialize();
  if (!simdjson::validate_utf8(text_out.data(), text_out.size())) {
    return;  // a name that is not UTF-8: save() refuses it
  }
  pins::Store back;
  check(pins::Store::parse(text_out, back, error));
  check(back.serialize() == text_out);
  pins::Store copy = back;
  check(!back.merge(copy));
  pins::Store approved = back;
  check(approved.approveAll("2026-01-04T00:00:00Z") == 2);
  check(back.merge(approved));
  check(back.pendingCount() == 0);
  check(back.serialize() == approved.serialize());
}

void storeFile(std::string_view text) {
  pins::Store store;
  std::string error;
  if (!pins::Store::parse(text, store, error)) {
    check(!error.empty());
    return;
  }
  const std::string out = store.serialize();
  pins::Store back;
  check(pins::Store::parse(out, back, error));
  check(back.serialize() == out);
  pins::Store copy = back;
  check(!back.merge(copy));
  pins::Store empty;
  empty.merge(back);
  check(empty.serialize() == out);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  canonical(text);
  tool(text);
  storeFile(text);
  return 0;
}
