# shellcheck shell=bash disable=SC2154,SC2120  # sourced: the variables are the caller's; --table is passed from there
# The step machinery of the device check (sourced by tools/gpu_check.sh; not run alone).
#
# Time: the whole check ends by $deadline seconds after $t_start. A step starts only with at
# least $min_step_s left, and its command's limit is its own or what is left, whichever is less
# (cap); a step that is a shell function gives each program it runs `timeout "$(cap N)"`, so no
# step outlives the deadline by more than the few seconds of its own shell and python. A step not
# started for lack of time is "skipped (budget)", which fails the check.
# Record: after every step the summary (OUT/summary.json) and OUT/details.tar.gz are rewritten,
# so a run stopped from outside (the device machine's limit) still returns what it measured.
# Variables used: out, log, work, details, t_start, deadline, mode, gpu_name, arch.

min_step_s=10
# PyTorch runs without the prefix's settings: its libraries would shadow the system's, and
# torch.compile's compilers would read its headers.
plain_env=(env -u LD_LIBRARY_PATH -u CPLUS_INCLUDE_PATH -u C_INCLUDE_PATH -u PKG_CONFIG_PATH -u PKG_CONFIG_SYSROOT_DIR)
left() { echo $(( deadline - ($(date +%s) - t_start) )); }
# cap N: N, or the seconds left before the deadline where that is less (at least 1).
cap() {
  local l
  l=$(left)
  [ "$l" -lt 1 ] && l=1
  [ "$1" -lt "$l" ] && echo "$1" || echo "$l"
}

say() { echo "gpu_check: $*" | tee -a "$log" >&2; }

declare -a step_names=() step_status=() step_secs=() step_notes=() step_verdict=()
step_line0=0  # the log's line count when the current step started
# step NAME TIMEOUT_S CMD...: runs CMD with its output in the log; records status and seconds.
step() {
  local name="$1" limit="$2"
  shift 2
  local t0 rc
  if [ "$(left)" -lt "$min_step_s" ]; then
    step_names+=("$name"); step_status+=("-"); step_secs+=(0)
    step_notes+=("not run: the ${deadline} s deadline is near")
    step_verdict[$(( ${#step_names[@]} - 1 ))]="skipped (budget)"
    echo "===== $name: not run (deadline of $deadline s near)" >> "$log"
    write_summary
    return 1
  fi
  limit=$(cap "$limit")
  t0=$(date +%s)
  step_line0=$(wc -l < "$log")
  echo "===== $name (limit $limit s): $*" >> "$log"
  if declare -F "$1" >/dev/null; then
    "$@" >> "$log" 2>&1  # a function of the check: its programs run under `timeout "$(cap N)"`
  else
    timeout "$limit" "$@" >> "$log" 2>&1
  fi
  rc=$?
  step_names+=("$name")
  step_secs+=("$(( $(date +%s) - t0 ))")
  step_status+=("$rc")
  step_notes+=("")
  echo "===== $name: exit $rc after $(( $(date +%s) - t0 )) s" >> "$log"
  return $rc
}
# write_to FILE CMD...: CMD's standard output into FILE, which appears only when CMD succeeded (a
# step killed mid-write leaves no partial JSON behind); otherwise that output goes to the log.
write_to() {
  local f="$1" rc
  shift
  "$@" > "$f.tmp"
  rc=$?
  if [ $rc = 0 ]; then mv "$f.tmp" "$f"; else cat "$f.tmp"; rm -f "$f.tmp"; fi
  return $rc
}
# The current step's part of the log (for its note: never an earlier step's line).
step_log() { tail -n +"$(( step_line0 + 1 ))" "$log"; }
# note TEXT: the last step's note; note_from REGEX: its last log line matching REGEX.
note() {  # a step the deadline kept from running keeps its note
  local i=$(( ${#step_notes[@]} - 1 ))
  [ "${step_verdict[$i]:-}" = "skipped (budget)" ] || step_notes[$i]="$1"
  write_summary
}
note_from() { note "$(step_log | grep -E "$1" | tail -1 | cut -c1-90)"; }
# verdict V: the last step's verdict (pass | fail | skipped (expected) | skipped-unexpected |
# refused (expected) | stopped (optional)); pass_if_ok: pass when it exited 0, else fail.
verdict() {
  local i=$(( ${#step_names[@]} - 1 ))
  [ "${step_verdict[$i]:-}" = "skipped (budget)" ] || step_verdict[$i]="$1"
  # One line a step on stderr: what a stopped run's output shows of its progress.
  echo "gpu_check: $(( $(date +%s) - t_start )) s: ${step_names[$i]}: ${step_verdict[$i]} (${step_secs[$i]} s)" >&2
  write_summary
}
pass_if_ok() { if [ "${step_status[-1]}" = 0 ]; then verdict pass; else verdict fail; fi; }

# OUT/summary.json (and, with --table, the table printed last) from the steps so far; the
# per-case files packed into OUT/details.tar.gz (the device tool returns at most 8 files).
write_summary() {
  local steps_file="$work/steps.tsv" i
  : > "$steps_file"
  for i in "${!step_names[@]}"; do
    printf '%s\t%s\t%s\t%s\t%s\n' "${step_names[$i]}" "${step_status[$i]}" "${step_secs[$i]}" \
      "${step_verdict[$i]:-fail}" "${step_notes[$i]}" >> "$steps_file"
  done
  tar -czf "$out/details.tar.gz.tmp" -C "$details" . 2>/dev/null && mv "$out/details.tar.gz.tmp" "$out/details.tar.gz"
  "${plain_env[@]}" python3 "$repo/tools/gpu_check_summary.py" "$steps_file" "$out" "$details" "$mode" \
    "$gpu_name" "$arch" "$(( $(date +%s) - t_start ))" "$@"
}
