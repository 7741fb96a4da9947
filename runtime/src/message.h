// The text of a failing call's Status, built in a fixed buffer on the stack: no std::string
// temporaries, so that the error path allocates nothing but the Status's own copy of the text (and
// a no-heap build's, KILN_HEAP 0, nothing at all). Text past the buffer is cut to end "...", as a
// no-heap Status cuts what it is given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "kiln/kiln.h"

namespace kiln {
inline namespace runtime_v1 {
namespace detail {

// Copies src into dst[0, cap) NUL-terminated, cut to end "..." when it does not fit (cap >= 4);
// returns the length written.
inline size_t copy_cut(char* dst, size_t cap, std::string_view src) noexcept {
  if (src.size() < cap) {
    for (size_t i = 0; i < src.size(); ++i) dst[i] = src[i];
    dst[src.size()] = '\0';
    return src.size();
  }
  const size_t keep = cap - 4;
  for (size_t i = 0; i < keep; ++i) dst[i] = src[i];
  dst[keep] = dst[keep + 1] = dst[keep + 2] = '.';
  dst[cap - 1] = '\0';
  return cap - 1;
}

class Message {
 public:
  // A heap build's messages are as long as their names make them (a cut needs names of hundreds of
  // bytes); a no-heap build's are cut where its Status cuts them.
#if KILN_HEAP
  static constexpr size_t kBytes = 1024;
#else
  static constexpr size_t kBytes = Status::kMessageBytes;
#endif

  Message& operator<<(const char* s) noexcept { return *this << std::string_view(s ? s : "(null)"); }
  Message& operator<<(std::string_view s) noexcept {
    for (char c : s) {
      if (size_ == kBytes - 1) return cut();
      text_[size_++] = c;
    }
    return *this;
  }
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0> Message& operator<<(T v) noexcept {
    uint64_t u = static_cast<uint64_t>(v);
    bool negative = false;
    if constexpr (std::is_signed_v<T>) {
      negative = v < 0;
      if (negative) u = 0 - u;  // the magnitude, in unsigned arithmetic where INT64_MIN's is defined
    }
    char digits[24];
    char* p = digits + sizeof digits;
    do {
      *--p = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u != 0);
    if (negative) *--p = '-';
    return *this << std::string_view(p, static_cast<size_t>(digits + sizeof digits - p));
  }

  std::string_view view() const noexcept { return {text_, size_}; }
  Status status(StatusCode code) const noexcept { return Status(code, view()); }

 private:
  Message& cut() noexcept {
    if (!cut_) text_[kBytes - 4] = text_[kBytes - 3] = text_[kBytes - 2] = '.';
    cut_ = true;
    return *this;
  }

  char text_[kBytes];
  size_t size_ = 0;
  bool cut_ = false;
};

}  // namespace detail
}  // namespace runtime_v1
}  // namespace kiln
