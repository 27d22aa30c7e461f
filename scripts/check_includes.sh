#!/usr/bin/env bash
# The layer order, checked over every `#include "..."` of the libraries and the CLI.
#   bash scripts/check_includes.sh
# Folders, lowest first: models <- planner <- sim <- {whatif, exec} <- tools. A file may include
# its own folder and any lower one; whatif and exec are siblings and never include each other.
# Inside exec/ the sub-folders have an order of their own (EXEC_ORDER, lowest first; "." is the
# files directly in exec/: tensors, the layer interface, OpenMP and oneDNN helpers), so a backend
# folder sits beside layers/ and the runtime sits on top. An include of a higher folder, a folder
# missing from the orders, or an include of a file that does not exist fails the check, one line
# per finding ("FILE:LINE: includes X (why)"), exit 1. tests/, bench/, fuzz/ may include anything.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A TOP=([models]=0 [planner]=1 [sim]=2 [whatif]=3 [exec]=3 [tools]=4)
EXEC_ORDER=(. layers cuda backend data transport machine profile runtime)
declare -A SUB=()
for i in "${!EXEC_ORDER[@]}"; do SUB[${EXEC_ORDER[$i]}]=$i; done

# exec/<sub>/file -> <sub>; exec/file -> "."
exec_sub() { local rest=${1#exec/}; [[ $rest == */* ]] && echo "${rest%%/*}" || echo .; }

findings=0
fail() { echo "$1" >&2; findings=$((findings + 1)); }

while IFS= read -r file; do
  from_top=${file%%/*}
  while IFS=: read -r line inc; do
    to_top=${inc%%/*}
    [[ -n ${TOP[$to_top]+x} ]] || continue          # a system or third-party header
    [[ -f $inc ]] || { fail "$file:$line: includes $inc (no such file)"; continue; }
    if [[ $from_top != "$to_top" ]]; then
      if (( TOP[$to_top] >= TOP[$from_top] )); then
        fail "$file:$line: includes $inc ($from_top may not include $to_top: models <- planner <- sim <- {whatif, exec} <- tools)"
      fi
      continue
    fi
    [[ $from_top == exec ]] || continue
    a=$(exec_sub "$file") b=$(exec_sub "$inc")
    [[ $a == "$b" ]] && continue
    for s in "$a" "$b"; do
      [[ -n ${SUB[$s]+x} ]] || { fail "$file:$line: includes $inc (exec/$s is not in EXEC_ORDER of scripts/check_includes.sh)"; continue 2; }
    done
    if (( SUB[$b] > SUB[$a] )); then
      fail "$file:$line: includes $inc (exec/$a is below exec/$b; order: ${EXEC_ORDER[*]})"
    fi
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' "$file" | sed -E 's/^([0-9]+):[^"]*"([^"]+)".*/\1:\2/')
done < <(git ls-files 'models/*' 'planner/*' 'sim/*' 'whatif/*' 'exec/*' 'tools/*' | grep -E '\.(h|cc|cu|cuh)$')

if (( findings > 0 )); then
  echo "check_includes: $findings include(s) against the layer order" >&2
  exit 1
fi
echo "check_includes: every include follows the layer order"
