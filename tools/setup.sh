#!/usr/bin/env bash
# Pipewright set-up: installs what is missing (Debian 12, as root, no TTY), configures, builds,
# then either runs the main job on the built-in default model (`main`) or the whole test
# suite through ctest (`test`).
#   bash tools/setup.sh main     # install + build + `pipewright demo`
#   bash tools/setup.sh test     # install + build + ctest
set -euo pipefail
mode="${1:-main}"
case "$mode" in main|test) ;; *) echo "usage: bash tools/setup.sh main|test" >&2; exit 2;; esac
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ pkg-config nlohmann-json3-dev doctest-dev libbenchmark-dev libcli11-dev
          libdnnl-dev ocl-icd-opencl-dev opencl-c-headers libopenmpi-dev openmpi-bin libhwloc-dev
          python3-jsonschema)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build="${PW_BUILD_DIR:-build}"
launcher=()  # ccache where installed (CI installs it; its cache lives outside the clone)
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# A unity build (32 sources to a translation unit, CMakeLists.txt: under half the compile time
# of a fresh build); PW_UNITY=OFF compiles file by file (quicker rebuilds after editing one file).
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD="${PW_UNITY:-ON}" "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"

if [ "$mode" = main ]; then
  "$build/pipewright" demo
else
  # MPI tests launch mpirun as root inside a container: allow it.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  ctest --test-dir "$build" --output-on-failure -j"$(nproc)"
fi
