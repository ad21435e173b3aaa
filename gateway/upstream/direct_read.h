#pragma once
// Socket reads for the proxy's bufferevents without libevent's read path. libevent's
// evbuffer_read asks ioctl(FIONREAD) before every read and reads at most 4096 bytes; this one
// reads up to 16 KiB straight into the input buffer (one syscall per read), then behaves like
// libevent's read callback: the read callback when the low watermark is reached, the event
// callback with BEV_EVENT_READING|BEV_EVENT_EOF or |BEV_EVENT_ERROR (reading disabled) at the
// end. bufferevent_enable/disable(EV_READ) and the watermarks work as before.

#include <event2/bufferevent.h>

namespace gw::upstream {

// Installs the direct read on a socket bufferevent whose read event is not pending (right
// after bufferevent_socket_new or bufferevent_socket_connect). False (libevent's own read path
// stays) when it cannot.
bool useDirectReads(bufferevent* bev) noexcept;

}  // namespace gw::upstream
