#!/usr/bin/env bash
# scripts/gpu-check as CI sees it, without a GPU: bad arguments are one line
# and exit 2; --dry-run prints the steps and a total under 8 minutes, and
# refuses a bundle whose binaries need libraries the GPU machine lacks (this
# build's own binaries: they load fmt, OpenBLAS and Open MPI from Debian).
# Usage: gpu_check_test.sh GPIPE_SIM GPIPE_RUN
set -u
sim=$1
run=$2
source "$(dirname "$0")/lib.sh"
check=scripts/gpu-check

expect_status 2 "$check" --bogus
expect_one_error_line "unknown argument '--bogus'"
expect_status 2 "$check" --only 12 --dry-run
expect_one_error_line "--only '12': give step numbers 1 to 11"
expect_status 2 "$check" --limit 6=x --dry-run
expect_one_error_line "--limit '6=x': give STEP=SECONDS"
expect_status 2 "$check" --dry-run --bundle "$tmp/none.tar.xz"
expect_one_error_line "no such file"
echo junk >"$tmp/junk.tar.xz"
expect_status 2 "$check" --dry-run --bundle "$tmp/junk.tar.xz"
expect_one_error_line "not a bundle"
mkdir -p "$tmp/empty"
expect_status 2 "$check" --dry-run --bundle "$tmp/empty"
expect_one_error_line "the bundle has no gpipe-run"

# A bundle of this build's binaries: the dry run names what the GPU machine lacks.
mkdir -p "$tmp/bundle"
cp "$run" "$tmp/bundle/gpipe-run"
cp "$sim" "$tmp/bundle/gpipe-sim"
cp "$run" "$tmp/bundle/cuda_gpu_tests"
echo test >"$tmp/bundle/COMMIT"
expect_status 1 "$check" --dry-run --bundle "$tmp/bundle"
grep -q "gpipe-run needs libraries the GPU machine lacks: .*libfmt" "$tmp/err" || fail "no missing library named: $(cat "$tmp/err")"
expect_out "^total: 480 s (the limit is 480 s)"
expect_out "^  6   185  gpipe-run validate --backend cuda"
grep -q "^  8 " "$tmp/out" && fail "step 8 listed without --only"
grep -q "^  10 " "$tmp/out" && fail "step 10 listed without --only"
# Steps 8 and 9 when named, and only the chosen steps count.
expect_status 1 "$check" --dry-run --bundle "$tmp/bundle" --only 1,2,3,8,9
expect_out "^total: 465 s (the limit is 480 s)"
expect_out "^  9   170  gpipe-run validate --backend cuda of dit"
# Step 10, inference streams and a tied llama, when named.
expect_status 1 "$check" --dry-run --bundle "$tmp/bundle" --only 1,2,3,10
expect_out "^total: 325 s (the limit is 480 s)"
expect_out "^  10   200  inference streams"
# Step 11, torch's own GPU traces, when named.
expect_status 1 "$check" --dry-run --bundle "$tmp/bundle" --only 1,11
expect_out "^total: 80 s (the limit is 480 s)"
expect_out "^  11    60  torch's own GPU traces"
grep -q "^  11 " <(scripts/gpu-check --dry-run --bundle "$tmp/bundle" 2>/dev/null) && fail "step 11 listed without --only"
# A longer step than 8 minutes allow is refused.
expect_status 1 "$check" --dry-run --bundle "$tmp/bundle" --limit 6=400
grep -q "the steps add up to over 8 minutes" "$tmp/err" || fail "no over-time line: $(cat "$tmp/err")"

finish gpu_check_test
