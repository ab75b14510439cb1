#!/usr/bin/env bash
# gpipe-run train under mpirun when it fails: a launch of the wrong size, an
# injected fault, a stall and a process killed from outside each end every
# process, with one line each naming the rank and action, and mpirun exits
# non-zero. Nothing hangs.
# Exit 77 (skipped) where there is no mpirun or this gpipe-run has no MPI.
# Usage: run_faults_mpi_test.sh GPIPE_SIM GPIPE_RUN
set -u
sim=$1
run=$2
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mpi_lib.sh"

mlp=mlp:layers=4,hidden=16

# One process per rank: a launch of another size is one error line, exit 2.
expect_status 2 timeout 120 "${launch[@]}" -np 3 "$run" train --model $mlp -K 2 -M 4 -N 8 --steps 1
skip_without_mpi
ours
[ "$(wc -l <"$tmp/ours")" -eq 1 ] || fail "expected one line of ours: $(cat "$tmp/err")"
grep -q "the schedule has 2 ranks but mpirun started 3 processes" "$tmp/ours" || fail "$(cat "$tmp/err")"

# A fault in rank 1: each process says so, naming rank 1 and the action.
"${launch[@]}" -np 2 timeout 120 "$run" train --model $mlp -K 2 -M 4 -N 8 --steps 3 --schedule 1f1b \
  --inject-fault 1:1F2 >"$tmp/out" 2>"$tmp/err"
[ $? -ne 0 ] || fail "mpirun exited 0 after an injected fault"
ours
[ "$(grep -c 'rank 1 failed in 1F2: injected fault' "$tmp/ours")" -eq 2 ] ||
  fail "expected a line from each process: $(cat "$tmp/err")"

# A stall in rank 1: its watchdog names it, and the other process stops for it.
start=$(date +%s)
"${launch[@]}" -np 2 timeout 120 "$run" train --model $mlp -K 2 -M 4 -N 8 --steps 3 --schedule 1f1b \
  --inject-fault 1:1B1:stall --watchdog-seconds 1 >"$tmp/out" 2>"$tmp/err"
[ $? -ne 0 ] || fail "mpirun exited 0 after a stall"
[ $(($(date +%s) - start)) -lt 60 ] || fail "a stall took over 60 s to end"
ours
[ "$(grep -c 'stalled: no action finished for .* rank 1 in 1B1 (injected stall)' "$tmp/ours")" -eq 2 ] ||
  fail "expected a line from each process naming the stall: $(cat "$tmp/err")"

# Rank 1's process killed from outside: mpirun ends the other, which says where it was.
"${launch[@]}" -np 2 timeout 120 "$run" train --model $mlp -K 2 -M 4 -N 8 --steps 1000000 --seed 97531 \
  >"$tmp/out" 2>"$tmp/err" &
launcher=$!
for _ in $(seq 100); do grep -q '^step 2/' "$tmp/out" && break; sleep 0.2; done
victim=$(pgrep -f -- "--seed 97531" | while read -r p; do
  tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && echo "$p"; done | head -1)
if [ -z "$victim" ]; then
  fail "could not find rank 1's process"
  kill "$launcher"
else
  kill -9 "$victim"
fi
wait "$launcher"
[ $? -ne 0 ] || fail "mpirun exited 0 after a process was killed"
ours
# Where rank 0 was when the kill came: in one of its actions, or at the step
# barrier between two steps (rank 1 died first; 1 run in ~6 sees this).
grep -q "stopped by SIGTERM from outside .*; rank 0 \(\(waits \)\?in 0\|waits at the start of step [0-9]\)" "$tmp/ours" ||
  fail "rank 0's process did not say where it was: $(cat "$tmp/err")"

finish "gpipe-run train's failures under mpirun"
