#pragma once
// core/: the building blocks every module uses, with no libevent and no sockets — errors as
// values, GW_ASSERT, RFC 9110 ASCII classes, CIDR ranges, the `*` glob matcher, the
// injectable clock, the table of request outcomes and the per-second log-line budget.
// Errors as values. `Error` carries a short human message; `Result<T>` is the
// std::expected alias used outside the pure parsers (the pure parsers return small status
// structs so they also build with clang 14 for fuzzing, whose library lacks <expected>).

#include <string>
#include <utility>

#if defined(__cpp_lib_expected) || \
    (defined(__has_include) && __has_include(<expected>) && !defined(__clang__))
#include <expected>
#define GW_HAVE_EXPECTED 1
#endif

namespace gw::core {

struct Error {
  std::string message;
};

#ifdef GW_HAVE_EXPECTED
template <class T>
using Result = std::expected<T, Error>;

inline std::unexpected<Error> fail(std::string message) {
  return std::unexpected<Error>(Error{std::move(message)});
}
#endif

}  // namespace gw::core
