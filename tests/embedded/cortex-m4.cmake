# An ordinary CMake toolchain file for a bare-metal Cortex-M4 with its FPU (hard float), with
# Debian's arm-none-eabi GCC and newlib (gcc-arm-none-eabi libnewlib-arm-none-eabi
# libstdc++-arm-none-eabi-newlib); the firmware runs on qemu-system-arm's mps2-an386 board with
# semihosting (CMAKE_CROSSCOMPILING_EMULATOR), which prints its output and returns its exit code.
#   cmake -S fw -B build -G Ninja -DCMAKE_TOOLCHAIN_FILE=cortex-m4.cmake -Dkiln_DIR=<kiln prefix>/lib/cmake/kiln
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR cortex-m4)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)  # no startup code or linker script for checks
set(cpu_flags "-mcpu=cortex-m4 -mthumb -mfpu=fpv4-sp-d16 -mfloat-abi=hard")
set(CMAKE_C_FLAGS_INIT "${cpu_flags}")
set(CMAKE_CXX_FLAGS_INIT "${cpu_flags} -fno-exceptions -fno-rtti")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${cpu_flags} --specs=rdimon.specs -nostartfiles")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-system-arm -M mps2-an386 -nographic -monitor none -serial none
    -semihosting-config enable=on,target=native -kernel)
