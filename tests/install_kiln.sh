# Sourced by the scripts that build a project against an installed kiln, as users do
# (tests/consumer/run.sh, tests/consumer/cross.sh, tests/embedded/run.sh):
#   kiln_install <kiln build dir> <scratch dir> <project dir>
# empties the scratch dir, installs the kiln build into <scratch>/prefix and copies the project to
# <scratch>/src without its *.sh; it sets `work` (the scratch dir, absolute), `config` (the
# installed kilnConfig.cmake) and `kiln` (the installed executable), and defines fail().
fail() { echo "FAIL: $*" >&2; exit 1; }

kiln_install() {
  local build project
  build="$(cd "$1" && pwd)"
  rm -rf "$2"
  mkdir -p "$2"
  work="$(cd "$2" && pwd)"
  project="$3"
  echo "== install kiln (built for the host) into $work/prefix"
  cmake --install "$build" --prefix "$work/prefix" >/dev/null
  config="$(find "$work/prefix" -name kilnConfig.cmake -print -quit)"
  [[ -n "$config" ]] || fail "the installed kiln has no kilnConfig.cmake"
  kiln="$work/prefix/bin/kiln"
  cp -r "$project" "$work/src"
  find "$work/src" -maxdepth 1 -name '*.sh' -delete
}
