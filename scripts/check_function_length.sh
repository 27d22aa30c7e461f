#!/usr/bin/env bash
# The CLI's command files stay flags, one library call and printing: no function (nor lambda
# registered at namespace scope) in them longer than MAX lines (default 60).
#   bash scripts/check_function_length.sh [MAX] [FILE...]
# Files default to tools/cmd_plan.cc, cmd_run.cc, cmd_demo.cc, cmd_simulate.cc, cmd_whatif.cc and
# cmd_whatif_best.cc. One line per function over the limit ("FILE:LINE: N lines: signature"),
# exit 1 if any. A function is a
# brace block opened at namespace scope by a line that is not a class, struct, enum, union or
# an initializer (`= {`); strings, characters and // comments are ignored when counting braces.
set -euo pipefail
cd "$(dirname "$0")/.."
max="${1:-60}"
[[ "$max" =~ ^[1-9][0-9]*$ ]] || { echo "usage: bash scripts/check_function_length.sh [MAX] [FILE...]" >&2; exit 2; }
shift $(( $# > 0 ? 1 : 0 ))
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(tools/cmd_plan.cc tools/cmd_run.cc tools/cmd_demo.cc tools/cmd_simulate.cc
                                 tools/cmd_whatif.cc tools/cmd_whatif_best.cc)
found=$(awk -v MAX="$max" '
function strip(s) { gsub(/"([^"\\]|\\.)*"/, "\"\"", s); gsub(/'"'"'([^'"'"'\\]|\\.)*'"'"'/, "x", s); sub(/\/\/.*/, "", s); return s }
FNR == 1 { depth = 0; nsdepth = 0; infn = 0; prev = "" }
{
  line = strip($0)
  if (!infn && depth == nsdepth && line ~ /^(namespace|extern "")[^;]*\{/) { nsdepth++; depth++; prev = $0; next }
  opens = gsub(/\{/, "{", line); closes = gsub(/\}/, "}", line)
  if (!infn && depth == nsdepth && opens > closes && line !~ /^(struct|class|enum|union)/ && line !~ /= *\{/) {
    infn = 1; start = FNR; sig = $0
  }
  depth += opens - closes
  if (depth < nsdepth) nsdepth = depth
  if (infn && depth == nsdepth) {
    n = FNR - start + 1
    if (n > MAX) { gsub(/^[ \t]+/, "", sig); printf "%s:%d: %d lines: %s\n", FILENAME, start, n, substr(sig, 1, 90) }
    infn = 0
  }
  prev = $0
}' "${files[@]}")
if [ -n "$found" ]; then
  echo "$found" >&2
  echo "check_function_length: $(echo "$found" | wc -l) function(s) over $max lines" >&2
  exit 1
fi
echo "check_function_length: no function over $max lines in ${#files[@]} file(s)"
