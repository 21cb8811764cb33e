//===- BoundedQueue.h - a blocking queue of fixed capacity ------*- C++ -*-===//
//
// The hand-off between the engine's threads. push() waits while the queue is
// full (backpressure instead of unbounded memory), pop() while it is empty;
// close() wakes everyone: pushes then fail and pops drain what is left.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_ENGINE_BOUNDEDQUEUE_H
#define LLMC_RUNTIME_ENGINE_BOUNDEDQUEUE_H

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>

namespace llmc::runtime {

template <typename T> class BoundedQueue {
public:
  explicit BoundedQueue(size_t capacity) : capacity(capacity ? capacity : 1) {}

  /// Waits for room; false (and `item` dropped) once the queue is closed.
  bool push(T item) {
    std::unique_lock<std::mutex> lock(mutex);
    notFull.wait(lock, [&] { return closed || items.size() < capacity; });
    if (closed) return false;
    items.push_back(std::move(item));
    notEmpty.notify_one();
    return true;
  }

  /// Waits for an item; nothing once the queue is closed and empty.
  std::optional<T> pop() {
    std::unique_lock<std::mutex> lock(mutex);
    notEmpty.wait(lock, [&] { return closed || !items.empty(); });
    return takeFront();
  }

  /// An item if one is there now.
  std::optional<T> tryPop() {
    std::lock_guard<std::mutex> lock(mutex);
    return takeFront();
  }

  void close() {
    std::lock_guard<std::mutex> lock(mutex);
    closed = true;
    notEmpty.notify_all();
    notFull.notify_all();
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex);
    return items.size();
  }

private:
  std::optional<T> takeFront() {
    if (items.empty()) return std::nullopt;
    T item = std::move(items.front());
    items.pop_front();
    notFull.notify_one();
    return item;
  }

  const size_t capacity;
  mutable std::mutex mutex;
  std::condition_variable notEmpty, notFull;
  std::deque<T> items;
  bool closed = false;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_ENGINE_BOUNDEDQUEUE_H
