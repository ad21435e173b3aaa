#pragma once
// GW_ASSERT(cond): an invariant of the code (never of the input). Debug builds (no NDEBUG)
// print the condition, file and line and abort; release builds compile it away, so it may
// sit on the hot path. Bad input gets an error answer, never an assertion.

#include <cstdio>
#include <cstdlib>

#ifdef NDEBUG
#define GW_ASSERT(cond) static_cast<void>(0)
#else
#define GW_ASSERT(cond)                                                                        \
  ((cond) ? static_cast<void>(0)                                                               \
          : (std::fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #cond), \
             std::abort()))
#endif
