# An ordinary CMake toolchain file for a 64-bit ARM Linux cross build with Debian's cross compilers
# (gcc-aarch64-linux-gnu g++-aarch64-linux-gnu); the programs it builds run under qemu-user
# (qemu-user-static) with the cross sysroot, which ctest uses through CMAKE_CROSSCOMPILING_EMULATOR.
#   cmake -S app -B build -G Ninja -DCMAKE_TOOLCHAIN_FILE=aarch64-linux-gnu.cmake \
#     -Dkiln_DIR=<kiln prefix>/lib/cmake/kiln
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -L /usr/aarch64-linux-gnu)
