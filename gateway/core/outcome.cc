#include "gateway/core/outcome.h"

#include <array>

#include "gateway/core/assert.h"

namespace gw::core {

namespace {

constexpr std::array kOutcomes = {
#define GW_OUTCOME_INFO(id, name, status) OutcomeInfo{name, status},
    GW_OUTCOMES(GW_OUTCOME_INFO)
#undef GW_OUTCOME_INFO
};

}  // namespace

const OutcomeInfo& outcomeInfo(Outcome o) noexcept {
  const auto i = static_cast<size_t>(o);
  GW_ASSERT(i < kOutcomes.size());
  return kOutcomes[i < kOutcomes.size() ? i : kOutcomes.size() - 1];
}

Outcome outcomeFromName(std::string_view name) noexcept {
  for (size_t i = 0; i < kOutcomes.size(); ++i) {
    if (kOutcomes[i].name == name) {
      return static_cast<Outcome>(i);
    }
  }
  GW_ASSERT(!"undeclared outcome name");
  return Outcome::kOther;
}

size_t outcomeCount() noexcept {
  return kOutcomes.size();
}

}  // namespace gw::core
