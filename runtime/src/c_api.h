// What the C API's two files share: a C status made with an allocator, and a context's allocator.
#pragma once

#include <cstdint>
#include <string_view>

#include "kiln/kiln_c.h"

namespace kiln {
inline namespace runtime_v1 {
namespace detail {

// nullptr for KILN_OK; else a status with a copy of message, from allocator (nullptr, or one
// without alloc: the heap, or without it a slot), or a fixed status with the code when none can be had.
kiln_status* make_c_status(const kiln_allocator_t* allocator, int32_t code, std::string_view message) noexcept;
// the allocator ctx was made with (nullptr for none, and for a NULL ctx)
const kiln_allocator_t* c_allocator(kiln_context* ctx) noexcept;

}  // namespace detail
}  // namespace runtime_v1
}  // namespace kiln
