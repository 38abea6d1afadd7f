#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run): both passes at once on a 2-core machine.
#
# - The tests marked `serial` (DDS participants, processes whose timing a test judges:
#   test/ros and most of test/system) run one at a time, at the normal scheduling policy,
#   in the foreground.
# - All the others (test/unit and the system modules that say PARALLEL_SAFE = True: pure
#   maths, the linters, the docs build, command-line tools) run meanwhile on two
#   pytest-xdist workers under SCHED_IDLE (`chrt --idle 0`): they get only the CPU time the
#   serial tests leave, and the kernel takes a core from them as soon as a process of the
#   serial tests wakes. The serial tests use 0.8 of a core on average; run one after the
#   other, the two passes took 141 s + 348 s on a quiet machine (2026-12-06), together 382 s.
#   Once the serial tests end, the rest of this pass gets the normal policy back (beside
#   CPU-bound processes of the machine's own it would otherwise starve).
#
# Arguments are passed to both pytest runs (e.g. `-x`, `-k name`). The closing line adds
# up both passes; the exit status is non-zero when either failed.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
log=$(mktemp "${TMPDIR:-/tmp}/ne_dynamics_ros_parallel_pass.XXXXXX")
serial_log=$(mktemp "${TMPDIR:-/tmp}/ne_dynamics_ros_serial_pass.XXXXXX")
# Job control: the background pass gets a process group of its own, and its processes
# keep SIGINT's default action (a plain `&` in a script ignores SIGINT in them, which
# tests of signal handling would see).
idle=(chrt --idle 0)
command -v chrt > /dev/null || idle=(nice -n 19)   # util-linux's chrt missing: lowest nice
set -m
"${idle[@]}" "$PYTHON" -m pytest -n 2 -m "not serial" -p no:cacheprovider "$@" test \
  > "$log" 2>&1 &
parallel=$!
set +m
trap 'kill -TERM -- "-$parallel" 2>/dev/null; rm -f "$log" "$serial_log"' EXIT
trap 'exit 130' INT TERM
echo "test.sh: the parallel-safe tests run at SCHED_IDLE beside the serial ones (log: $log)"
"$PYTHON" -m pytest -m serial -p no:cacheprovider "$@" test 2>&1 | tee "$serial_log"
serial_status=${PIPESTATUS[0]}
# The serial tests are done: what is left of the other pass gets the normal policy back, so
# that CPU-bound neighbours of the machine's own cannot starve it from here on.
for pid in $(pgrep -g "$parallel"); do
  if [ "${idle[0]}" = chrt ]; then
    chrt --all-tasks --other --pid 0 "$pid" 2> /dev/null
  else
    renice -n 0 -p "$pid" > /dev/null 2>&1
  fi
done
wait "$parallel"
parallel_status=$?
echo
echo "test.sh: the parallel-safe tests (pytest -n 2 -m 'not serial', SCHED_IDLE):"
cat "$log"
count() {  # count WORD FILE: the number before WORD in pytest's closing line, or 0
  local line
  line=$(grep -E ' in [0-9.]+s( \([0-9:]+\))?( =+)?$' "$2" | tail -n 1)
  grep -oE "[0-9]+ $1" <<< "$line" | head -n 1 | cut -d' ' -f1 | grep . || echo 0
}
total() { echo $(( $(count "$1" "$serial_log") + $(count "$1" "$log") )); }
# pytest's exit status 5 is "no test collected": a filter that selects none in one pass.
ok() { [ "$1" -eq 0 ] || [ "$1" -eq 5 ]; }
echo
if ok "$serial_status" && ok "$parallel_status"; then
  status=0
else
  status=1
fi
echo "test.sh: serial pass exit $serial_status, parallel pass exit $parallel_status"
# both passes in one closing line (errors counted as failures)
echo "suite: $(total passed) passed, $(( $(total failed) + $(total error) )) failed, $(total skipped) skipped"
exit $status
