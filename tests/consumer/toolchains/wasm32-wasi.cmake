# An ordinary CMake toolchain file for WebAssembly (WASI) with Debian's clang-19 and its WASI
# sysroot (clang-19 lld-19 llvm-19 wasi-libc libc++-19-dev-wasm32 libc++abi-19-dev-wasm32
# libclang-rt-19-dev-wasm32); the programs it builds are .wasm modules that run in node
# (nodejs, through wasi-run.mjs beside this file).
#   cmake -S app -B build -G Ninja -DCMAKE_TOOLCHAIN_FILE=wasm32-wasi.cmake \
#     -Dkiln_DIR=<kiln prefix>/lib/cmake/kiln
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR wasm32)
set(CMAKE_C_COMPILER clang-19)
set(CMAKE_CXX_COMPILER clang++-19)
set(CMAKE_C_COMPILER_TARGET wasm32-wasi)
set(CMAKE_CXX_COMPILER_TARGET wasm32-wasi)
# WASI has no C++ exceptions (without the wasm EH proposal): code that would throw ends instead
set(CMAKE_CXX_FLAGS_INIT -fno-exceptions)
set(CMAKE_AR llvm-ar-19)
set(CMAKE_RANLIB llvm-ranlib-19)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR node "${CMAKE_CURRENT_LIST_DIR}/wasi-run.mjs")
