#!/usr/bin/env bash
# Installs (as root, with apt; or tells the sudo command to run) the Debian packages kiln needs,
# when missing. Sourced by demo.sh, test.sh and .ci/run so each works on a fresh Debian 12 machine.
#   KILN_DEPS=user  what building kiln and a project that uses it needs (the demo): a compiler,
#                   CMake, Ninja, the generator's header-only libraries, LLVM and Z3;
#   KILN_DEPS=test  (the default) that and everything the tests and benchmarks need, complete:
#                   oneDNN's CMake config, for one, needs the OpenCL headers, which apt's
#                   --no-install-recommends leaves out; PoCL runs the OpenCL kernels' tests on the CPU.
# KILN_EXTRA_PACKAGES names more; KILN_DEPS_LIST_ONLY=1 only defines the list (.ci/run installs it).
kiln_user_packages=(build-essential cmake ninja-build libcli11-dev nlohmann-json3-dev llvm-19-dev libz3-dev)
kiln_test_packages=("${kiln_user_packages[@]}" ccache libgtest-dev libgmock-dev libbenchmark-dev
                    libopenblas-dev libdnnl-dev ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clang-format git python3
                    gcc-aarch64-linux-gnu g++-aarch64-linux-gnu gcc-arm-linux-gnueabihf g++-arm-linux-gnueabihf
                    gcc-riscv64-linux-gnu g++-riscv64-linux-gnu qemu-user-static
                    clang-19 lld-19 wasi-libc libc++-19-dev-wasm32 libc++abi-19-dev-wasm32 libclang-rt-19-dev-wasm32
                    nodejs gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib qemu-system-arm)
case "${KILN_DEPS:-test}" in
  user) kiln_packages=("${kiln_user_packages[@]}") ;;
  test) kiln_packages=("${kiln_test_packages[@]}") ;;
  *) echo "deps.sh: KILN_DEPS must be user or test, not '${KILN_DEPS}'" >&2; return 1 2>/dev/null || exit 1 ;;
esac
# shellcheck disable=SC2206  # KILN_EXTRA_PACKAGES is a space-separated list
kiln_packages+=(${KILN_EXTRA_PACKAGES:-})
kiln_install_deps() {
  local missing=() p status
  for p in "${kiln_packages[@]}"; do
    status="$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)"
    [[ "$status" == "install ok installed" ]] || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "kiln needs these packages: ${missing[*]}; as root, run: apt-get install ${missing[*]}" >&2
      return 1
    fi
    sudo=(sudo)
  fi
  echo "installing: ${missing[*]}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
[[ "${KILN_DEPS_LIST_ONLY:-0}" == 1 ]] || kiln_install_deps
