#!/usr/bin/env bash
# Downloads the Debian packages Pipewright builds against into DIR, to carry to a GPU machine
# that has CUDA, CMake, ninja and a compiler but none of them and no network; tools/gpu_check.sh
# unpacks them there with `dpkg -x` (OpenMPI included, so the device check can run two ranks on
# the one GPU: it runs from the prefix through OPAL_PREFIX). Run on a Debian 12 build machine
# with a package index (apt-get update); nothing is installed.
#   bash tools/gpu_debs.sh [DIR] [--no-mpi]   # DIR defaults to .debs (ignored by git)
# The list is resolved with apt-cache depends from the top-level packages below: every
# Depends (the first of alternatives), except libraries any machine with a C++ toolchain has
# (Priority required/important, the C library and GCC's runtime) and virtual packages.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.debs
mpi=1
for a in "$@"; do
  case "$a" in
    --no-mpi) mpi=0 ;;
    -*) echo "gpu_debs: unknown option '$a' (expected --no-mpi)" >&2; exit 2 ;;
    *) dir="$a" ;;
  esac
done
# pkgconf: CMake finds hwloc through pkg-config, which a machine with only CUDA and a compiler
# may lack (gpu_check.sh puts the prefix's bin after the system's on PATH).
top=(nlohmann-json3-dev libcli11-dev doctest-dev libdnnl-dev libhwloc-dev ocl-icd-opencl-dev
     opencl-c-headers libbenchmark-dev pkgconf)
[ "$mpi" = 1 ] && top+=(libopenmpi-dev openmpi-bin)
base=" libc6 libc6-dev libgcc-s1 libstdc++6 libgomp1 libudev1 gcc-12-base "
# Taken without their Depends: OpenMPI's dev package is wanted for its headers, wrapper data and
# library links only (its Depends serve Fortran and static linking: a compiler, 70 MiB). Left
# out: ssh, which mpirun needs only to start ranks on other hosts (gpu_check.sh sets
# OMPI_MCA_plm_rsh_agent=false, without which mpirun refuses local ranks too), and hwloc's
# optional plugins (X11, libxml2, ICU: 14 MiB).
shallow=" libopenmpi-dev "
skip=" openssh-client libhwloc-plugins "

command -v apt-cache >/dev/null && command -v apt-get >/dev/null || {
  echo "gpu_debs: needs apt-cache and apt-get (a Debian build machine)" >&2
  exit 2
}

declare -A seen=()
queue=("${top[@]}")
list=()
while [ "${#queue[@]}" -gt 0 ]; do
  p="${queue[0]}"
  queue=("${queue[@]:1}")
  [ -n "${seen[$p]:-}" ] && continue
  seen[$p]=1
  [[ "$base$skip" == *" $p "* ]] && continue
  prio="$(apt-cache show --no-all-versions "$p" 2>/dev/null | sed -n 's/^Priority: //p' | head -1)"
  if [ -z "$prio" ]; then
    echo "gpu_debs: package '$p' is not in the package index (run apt-get update?)" >&2
    exit 2
  fi
  case "$prio" in required|important) continue ;; esac
  list+=("$p")
  [[ "$shallow" == *" $p "* ]] && continue
  # Depends lines; "|Depends" starts a group of alternatives: take its first, skip the rest.
  alt=0
  while IFS= read -r line; do
    dep="$(sed -E 's/^ *\|?(Pre)?Depends: //' <<<"$line")"
    if [[ "$line" =~ ^\ *\|Depends ]]; then
      [ "$alt" = 0 ] && [[ "$dep" != \<* ]] && queue+=("$dep")
      alt=1
      continue
    fi
    [ "$alt" = 0 ] && [[ "$dep" != \<* ]] && queue+=("$dep")
    alt=0
  done < <(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
             --no-enhances "$p" | grep -E '^ +\|?(Pre)?Depends: ')
done

mkdir -p "$dir"
rm -f "$dir"/*.deb
(cd "$dir" && apt-get download -qq "${list[@]}" 2> >(grep -v "unsandboxed" >&2))
printf '%s\n' "${list[@]}" > "$dir/packages.txt"
echo "gpu_debs: ${#list[@]} packages, $(du -sh "$dir" | cut -f1) in $dir: ${list[*]}"
