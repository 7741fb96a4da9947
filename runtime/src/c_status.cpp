// kiln_c.h's statuses: a code and a message behind a pointer (NULL: ok), made with a context's
// allocator, the heap, or without the heap one of a few slots here; a status that cannot be had
// at all is one of the fixed ones, which keep the code and say the message was lost.
#include "kiln/kiln_c.h"

#include <cstring>
#include <new>
#include <string_view>

#include "c_api.h"
#include "kiln/kiln.h"
#include "message.h"

namespace {

enum class Kind : int32_t { Allocated, Heap, Slot, Fixed };

}  // namespace

struct kiln_status {
  int32_t code;
  Kind kind;
  const char* message;         // NUL-terminated
  kiln_allocator_t allocator;  // Allocated: what frees it
};

namespace {

// one per code, for a status whose message found no memory
#define KILN_FIXED(code, name)                                                          \
  {                                                                                     \
    code, Kind::Fixed, name " (kiln: no memory was left for this status's message)", {} \
  }
kiln_status fixed_statuses[] = {
    KILN_FIXED(KILN_INVALID_ARGUMENT, "INVALID_ARGUMENT"),
    KILN_FIXED(KILN_OUT_OF_RANGE, "OUT_OF_RANGE"),
    KILN_FIXED(KILN_UNSUPPORTED, "UNSUPPORTED"),
    KILN_FIXED(KILN_RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED"),
    KILN_FIXED(KILN_INTERNAL, "INTERNAL"),
};
#undef KILN_FIXED

kiln_status* fixed(int32_t code) {
  for (kiln_status& s : fixed_statuses)
    if (s.code == code) return &s;
  return &fixed_statuses[4];  // a code outside the enum: INTERNAL
}

#if !KILN_HEAP
// Without the heap and without an allocator: a few statuses kept here, their messages cut as a
// no-heap Status cuts them. One thread (no threads without the heap).
struct Slot {
  kiln_status head;  // first: a kiln_status* of a slot is the Slot's address
  bool used;
  char text[kiln::Status::kMessageBytes];
};
constexpr int kSlots = 4;
Slot slots[kSlots];
#endif

}  // namespace

namespace kiln {
inline namespace runtime_v1 {
namespace detail {

kiln_status* make_c_status(const kiln_allocator_t* allocator, int32_t code, std::string_view message) noexcept {
  if (code == KILN_OK) return nullptr;
  const size_t bytes = sizeof(kiln_status) + message.size() + 1;
  kiln_status* s = nullptr;
  Kind kind = Kind::Allocated;
  if (allocator != nullptr && allocator->alloc != nullptr) {
    s = static_cast<kiln_status*>(allocator->alloc(allocator->self, bytes, alignof(kiln_status)));
  } else {
#if KILN_HEAP
    s = static_cast<kiln_status*>(::operator new(bytes, std::nothrow));
    kind = Kind::Heap;
#else
    for (Slot& slot : slots) {
      if (slot.used) continue;
      slot.used = true;
      copy_cut(slot.text, sizeof slot.text, message);
      slot.head = {code, Kind::Slot, slot.text, {}};
      return &slot.head;
    }
#endif
  }
  if (s == nullptr) return fixed(code);
  char* text = reinterpret_cast<char*>(s + 1);
  if (!message.empty()) std::memcpy(text, message.data(), message.size());
  text[message.size()] = '\0';
  return new (s) kiln_status{code, kind, text, kind == Kind::Allocated ? *allocator : kiln_allocator_t{}};
}

kiln_status* to_c(const Status& status, kiln_context* ctx) noexcept {
  if (status.ok()) return nullptr;
  const std::string_view message = status.message();
  return make_c_status(c_allocator(ctx), static_cast<int32_t>(status.code()), message);
}

}  // namespace detail
}  // namespace runtime_v1
}  // namespace kiln

extern "C" {

int32_t kiln_status_code(kiln_status_t status) { return status ? status->code : KILN_OK; }

const char* kiln_status_message(kiln_status_t status) { return status ? status->message : ""; }

void kiln_status_free(kiln_status_t status) {
  if (status == nullptr) return;
  switch (status->kind) {
    case Kind::Allocated: {
      const kiln_allocator_t a = status->allocator;
      a.free(a.self, status);
      return;
    }
    case Kind::Heap:
      ::operator delete(status);
      return;
    case Kind::Slot:
#if !KILN_HEAP
      reinterpret_cast<Slot*>(status)->used = false;
#endif
      return;
    case Kind::Fixed:
      return;
  }
}

const char* kiln_status_name(int32_t code) { return kiln::status_code_name(static_cast<kiln::StatusCode>(code)); }

int32_t kiln_abi_version(void) { return KILN_ABI_VERSION; }

kiln_status_t kiln_abi_check(int32_t abi_version, const char* library) {
  return kiln::detail::to_c(kiln::detail::abi_check(abi_version, library), nullptr);
}

}  // extern "C"
