# An ordinary CMake toolchain file for a 32-bit ARMv7-A hard-float Linux cross build with Debian's
# cross compilers (gcc-arm-linux-gnueabihf g++-arm-linux-gnueabihf); the programs it builds run
# under qemu-user (qemu-user-static) with the cross sysroot (CMAKE_CROSSCOMPILING_EMULATOR).
#   cmake -S app -B build -G Ninja -DCMAKE_TOOLCHAIN_FILE=arm-linux-gnueabihf.cmake \
#     -Dkiln_DIR=<kiln prefix>/lib/cmake/kiln
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR armv7)
set(CMAKE_C_COMPILER arm-linux-gnueabihf-gcc)
set(CMAKE_CXX_COMPILER arm-linux-gnueabihf-g++)
set(CMAKE_FIND_ROOT_PATH /usr/arm-linux-gnueabihf)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-arm-static -L /usr/arm-linux-gnueabihf)
