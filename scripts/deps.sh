#!/usr/bin/env bash
# Installs (as root, with apt) the Debian packages kiln needs to build and test, when missing.
# Sourced by demo.sh, test.sh and .ci/run so each works on a fresh Debian 12 machine;
# KILN_EXTRA_PACKAGES names more; KILN_DEPS_LIST_ONLY=1 only defines the list (.ci/run installs it itself).
kiln_packages=(build-essential cmake ninja-build ccache libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev libz3-dev libopenblas-dev libdnnl-dev
               clang-format git python3 ${KILN_EXTRA_PACKAGES:-})
kiln_install_deps() {
  local missing=() p status
  for p in "${kiln_packages[@]}"; do
    status="$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)"
    [[ "$status" == "install ok installed" ]] || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  if [[ $(id -u) -ne 0 ]]; then
    echo "kiln needs these packages: ${missing[*]}; run: sudo apt-get install ${missing[*]}" >&2
    return 1
  fi
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
[[ "${KILN_DEPS_LIST_ONLY:-0}" == 1 ]] || kiln_install_deps
