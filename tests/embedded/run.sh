#!/usr/bin/env bash
# Builds the Cortex-M4 firmware (tests/embedded) as a firmware team would: the build host's
# installed kiln (-Dkiln_DIR), the toolchain file cortex-m4.cmake (arm-none-eabi GCC, newlib), and
# runs it on qemu-system-arm's mps2-an386 board with semihosting, through ctest: every kernel must
# match its reference, bad calls must come back as statuses with their messages, and nothing may
# allocate: not a Context made, not an ok call, not a bad call.
# Usage: tests/embedded/run.sh <kiln build dir> <scratch dir>
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../install_kiln.sh"
kiln_install "$1" "$2" "$here"

echo "== configure with cortex-m4.cmake and -Dkiln_DIR, build"
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=MinSizeRel \
  -DCMAKE_TOOLCHAIN_FILE="$work/src/cortex-m4.cmake" -Dkiln_DIR="$(dirname "$config")" >"$work/configure.log" ||
  { cat "$work/configure.log"; fail "configure"; }
cmake --build "$work/build"

echo "== what was built is the Cortex-M4's"
elf="$work/build/firmware"
arm-none-eabi-readelf -A "$elf" | grep -q 'Tag_CPU_arch_profile: Microcontroller' || fail "firmware is not M-profile code"
arm-none-eabi-readelf -A "$elf" | grep -q 'Tag_ABI_VFP_args: VFP registers' || fail "firmware is not hard float"
members="$(arm-none-eabi-ar t "$work/build/libem.a")"
grep -qx "em_em_cortex_m4.o" <<<"$members" || fail "libem.a does not archive kiln's cortex-m4 objects: $members"
# the kernels call nothing but memcpy and memset (the C library's, or the ARM EABI's
# __aeabi_mem* forms of them): no libm, no unwinder
undefined="$(arm-none-eabi-nm -u "$work/build/kiln-gen/em/em_em_cortex_m4.o" | awk '{print $2}' | sort -u | xargs)"
for u in $undefined; do
  [[ "$u" =~ ^(memcpy|memset|memmove|__aeabi_mem(cpy|set|clr|move)[48]?)$ ]] || fail "the cortex-m4 kernels call $u"
done
echo "  firmware: $(arm-none-eabi-size "$elf" | tail -n 1 | awk '{print $1 " text, " $2 " data, " $3 " bss bytes"}'); kernels call: ${undefined:-nothing}"

echo "== run on qemu-system-arm -M mps2-an386 (ctest)"
ctest --test-dir "$work/build" --output-on-failure -V >"$work/run.log" 2>&1 || { cat "$work/run.log"; fail "the firmware failed"; }
grep -E "^[0-9]+: " "$work/run.log" | sed 's/^[0-9]*: //' | grep -v "^Test command\|^Working Directory\|^Test timeout" |
  tee "$work/firmware.log"
grep -q "all results match the reference" "$work/firmware.log" || fail "the firmware did not check its results"
grep -q "malloc count: sees malloc yes, operator new yes" "$work/firmware.log" || fail "the malloc count saw nothing"
grep -q "^no allocation in [1-9][0-9]* stretches" "$work/firmware.log" || fail "the firmware allocated"
grep -q "on cortex-m4" "$work/firmware.log" || fail "no call took a cortex-m4 variant"
echo "embedded (cortex-m4): OK"
