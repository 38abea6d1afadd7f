#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run): two passes side by side.
#
# - The tests marked `serial` (DDS participants, processes whose timing a test judges:
#   test/ros and most of test/system), one at a time, at the normal policy;
# - beside them every other test (test/unit, and the parallel-safe modules of test/system,
#   those that say PARALLEL_SAFE = True: the linters, the docs build, command-line tools,
#   the lockstep benchmarks) on two pytest-xdist workers under SCHED_IDLE (`chrt --idle 0`;
#   `nice 19` without chrt): they get only the CPU the serial tests leave (those use under
#   one core on average), and the normal policy back once the serial tests end.
#
# Measured on this project's 2-core machine, 2026-12-07 (docs/getting-started.md): a fresh
# clone's .ci/run took 465 s this way, the serial pass 412 s and the others done inside
# it, against 577-598 s the same afternoon with only test/unit beside the serial pass and
# the other parallel-safe tests on the two workers before it (`--unit-beside`).
#
# `--unit-beside` (first argument): the parallel-safe tests of test/system on the two
# workers first, then the serial tests with test/unit in one process at SCHED_IDLE beside
# them. `--two-passes`: every parallel-safe test on the two workers, then the serial ones
# alone.
#
# Other arguments are passed to every pytest run (e.g. `-x`, `-k name`). The closing line
# adds them up; the exit status is non-zero when any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
# Bytecode is written during the run even where PYTHONDONTWRITEBYTECODE is set (as on this
# project's machines): pytest keeps a module's assertion rewriting only as bytecode, and
# without it every pytest process (both workers, then the serial pass) rewrote the test
# modules and the hypothesis plugin again, about 5 s each (cProfile of a collection,
# 2026-12-07); the processes the tests start compile the test helpers they import. The
# files go to __pycache__ folders, which git ignores.
export PYTHONDONTWRITEBYTECODE=
mode=together
case "${1:-}" in
  --unit-beside) mode=unit-beside; shift ;;
  --two-passes) mode=two-passes; shift ;;
esac
log=$(mktemp "${TMPDIR:-/tmp}/ne_dynamics_ros_parallel_pass.XXXXXX")
serial_log=$(mktemp "${TMPDIR:-/tmp}/ne_dynamics_ros_serial_pass.XXXXXX")
unit_log=$(mktemp "${TMPDIR:-/tmp}/ne_dynamics_ros_unit_pass.XXXXXX")
background=
trap '[ -n "$background" ] && kill -TERM -- "-$background" 2>/dev/null; rm -f "$log" "$serial_log" "$unit_log"' EXIT
trap 'exit 130' INT TERM
idle=(chrt --idle 0)
command -v chrt > /dev/null || idle=(nice -n 19)   # util-linux's chrt missing: lowest nice
beside() {  # beside LOG PYTEST-ARGS...: pytest in the background at the idle policy
  # Job control: the background pass gets a process group of its own, and its processes
  # keep SIGINT's default action (a plain `&` in a script ignores SIGINT in them, which
  # tests of signal handling would see).
  local out=$1
  shift
  set -m
  "${idle[@]}" "$PYTHON" -m pytest "$@" > "$out" 2>&1 &
  background=$!
  set +m
}
unit_status=0   # test/unit runs with the others unless beside the serial tests
case $mode in
  together)
    beside "$log" -n 2 -m "not serial" -p no:cacheprovider "$@" test
    echo "test.sh: the parallel-safe tests run at ${idle[*]} beside the serial ones" ;;
  unit-beside)
    "$PYTHON" -m pytest -n 2 -m "not serial and not unit" -p no:cacheprovider "$@" test 2>&1 \
      | tee "$log"
    parallel_status=${PIPESTATUS[0]}
    beside "$unit_log" -m unit -p no:cacheprovider "$@" test
    echo "test.sh: test/unit runs in one process at ${idle[*]} beside the serial tests" ;;
  *)
    "$PYTHON" -m pytest -n 2 -m "not serial" -p no:cacheprovider "$@" test 2>&1 | tee "$log"
    parallel_status=${PIPESTATUS[0]} ;;
esac
"$PYTHON" -m pytest -m serial -p no:cacheprovider "$@" test 2>&1 | tee "$serial_log"
serial_status=${PIPESTATUS[0]}
if [ -n "$background" ]; then
  # The serial tests are done: what is left of the other pass gets the normal policy back,
  # so that CPU-bound neighbours of the machine's own cannot starve it from here on.
  for pid in $(pgrep -g "$background"); do
    if [ "${idle[0]}" = chrt ]; then
      chrt --all-tasks --other --pid 0 "$pid" 2> /dev/null
    else
      renice -n 0 -p "$pid" > /dev/null 2>&1
    fi
  done
  wait "$background"
  background_status=$?
  background=
  echo
  if [ "$mode" = together ]; then
    parallel_status=$background_status
    echo "test.sh: the parallel-safe tests (pytest -n 2 -m 'not serial', ${idle[*]}):"
    cat "$log"
  else
    unit_status=$background_status
    echo "test.sh: test/unit (pytest -m unit, ${idle[*]} until the serial tests ended):"
    cat "$unit_log"
  fi
fi
count() {  # count WORD FILE: the number before WORD in pytest's closing line, or 0
  local line
  line=$(grep -E ' in [0-9.]+s( \([0-9:]+\))?( =+)?$' "$2" | tail -n 1)
  grep -oE "[0-9]+ $1" <<< "$line" | head -n 1 | cut -d' ' -f1 | grep . || echo 0
}
total() {
  echo $(( $(count "$1" "$serial_log") + $(count "$1" "$log") + $(count "$1" "$unit_log") ))
}
# pytest's exit status 5 is "no test collected": a filter that selects none in one pass.
ok() { [ "$1" -eq 0 ] || [ "$1" -eq 5 ]; }
echo
if ok "$serial_status" && ok "$parallel_status" && ok "$unit_status"; then
  status=0
else
  status=1
fi
echo "test.sh: parallel-safe pass exit $parallel_status, serial pass exit $serial_status$(
  [ "$mode" = unit-beside ] && echo ", test/unit exit $unit_status")"
# both passes in one closing line (errors counted as failures)
echo "suite: $(total passed) passed, $(( $(total failed) + $(total error) )) failed, $(total skipped) skipped"
exit $status
