#!/usr/bin/env bash
# Running out of memory under an address-space limit, in a
# subshell: on a rank's thread of gpipe-run train and on a pool thread of
# gpipe-sim sweep, it ends in one line on stderr and exit status 1, never in
# std::terminate (exit 134) or a hang. Not in the sanitize build, whose shadow
# memory needs more address space than the limits leave.
# Usage: out_of_memory_test.sh GPIPE_SIM GPIPE_RUN
source "$(dirname "$0")/lib.sh"
sim=$1
run=$2
if [ -n "${GPIPE_SANITIZED:-}" ]; then
  echo "out_of_memory_test: skipped (sanitizers need more address space than a limit leaves)"
  exit 0
fi

# under KIB STATUS TEXT CMD...: CMD under a limit of KIB KiB exits STATUS with one line containing TEXT.
under() {
  local kib=$1 want=$2 text=$3; shift 3
  local start=$SECONDS
  expect_status "$want" bash -c 'ulimit -v "$1" && shift && exec timeout 200 "$@"' under "$kib" "$@"
  expect_one_error_line -- "$text"
  echo "$((SECONDS - start)) s, exit $want: $*" | cut -c 1-160
}

# Micro-batches of 3000 samples: the ranks stash forwards until memory runs
# out ("gpipe-run train: failed: rank 1 ran out of memory in 1F316"). The memory log's bad_alloc in a tensor's destructor was exit 134, as in
# the issue's -M 1000000 -N 1000000 (the same failure, in a minute and a half).
under 4194304 1 "ran out of memory in " \
  "$run" train --model mlp:layers=4,hidden=16 -K 2 -M 1000 -N 3000000 --steps 1
# The whole batch is drawn before the first forward: the ranks' first GEMMs
# find memory gone, where OpenBLAS used to retry forever.
under 4194304 1 "ran out of memory" \
  "$run" train --model mlp:layers=4,hidden=16 -K 2 -M 100 -N 10000000 --steps 1

# A sweep's pool thread runs out of memory: the bad_alloc is not carried back
# to the main thread, and ends the process in std::terminate, which says it
# in one line too. (K = 16 x a million micro-batches: the schedule alone is
# 32 M actions, about 400 MB.)
under 600000 1 "gpipe-sim: failed: out of memory" \
  "$sim" sweep --profile mlp-16L-h4096-h100 -K 2,16 -M 1000000 -N 1000000 --threads 2

finish out_of_memory_test
