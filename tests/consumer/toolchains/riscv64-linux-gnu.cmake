# An ordinary CMake toolchain file for a RISC-V 64-bit Linux cross build with Debian's cross
# compilers (gcc-riscv64-linux-gnu g++-riscv64-linux-gnu); the programs it builds run under
# qemu-user (qemu-user-static) on an RV64GCV CPU with 128-bit vectors, with the cross sysroot.
#   cmake -S app -B build -G Ninja -DCMAKE_TOOLCHAIN_FILE=riscv64-linux-gnu.cmake \
#     -Dkiln_DIR=<kiln prefix>/lib/cmake/kiln
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR riscv64)
set(CMAKE_C_COMPILER riscv64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER riscv64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/riscv64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-riscv64-static -cpu rv64,v=true,vlen=128,elen=64,vext_spec=v1.0
    -L /usr/riscv64-linux-gnu)
