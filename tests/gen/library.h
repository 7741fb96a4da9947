// The library tests/gen's tests call: kiln_gen_test, or, built with KILN_GEN_TUNED, kiln_gen_tuned
// (the same spec built with kiln tune's database) under the same namespace name.
#pragma once

#if defined(KILN_GEN_TUNED)
#include "kiln_gen_tuned.h"
namespace kiln_gen_test = kiln_gen_tuned;
#else
#include "kiln_gen_test.h"
#endif
