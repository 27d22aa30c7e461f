#!/bin/sh
# run_python_test.sh MODULES SCRIPT: runs SCRIPT with the first python3 that imports every
# module in the comma-separated MODULES; exit 77 (ctest: skipped) when none does.
modules="$1"
script="$2"
imports=$(echo "$modules" | tr ',' ' ')
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c "import $(echo $imports | tr ' ' ',')" >/dev/null 2>&1; then
    exec "$py" "$script"
  fi
done
echo "skipped: no python3 here imports $modules (Debian: apt-get install python3-torch python3-torchvision python3-jsonschema)"
exit 77
