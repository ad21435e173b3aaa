// pins/: what one observed tools/list answer means (report.h).

#include "gateway/pins/report.h"

#include "gateway/core/json_escape.h"

namespace gw::pins {

namespace {

// As JSON string contents: tool names come from upstreams and are written so wherever they
// appear (no control character reaches a terminal); upstream names, the configuration's, only
// in JSON.
std::string escaped(std::string_view s) {
  std::string out;
  core::appendJsonEscaped(out, s, {.escape_del = true, .replace_invalid_utf8 = true});
  return out;
}

void appendPendingItem(std::string& log, std::string_view upstream, const Book::Finding& f) {
  log += log.empty() ? "{" : ",{";
  log += "\"upstream\":\"" + escaped(upstream) + "\",\"tool\":\"" + escaped(f.tool) +
         "\",\"change\":\"" + (f.is_new ? "new" : "changed") + "\"";
  if (!f.is_new) {
    log += ",\"fields\":[";
    for (size_t i = 0; i < f.fields.size(); ++i) {
      log += (i == 0 ? "\"" : ",\"") + std::string(f.fields[i]) + "\"";
    }
    log += ']';
  }
  log += '}';
}

std::string changeWarning(std::string_view upstream, const Book::Finding& f, bool blocks) {
  const std::string effect =
      blocks ? "hidden and its calls refused until approved" : "not blocked (mode: log)";
  if (f.is_new) {
    return "tool pinning: upstream '" + std::string(upstream) + "' lists a new tool \"" +
           escaped(f.tool) + "\"; " + effect + " (mcp-gateway pins approve)";
  }
  std::string fields;
  for (std::string_view name : f.fields) {
    fields += fields.empty() ? "" : ",";
    fields += name;
  }
  return "tool pinning: upstream '" + std::string(upstream) +
         "' changed the definition of tool \"" + escaped(f.tool) + "\" (" + fields + "); " +
         effect + " (mcp-gateway pins approve)";
}

}  // namespace

Report report(std::string_view upstream, const Book::Observed& seen, bool blocks) {
  Report r;
  for (const Book::Finding& f : seen.pending) {
    appendPendingItem(r.pending_log, upstream, f);
    if (!f.fresh) {
      continue;  // counted and warned of when this definition was first seen
    }
    r.changes.push_back(f.is_new ? "new" : "changed");
    r.warnings.push_back(changeWarning(upstream, f, blocks));
  }
  for (const std::string& why : seen.invalid) {
    r.warnings.push_back("tool pinning: upstream '" + std::string(upstream) +
                         "' listed a tool that cannot be pinned: " + why +
                         (blocks ? " (hidden and its calls refused)" : ""));
  }
  if (!seen.save_error.empty()) {
    r.error = "tool pinning: " + seen.save_error +
              " (the pins are kept in memory and written with the next change)";
  }
  return r;
}

}  // namespace gw::pins
