#pragma once
// proxy/: what a stage of the exchange that must wait — the JWKS fetch a token's key is
// coming with (keys_wait.h), a Redis-backed rate limit (limit_stage.h), a federation
// ownership refresh — needs from whoever runs it. The stage returns
// filters::FilterStatus::kStop and keeps its own progress; the thing it waits for calls
// resume() later, once, on the worker's loop, unless the stage was cancelled first (the
// client left: the exchange ends 499 and cancels whatever stage is stopped).
//
// resume(kContinue): the wait is over — the runner runs the stopped stage again, and the
// stage takes up where it stopped (a second refusal of a token stands; the next limit is
// checked; the owner is looked up in the refreshed lists).
// resume(kLocalReply): the stage refused the request; ctx.reply says the answer.

#include "gateway/filters/pipeline.h"

namespace gw::proxy {

class StageRunner {
 public:
  virtual void resume(filters::FilterStatus verdict) = 0;

 protected:
  ~StageRunner() = default;
};

}  // namespace gw::proxy
