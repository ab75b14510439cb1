#!/usr/bin/env bash
# gpipe-run profile as a user runs it: a CPU profile of a tiny model, progress
# per layer on stderr, accepted by `gpipe-sim run --profile` and by
# `gpipe-run train --profile`; one error line with exit 2 for bad flags, exit 1
# for --backend cuda. Usage: run_profile_test.sh GPIPE_SIM GPIPE_RUN
set -u
sim=$1
run=$2
source "$(dirname "$0")/lib.sh"
mlp=mlp:layers=2,hidden=8

expect_status 0 "$run" profile --help
expect_out "--micro-batch-sizes"

expect_status 0 "$run" profile --model $mlp --micro-batch-sizes 1,2 --out "$tmp/p.json" --warmup 0 --repeats 2
expect_out "p.json: cpu profile of mlp:layers=2,hidden=8 on .* (fp32), 3 layers, micro-batch sizes 1,2"
grep -qF "layer 3/3 loss (mse_loss):  b=1 fwd" "$tmp/err" || fail "no line for the last layer: $(cat "$tmp/err")"
grep -qF '"source": "cpu"' "$tmp/p.json" || fail "profile source is not cpu: $(head -c 400 "$tmp/p.json")"
# The backward is timed in its two halves, and what I leaves for W is measured.
grep -qE "layer 1/3 block0 \(mlp_block\):  b=1 fwd .* bwd .* \(I .* \+ W .*\)" "$tmp/err" \
  || fail "no I and W times for block0: $(cat "$tmp/err")"
grep -qF '"bwd_weight_us"' "$tmp/p.json" || fail "no bwd_weight_us: $(head -c 400 "$tmp/p.json")"
grep -qF '"weight_grad_stash_bytes"' "$tmp/p.json" || fail "no weight_grad_stash_bytes: $(head -c 400 "$tmp/p.json")"

# The simulator and the trainer accept it.
expect_status 0 "$sim" run --profile "$tmp/p.json" -K 2 -M 2 -N 4
expect_out "(cpu, .*, fp32)"
expect_status 0 "$run" train --model $mlp -K 2 -M 2 -N 4 --steps 1 --profile "$tmp/p.json"
expect_out "balanced on $tmp/p.json"
# ... but not for another model.
expect_status 2 "$run" train --model mlp:layers=3,hidden=8 -K 2 -M 2 -N 4 --steps 1 --profile "$tmp/p.json"
expect_one_error_line "--profile: it profiles 'mlp:layers=2,hidden=8', not --model 'mlp:layers=3,hidden=8'"

expect_cuda "$run" profile --backend cuda --model $mlp --micro-batch-sizes 1 --out "$tmp/q.json"
expect_status 2 "$run" profile --model $mlp --micro-batch-sizes 0 --out "$tmp/q.json"
expect_one_error_line "--micro-batch-sizes"
expect_status 2 "$run" profile --model $mlp --micro-batch-sizes 1,1 --out "$tmp/q.json"
expect_one_error_line "--micro-batch-sizes: 1 is given more than once"
expect_status 2 "$run" profile --model $mlp --micro-batch-sizes 1 --out "$tmp/q.json" --repeats 0
expect_one_error_line "--repeats"
expect_status 2 "$run" profile --model cnn:layers=2 --micro-batch-sizes 1 --out "$tmp/q.json"
expect_one_error_line "cnn"
expect_status 2 "$run" profile --model $mlp --micro-batch-sizes 1 --out /nonexistent/dir/p.json --repeats 1
expect_one_error_line "--out /nonexistent/dir/p.json: cannot write: No such file or directory"
expect_status 2 "$run" profile --model $mlp --out "$tmp/q.json"
expect_one_error_line "--micro-batch-sizes is required"

# With one thread per rank and a core to spare it measures how ranks slow each
# other (beside 1, 2, 4, ... others, as the cores allow), says so, and the
# simulator names it in its header.
if [ "$(nproc)" -ge 2 ]; then
  expect_status 0 "$run" profile --model $mlp --micro-batch-sizes 1,2 --threads-per-rank 1 --warmup 0 --repeats 1 \
    --out "$tmp/c.json"
  grep -q "^contention: 4 passes at b=2 alone and beside 1 other rank$" "$tmp/err" ||
    fail "no contention note: $(cat "$tmp/err")"
  python3 -c 'import json,sys; c = json.load(open(sys.argv[1]))["contention"]; assert c[0]["busy_peers"] == 1 and all(p["slowdown"] >= 0 for p in c), c' \
    "$tmp/c.json" || fail "the contention point: $(head -c 400 "$tmp/c.json")"
  expect_status 0 "$sim" run --profile "$tmp/c.json" -K 2 -M 2 -N 4
  expect_out "^contention  +[0-9.]* % beside 1 other rank(s) computing (the profile's)"
  expect_status 0 "$sim" run --profile "$tmp/c.json" -K 1 -M 2 -N 4
  grep -q "^contention" "$tmp/out" && fail "one rank has no one beside it: $(cat "$tmp/out")"
fi

# Bounded work: a million micro-batch sizes, or a million layers, are refused at once.
expect_status 2 "$run" profile --model mlp:layers=2,hidden=8 --micro-batch-sizes 1..1000000 --out "$tmp/p.json"
expect_one_error_line "--micro-batch-sizes: 1000000 sizes, more than the 256 a profile measures"
expect_status 2 "$run" profile --model mlp:layers=1048576,hidden=8 --micro-batch-sizes 1 --out "$tmp/p.json"
expect_one_error_line "key 'layers' must be an integer from 1 to 16384"

finish "gpipe-run profile"
