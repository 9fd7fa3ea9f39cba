// Asynchronous events (ibv_get_async_event / ibv_ack_async_event): a queue
// per context, made pollable through the context's async_fd (one byte per
// queued event). See device/README.md, "Completion queues and events".
#pragma once

#include "device/objects.hpp"

namespace rdmasim::device {

// Queues an event on a context. Any thread; never blocks on the program.
void raise_async_event(Context& ctx, const ibv_async_event& event) noexcept;

// ibv_get_async_event(3): 0, or -1 with errno (EAGAIN when non-blocking and empty).
int get_async_event(ibv_context* context, ibv_async_event* event) noexcept;
// ibv_ack_async_event(3): counts the event in its object's events_completed.
void ack_async_event(ibv_async_event* event) noexcept;

} // namespace rdmasim::device
