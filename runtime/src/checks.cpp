// The argument checks the generated dispatch glue runs before a kernel. Their messages are part
// of the API (tests outside this repo match them): "<kernel>: argument <arg>: ...".
#include "kiln/kiln.h"

#include <string>

namespace kiln {
inline namespace runtime_v1 {
namespace detail {

static const char* str(const char* s) { return s ? s : "(null)"; }

static Status arg_error(StatusCode code, const char* kernel, const char* arg, const std::string& what) {
  return Status(code, std::string(str(kernel)) + ": argument " + str(arg) + ": " + what);
}

Status check_tensor(const char* kernel, const char* arg, const TensorView& v, DType dtype, int32_t rank, bool output) {
  const StatusCode bad = StatusCode::InvalidArgument;
  if (v.data() == nullptr) return arg_error(bad, kernel, arg, "null data pointer");
  if (v.rank() == -1) return arg_error(bad, kernel, arg, "more than " + std::to_string(KILN_MAX_RANK) + " dims");
  if (v.rank() != rank) {
    return arg_error(bad, kernel, arg,
                     "expected rank " + std::to_string(rank) + ", got rank " + std::to_string(v.rank()));
  }
  if (v.dtype() != dtype) {
    return arg_error(bad, kernel, arg,
                     std::string("expected dtype ") + dtype_name(dtype) + ", got " + dtype_name(v.dtype()));
  }
  if (output && !v.writable()) return arg_error(bad, kernel, arg, "output is a view of const data");
  for (int32_t axis = 0; axis < v.rank(); ++axis) {
    if (v.dim(axis) < 0) {
      return arg_error(bad, kernel, arg,
                       "dim " + std::to_string(axis) + " is negative (" + std::to_string(v.dim(axis)) + ")");
    }
  }
  return Status();
}

Status check_extent(const char* kernel, const char* arg, int32_t axis, int64_t actual, int64_t expected) {
  if (actual == expected) return Status();
  return arg_error(
      StatusCode::InvalidArgument, kernel, arg,
      "dim " + std::to_string(axis) + " is " + std::to_string(actual) + ", expected " + std::to_string(expected));
}

static std::string dim_is(int32_t axis, const char* dim, int64_t actual) {
  return "dim " + std::to_string(axis) + " (" + str(dim) + ") is " + std::to_string(actual);
}

Status bind_dim(const char* kernel, const char* arg, int32_t axis, const char* dim, int64_t actual, int64_t min,
                int64_t max, int64_t* value, const char** bound_by_arg, int32_t* bound_by_axis) {
  if (value == nullptr) return arg_error(StatusCode::Internal, kernel, arg, "bind_dim without a value to bind");
  if (*value == -1) {
    if (actual < min || actual > max) {
      return arg_error(StatusCode::OutOfRange, kernel, arg,
                       dim_is(axis, dim, actual) + ", outside the declared range " + std::to_string(min) + ".." +
                           std::to_string(max));
    }
    *value = actual;
    if (bound_by_arg) *bound_by_arg = arg;
    if (bound_by_axis) *bound_by_axis = axis;
    return Status();
  }
  if (actual == *value) return Status();
  // A value bound by someone the caller did not record (e.g. a scalar parameter) names no argument.
  if (bound_by_arg == nullptr || *bound_by_arg == nullptr || bound_by_axis == nullptr) {
    return arg_error(StatusCode::InvalidArgument, kernel, arg,
                     dim_is(axis, dim, actual) + ", but " + str(dim) + " = " + std::to_string(*value));
  }
  return arg_error(StatusCode::InvalidArgument, kernel, arg,
                   dim_is(axis, dim, actual) + ", but argument " + *bound_by_arg + " dim " +
                       std::to_string(*bound_by_axis) + " set " + str(dim) + " = " + std::to_string(*value));
}

Status overlap_error(const char* kernel, const char* output, const char* other, bool other_is_output) {
  return arg_error(StatusCode::InvalidArgument, kernel, output,
                   std::string("output overlaps ") + (other_is_output ? "output " : "input ") + str(other) +
                       " in memory (a kernel reads and writes its arguments as if they were apart)");
}

Status workspace_overflow(const char* kernel) {
  return Status(StatusCode::ResourceExhausted,
                std::string(str(kernel)) +
                    ": workspace: the bytes these dims need are too many to count in an int64_t or a size_t");
}

}  // namespace detail
}  // namespace runtime_v1
}  // namespace kiln
