#!/usr/bin/env bash
# gpipe-run profile --backend cuda as a user runs it. Without a GPU (or
# without the CUDA toolkit) it exits 1 with one line saying so; bad flags are
# exit 2 either way, --sm-per-stage belongs to cuda alone and --threads-per-rank
# to cpu alone. With a
# GPU: a CUPTI profile of a tiny model, its SM partition on stderr, accepted
# by `gpipe-sim run --profile`. Usage: profile_cuda_test.sh GPIPE_SIM GPIPE_RUN
set -u
sim=$1
run=$2
source "$(dirname "$0")/lib.sh"
mlp=mlp:layers=2,hidden=8

expect_status 0 "$run" profile --help
expect_out "--sm-per-stage"
expect_status 2 "$run" profile --backend cuda --model $mlp --micro-batch-sizes 1 --out "$tmp/q.json" --threads-per-rank 2
expect_one_error_line "--threads-per-rank applies to --backend cpu only"
expect_status 2 "$run" profile --backend cpu --model $mlp --micro-batch-sizes 1 --out "$tmp/q.json" --sm-per-stage 8
expect_one_error_line "--sm-per-stage applies to --backend cuda only"
expect_status 2 "$run" profile --backend cuda --model $mlp --micro-batch-sizes 1 --out "$tmp/q.json" --stages 0
expect_one_error_line "--stages"
expect_status 2 "$run" profile --backend cuda --model $mlp --micro-batch-sizes 1,1 --out "$tmp/q.json"
expect_one_error_line "--micro-batch-sizes: 1 is given more than once"

"$run" profile --backend cuda --model $mlp --micro-batch-sizes 1,2 --out "$tmp/p.json" --warmup 1 --repeats 3 \
  >"$tmp/out" 2>"$tmp/err"
status=$?
if grep -qF -e "no CUDA device: " -e "this build has no CUDA backend" "$tmp/err"; then
  # No GPU here: exactly one line and exit 1, nothing written.
  [ "$status" -eq 1 ] || fail "no device, yet exit $status"
  expect_one_error_line "CUDA"
  [ -e "$tmp/p.json" ] && fail "a profile was written without a device"
  finish "gpipe-run profile --backend cuda (no device: the GPU part skipped)"
fi

[ "$status" -eq 0 ] || fail "profile --backend cuda exited $status: $(cat "$tmp/err")"
expect_out "p.json: cupti profile of mlp:layers=2,hidden=8 on .* (fp32), 3 layers, micro-batch sizes 1,2; link"
grep -q "^SM partitions: " "$tmp/err" || fail "no SM partition line: $(cat "$tmp/err")"
grep -qF "layer 3/3 loss (mse_loss):  b=1 fwd" "$tmp/err" || fail "no line for the last layer: $(cat "$tmp/err")"
grep -qF '"source": "cupti"' "$tmp/p.json" || fail "profile source is not cupti: $(head -c 400 "$tmp/p.json")"
expect_status 0 "$sim" run --profile "$tmp/p.json" -K 2 -M 2 -N 4
expect_out "(cupti, .*, fp32)"

# Two stages: the partition each gets.
expect_status 0 "$run" profile --backend cuda --model $mlp --micro-batch-sizes 1 --out "$tmp/k2.json" \
  --warmup 0 --repeats 1 --stages 2
grep -q -e "^SM partitions: 2 partitions of" -e "^SM partitions: none" "$tmp/err" \
  || fail "no two-partition line: $(cat "$tmp/err")"

finish "gpipe-run profile --backend cuda"
