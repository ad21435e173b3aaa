// policy/: the `tool_pinning` section of a policy file (see loader_internal.h): the mode,
// the pins store path (relative to the policy file) and what happens to tools not yet
// pinned. The pins themselves, and the pin book that applies them at run time, are pins/.

#include <filesystem>

#include "gateway/policy/loader_internal.h"

namespace gw::policy {

namespace {

using config::Entry;
using config::find;

namespace fs = std::filesystem;

constexpr std::string_view kPinningKeys[] = {"mode", "store", "new_tools"};
constexpr std::string_view kPinningModes[] = {"off", "log", "block"};  // ToolPinning::Mode

}  // namespace

void Loader::walkPinning(const Entry& pe) {
  ToolPinning t;
  t.file = file();
  t.line = pe.key_node.Mark().line + 1;
  bool ok = true;
  const Entry* store = nullptr;  // points into `es`
  const std::vector<Entry> es = entries(pe.value, pe.key_node.Mark(), kPinningKeys, pe.path);
  for (const Entry& e : es) {
    if (e.key == "mode") {
      size_t i = 0;
      ok = readChoice(e, kPinningModes, i) && ok;
      t.mode = static_cast<ToolPinning::Mode>(i);
    } else if (e.key == "store") {
      store = &e;
    } else if (e.key == "new_tools") {
      bool allow = true;
      ok = readChoice(e, "allow", "block", allow) && ok;
      t.block_new = !allow;
    }
  }
  if (store != nullptr) {
    std::string rel;
    if (!readNonEmptyString(*store, rel)) {
      return;
    }
    fs::path p(rel);
    if (p.is_relative()) {
      p = base_dir_ / p;
    }
    t.store = p.lexically_normal().string();
    if (t.store.ends_with('/')) {
      error(valueMark(*store), "'" + store->path + "' must name a file, not a directory");
      ok = false;
    }
  } else if (t.mode != ToolPinning::Mode::kOff) {
    error(pe.key_node.Mark(), "'" + pe.path + "' needs 'store' (the pins file) unless mode: off");
    ok = false;
  }
  if (ok) {
    set_->pinning_ = std::move(t);
  }
}

}  // namespace gw::policy
