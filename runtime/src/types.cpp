// The runtime's value types: dtype names and sizes, Status, TensorView.
#include "kiln/kiln.h"

#include <algorithm>
#include <new>

#include "config.h"
#include "message.h"

namespace kiln {
inline namespace runtime_v1 {

static_assert(sizeof(bool) == 1 && sizeof(float16) == 2 && sizeof(bfloat16) == 2 && sizeof(float) == 4 &&
                  sizeof(double) == 8,
              "kiln: element types must have the sizes of their dtypes");

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return "bool";
    case DType::Int8:
      return "i8";
    case DType::Uint8:
      return "u8";
    case DType::Int16:
      return "i16";
    case DType::Uint16:
      return "u16";
    case DType::Int32:
      return "i32";
    case DType::Uint32:
      return "u32";
    case DType::Int64:
      return "i64";
    case DType::Uint64:
      return "u64";
    case DType::Float16:
      return "f16";
    case DType::BFloat16:
      return "bf16";
    case DType::Float32:
      return "f32";
    case DType::Float64:
      return "f64";
  }
  return "unknown";
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Bool:
    case DType::Int8:
    case DType::Uint8:
      return 1;
    case DType::Int16:
    case DType::Uint16:
    case DType::Float16:
    case DType::BFloat16:
      return 2;
    case DType::Int32:
    case DType::Uint32:
    case DType::Float32:
      return 4;
    case DType::Int64:
    case DType::Uint64:
    case DType::Float64:
      return 8;
  }
  return 0;
}

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::Ok:
      return "OK";
    case StatusCode::InvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::OutOfRange:
      return "OUT_OF_RANGE";
    case StatusCode::Unsupported:
      return "UNSUPPORTED";
    case StatusCode::ResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case StatusCode::Internal:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

// ---------------------------------------------------------------- Status

#if KILN_HEAP
// The message lives on the heap so that an ok Status is a code and a null pointer. Running out of
// memory for a message must not turn an error into an exception: the code survives without it.
// (Without exceptions an allocation failure ends the program, as everywhere in such a build.)
template <class... Args> static std::unique_ptr<std::string> new_message(Args&&... args) noexcept {
#if KILN_EXCEPTIONS
  try {
    return std::make_unique<std::string>(std::forward<Args>(args)...);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
#else
  return std::make_unique<std::string>(std::forward<Args>(args)...);
#endif
}

Status::Status(StatusCode code, std::string message) noexcept : code_(code) {
  if (code != StatusCode::Ok && !message.empty()) message_ = new_message(std::move(message));
}

Status::Status(StatusCode code, const char* message) noexcept
    : Status(code, message ? std::string_view(message) : std::string_view()) {}

Status::Status(StatusCode code, std::string_view message) noexcept : code_(code) {
  if (code != StatusCode::Ok && !message.empty()) message_ = new_message(message);
}

Status::Status(const Status& other) noexcept : code_(other.code_) {
  if (other.message_) message_ = new_message(*other.message_);
}

Status& Status::operator=(const Status& other) noexcept {
  if (this == &other) return *this;
  code_ = other.code_;
  message_ = other.message_ ? new_message(*other.message_) : nullptr;
  return *this;
}

Status& Status::operator=(Status&& other) noexcept {
  if (this == &other) return *this;
  code_ = other.code_;
  message_ = std::move(other.message_);
  other.code_ = StatusCode::Ok;
  return *this;
}

const std::string& Status::message() const noexcept {
  static const std::string empty;
  return message_ ? *message_ : empty;
}
#else
// The message is copied in, cut to fit: nothing here allocates.
Status::Status(StatusCode code, const char* message) noexcept
    : Status(code, message ? std::string_view(message) : std::string_view()) {}

Status::Status(StatusCode code, std::string_view message) noexcept : code_(code) {
  set_message(code == StatusCode::Ok ? std::string_view() : message);
}

void Status::set_message(std::string_view message) noexcept {
  size_ = static_cast<uint16_t>(detail::copy_cut(message_, kMessageBytes, message));
}

Status::Status(const Status& other) noexcept : code_(other.code_) { set_message(other.message()); }

Status& Status::operator=(const Status& other) noexcept {
  if (this == &other) return *this;
  code_ = other.code_;
  set_message(other.message());
  return *this;
}

Status::Status(Status&& other) noexcept : Status(static_cast<const Status&>(other)) {
  other.code_ = StatusCode::Ok;
  other.set_message(std::string_view());
}

Status& Status::operator=(Status&& other) noexcept {
  if (this == &other) return *this;
  *this = static_cast<const Status&>(other);
  other.code_ = StatusCode::Ok;
  other.set_message(std::string_view());
  return *this;
}
#endif

}  // namespace runtime_v1
}  // namespace kiln
