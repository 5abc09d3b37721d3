// Opaque events as the queue stores them.
//
// The queue never knows what an event is. It holds a pointer, the event's size in bytes (for the
// byte limit) and the EventOwner that keeps the pointed-to memory alive. One owner typically
// backs many events (a whole received request) and frees itself after its last Release().
//
// Thread safety: an Event is a value, used by one thread at a time. EventOwner::Release() may be
// called from any thread, so owners count their references atomically.
#ifndef SHIPPER_QUEUE_EVENT_H_
#define SHIPPER_QUEUE_EVENT_H_

#include <cstdint>
#include <utility>

namespace shipper::queue {

// Keeps the memory of one or more events alive.
class EventOwner {
 public:
  // Called once for every Event that named this owner, when that Event is destroyed.
  virtual void Release() = 0;

 protected:
  ~EventOwner() = default;
};

// A move-only handle on one opaque event.
class Event {
 public:
  Event() = default;
  // REQUIRES: `owner`, if not null, keeps `data` valid until Release() is called for this event.
  Event(const void* data, uint32_t bytes, EventOwner* owner)
      : data_(data), owner_(owner), bytes_(bytes) {}

  Event(Event&& other) noexcept
      : data_(other.data_), owner_(std::exchange(other.owner_, nullptr)), bytes_(other.bytes_) {}
  Event& operator=(Event&& other) noexcept {
    if (this != &other) {
      Reset();
      data_ = other.data_;
      owner_ = std::exchange(other.owner_, nullptr);
      bytes_ = other.bytes_;
    }
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() { Reset(); }

  const void* data() const { return data_; }
  // The producer knows the type it published; the queue never does.
  template <typename T>
  const T& As() const {
    return *static_cast<const T*>(data_);
  }
  uint32_t bytes() const { return bytes_; }

 private:
  void Reset() {
    if (owner_ != nullptr) std::exchange(owner_, nullptr)->Release();
  }

  const void* data_ = nullptr;
  EventOwner* owner_ = nullptr;
  uint32_t bytes_ = 0;
};

}  // namespace shipper::queue

#endif  // SHIPPER_QUEUE_EVENT_H_
