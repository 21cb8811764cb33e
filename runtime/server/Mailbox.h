//===- Mailbox.h - items from any thread to one coroutine -------*- C++ -*-===//
//
// The engine's output thread hands a request's events to the coroutine that
// answers it. put() may be called from any thread; take() is awaited on the
// mailbox's executor (the connection's strand) and returns whatever has
// arrived, waiting when nothing has.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SERVER_MAILBOX_H
#define LLMC_RUNTIME_SERVER_MAILBOX_H

#include "runtime/server/Asio.h"

#include <memory>
#include <mutex>
#include <vector>

namespace llmc::runtime::server {

/// Held by shared_ptr: a put() may still be on its way when the coroutine
/// has gone.
template <typename T> class Mailbox : public std::enable_shared_from_this<Mailbox<T>> {
public:
  explicit Mailbox(asio::any_io_executor executor)
      : wakeup(executor, asio::steady_timer::time_point::max()) {}

  void put(T item) {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mutex);
      items.push_back(std::move(item));
      // One wake-up per batch: take() clears the flag when it empties the box.
      wake = !wakePosted;
      wakePosted = true;
    }
    if (wake)
      asio::post(wakeup.get_executor(), [self = this->shared_from_this()] { self->wakeup.cancel(); });
  }

  /// Everything put so far; waits until there is something.
  Task<std::vector<T>> take() {
    for (;;) {
      std::vector<T> taken;
      {
        std::lock_guard<std::mutex> lock(mutex);
        wakePosted = wakePosted && items.empty();
        taken.swap(items);
      }
      if (!taken.empty()) co_return taken;
      // A put() after the check above posts its cancel behind this wait
      // (the strand runs it once this coroutine is suspended), so no wake-up
      // is lost; a stale one only makes the loop look again.
      wakeup.expires_at(asio::steady_timer::time_point::max());
      boost::system::error_code ignored;
      co_await wakeup.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
  }

private:
  std::mutex mutex;
  std::vector<T> items;
  bool wakePosted = false;
  asio::steady_timer wakeup;
};

} // namespace llmc::runtime::server

#endif // LLMC_RUNTIME_SERVER_MAILBOX_H
