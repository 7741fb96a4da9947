// The argument checks the generated dispatch glue runs before a kernel, with the C entry points'
// and the ABI check. Their messages are part of the API (tests outside this repo match them):
// "<kernel>: argument <arg>: ...".
#include "kiln/kiln.h"

#include "message.h"

namespace kiln {
inline namespace runtime_v1 {
namespace detail {

// "<kernel>: argument <arg>: ", for the rest of the message to follow
static Message arg_error(const char* kernel, const char* arg) {
  Message m;
  m << kernel << ": argument " << arg << ": ";
  return m;
}

Status check_tensor(const char* kernel, const char* arg, const TensorView& v, DType dtype, int32_t rank, bool output) {
  const StatusCode bad = StatusCode::InvalidArgument;
  if (v.data() == nullptr) return (arg_error(kernel, arg) << "null data pointer").status(bad);
  if (v.t.memory != KILN_MEMORY_HOST && v.t.memory != KILN_MEMORY_DEVICE)
    return (arg_error(kernel, arg) << "memory kind " << v.t.memory << " is neither the host's (0) nor a device's (1)")
        .status(bad);
  if (v.rank() == -1) return (arg_error(kernel, arg) << "more than " << KILN_MAX_RANK << " dims").status(bad);
  if (v.rank() != rank) {
    return (arg_error(kernel, arg) << "expected rank " << rank << ", got rank " << v.rank()).status(bad);
  }
  if (v.dtype() != dtype) {
    return (arg_error(kernel, arg) << "expected dtype " << dtype_name(dtype) << ", got " << dtype_name(v.dtype()))
        .status(bad);
  }
  if (output && !v.writable()) return (arg_error(kernel, arg) << "output is a view of const data").status(bad);
  for (int32_t axis = 0; axis < v.rank(); ++axis) {
    if (v.dim(axis) < 0) {
      return (arg_error(kernel, arg) << "dim " << axis << " is negative (" << v.dim(axis) << ")").status(bad);
    }
  }
  return Status();
}

Status device_view_on_cpu(const char* kernel, const char* arg) {
  return (arg_error(kernel, arg) << "a view of device memory, in a call that runs on the CPU (call through a context "
                                    "on its device)")
      .status(StatusCode::InvalidArgument);
}

Status check_extent(const char* kernel, const char* arg, int32_t axis, int64_t actual, int64_t expected) {
  if (actual == expected) return Status();
  return (arg_error(kernel, arg) << "dim " << axis << " is " << actual << ", expected " << expected)
      .status(StatusCode::InvalidArgument);
}

// "<kernel>: argument <arg>: dim <axis> (<dim>) is <actual>"
static Message dim_is(const char* kernel, const char* arg, int32_t axis, const char* dim, int64_t actual) {
  Message m = arg_error(kernel, arg);
  m << "dim " << axis << " (" << dim << ") is " << actual;
  return m;
}

Status bind_dim(const char* kernel, const char* arg, int32_t axis, const char* dim, int64_t actual, int64_t min,
                int64_t max, int64_t* value, const char** bound_by_arg, int32_t* bound_by_axis) {
  if (value == nullptr) {
    return (arg_error(kernel, arg) << "bind_dim without a value to bind").status(StatusCode::Internal);
  }
  if (*value == -1) {
    if (actual < min || actual > max) {
      return (dim_is(kernel, arg, axis, dim, actual) << ", outside the declared range " << min << ".." << max)
          .status(StatusCode::OutOfRange);
    }
    *value = actual;
    if (bound_by_arg) *bound_by_arg = arg;
    if (bound_by_axis) *bound_by_axis = axis;
    return Status();
  }
  if (actual == *value) return Status();
  Message m = dim_is(kernel, arg, axis, dim, actual);
  // A value bound by someone the caller did not record (e.g. a scalar parameter) names no argument.
  if (bound_by_arg == nullptr || *bound_by_arg == nullptr || bound_by_axis == nullptr) {
    m << ", but " << dim << " = " << *value;
  } else {
    m << ", but argument " << *bound_by_arg << " dim " << *bound_by_axis << " set " << dim << " = " << *value;
  }
  return m.status(StatusCode::InvalidArgument);
}

Status overlap_error(const char* kernel, const char* output, const char* other, bool other_is_output) {
  return (arg_error(kernel, output) << "output overlaps " << (other_is_output ? "output " : "input ") << other
                                    << " in memory (a kernel reads and writes its arguments as if they were apart)")
      .status(StatusCode::InvalidArgument);
}

Status no_context(const char* kernel) {
  Message m;
  m << kernel << ": no context (a C call needs one: kiln_context_create)";
  return m.status(StatusCode::InvalidArgument);
}

Status null_tensor(const char* kernel, const char* arg) {
  return (arg_error(kernel, arg) << "null kiln_tensor").status(StatusCode::InvalidArgument);
}

Status abi_check(int32_t abi, const char* library) {
  if (abi == KILN_ABI_VERSION) return Status();
  Message m;
  m << (library ? library : "a kiln library") << ": generated for kiln ABI " << abi << ", but this runtime speaks ABI "
    << KILN_ABI_VERSION << " (generate it again with the kiln of this runtime)";
  return m.status(StatusCode::Unsupported);
}

Status workspace_overflow(const char* kernel) {
  Message m;
  m << kernel << ": workspace: the bytes these dims need are too many to count in an int64_t or a size_t";
  return m.status(StatusCode::ResourceExhausted);
}

}  // namespace detail
}  // namespace runtime_v1
}  // namespace kiln
