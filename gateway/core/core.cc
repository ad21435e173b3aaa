// gw_core is mostly headers; this unit keeps the library a real archive.
#include "gateway/core/ascii.h"
#include "gateway/core/clock.h"
#include "gateway/core/error.h"
