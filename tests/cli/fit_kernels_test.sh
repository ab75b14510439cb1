#!/usr/bin/env bash
# scripts/fit-kernels as a user runs it: fitting again on the published runs
# gives exactly the shipped kernel models (profiles/data/kernels/), so that
# nobody edits a fitted file by hand and a change to the simulator that moves
# the fit shows here (accept it: scripts/fit-kernels, rebuild, then
# scripts/published --out published/predicted.csv). Bad input is one error
# line, exit 2. Under the sanitizers only the errors are checked: the fit runs
# gpipe-sim plan some 7,000 times, which the other tests cover.
# Usage: fit_kernels_test.sh GPIPE_SIM GPIPE_RUN
set -u
sim=$1
source "$(dirname "$0")/lib.sh"

if [ -z "${GPIPE_SANITIZED:-}" ]; then
  expect_status 0 scripts/fit-kernels --sim "$sim" --check
  expect_out "^a100: GEMM efficiency [0-9.]*, memory efficiency [0-9.]*: mean |error| [0-9.]* %"
  expect_out "^h100: GEMM efficiency [0-9.]*, memory efficiency [0-9.]*, attention efficiency [0-9.]*: mean |error| [0-9.]* %"
fi

expect_status 2 scripts/fit-kernels --sim "$tmp/no-sim"
expect_one_error_line "--sim $tmp/no-sim: no gpipe-sim there"
expect_status 2 scripts/fit-kernels --sim "$sim" --out-dir "$tmp/none"
expect_one_error_line "--out-dir $tmp/none: no such folder"
printf '{' >"$tmp/bad.json"
expect_status 2 scripts/fit-kernels --sim "$sim" --runs "$tmp/bad.json"
expect_one_error_line "bad.json: not JSON"
expect_status 2 scripts/fit-kernels --bad-flag
expect_one_error_line "unrecognized arguments: --bad-flag"

finish fit_kernels_test
