// Cost of visibility: filter (issue #16): one tools/list answer of 400 tools filtered for a
// caller under a policy of 50 rules (name globs, groups, claims, unless, a param condition),
// against relaying it untouched. Prints the median and p90 over many runs, in microseconds.
// Built as bench-visibility (bench/run.sh runs it); not a test.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "gateway/federation/federation.h"
#include "gateway/policy/policy.h"

using Clock = std::chrono::steady_clock;

int main() {
  std::string yaml = "default: allow\nrules:\n";
  for (int i = 0; i < 50; ++i) {
    const std::string n = std::to_string(i);
    switch (i % 5) {
      case 0:
        yaml += "  - name: r" + n + "\n    match: { method: tools/call, name: \"tool_" + n +
                "_*\" }\n    unless: { groups: [admins] }\n    action: deny\n";
        break;
      case 1:
        yaml += "  - name: r" + n + "\n    match: { method: tools/call, name: \"*_" + n +
                "\", claims: { plan: \"free*\" } }\n    action: deny\n";
        break;
      case 2:
        yaml += "  - name: r" + n + "\n    match: { method: tools/call, name: \"tool_" + n +
                "*\", params: { Region: \"eu-*\" } }\n    action: deny\n";
        break;
      case 3:
        yaml += "  - name: r" + n + "\n    match: { method: prompts/get, name: \"p" + n +
                "\" }\n    action: deny\n";
        break;
      default:
        yaml += "  - name: r" + n + "\n    match: { subject: \"svc-" + n +
                "\", name: \"tool_*\" }\n    action: deny\n";
    }
  }
  std::vector<gw::settings::Diagnostic> errors;
  auto policy = gw::policy::PolicySet::loadString(yaml, "/tmp/bench-policy.yaml", errors);
  if (!policy) {
    std::fprintf(stderr, "policy did not load: %s\n",
                 errors.empty() ? "" : errors[0].str().c_str());
    return 1;
  }
  std::string answer = R"({"jsonrpc":"2.0","id":1,"result":{"tools":[)";
  for (int i = 0; i < 400; ++i) {
    if (i > 0) {
      answer += ',';
    }
    answer +=
        R"({"name":"tool_)" + std::to_string(i) + "_" + std::to_string(i % 50) +
        R"(","description":"A tool that does thing number )" + std::to_string(i) +
        R"( for the benchmark, described in about eighty bytes.","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}})";
  }
  answer += R"(],"resultType":"complete","ttlMs":0,"cacheScope":"public"}})";

  gw::policy::Identity id;
  id.authenticated = true;
  id.subject = "alice";
  id.groups = {"dev"};
  id.claims = {{"plan", "free-tier"}};

  constexpr int kRuns = 2000;
  std::vector<double> us;
  us.reserve(kRuns);
  std::string out;
  size_t hidden = 0;
  for (int r = 0; r < kRuns; ++r) {
    const auto t0 = Clock::now();
    gw::federation::filterListAnswer(
        gw::federation::ListKind::kTools, answer,
        [&](std::string_view key) { return policy->mayUse("tools/call", key, id); }, out, hidden);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  std::printf(
      "visibility filter: %zu bytes, 400 tools, 50 rules, %zu hidden: p50 %.1f us, "
      "p90 %.1f us (budget 500 us)\n",
      answer.size(), hidden, us[kRuns / 2], us[kRuns * 9 / 10]);
  return 0;
}
