#!/usr/bin/env bash
# --threads-per-rank as a user gives it: train, profile and validate name the
# threads in what they print and in the device of what they write; the
# default shares this machine's cores among the ranks; bad values and other
# backends get one error line and exit 2. Usage: threads_per_rank_test.sh GPIPE_SIM GPIPE_RUN
set -u
sim=$1
run=$2
source "$(dirname "$0")/lib.sh"
gpt=transformer:layers=2,hidden=32,heads=2,seq=8
cores=$(nproc)
phrase() { if [ "$1" -eq 1 ]; then echo "one thread per rank"; else echo "$1 threads per rank"; fi; }

expect_status 0 "$run" train --help
expect_out "--threads-per-rank"

# Given: the header, the measurement and the trace's device say so.
expect_status 0 "$run" train --model $gpt -K 2 -M 4 -N 8 --steps 2 --threads-per-rank 2 --trace "$tmp/t.json"
expect_out "^backend     cpu: 2 threads per rank on "
expect_out "^last step, measured (cpu: 2 threads per rank on "
grep -q '"device": *"[^"]*, 2 threads per rank"' "$tmp/t.json" || fail "trace device lacks the threads: $(grep device "$tmp/t.json")"

# The default: the cores shared by the K ranks, at least one thread each.
expect_status 0 "$run" train --model $gpt -K 1 -M 1 -N 4 --steps 1
expect_out "^backend     cpu: $(phrase "$cores") on "
expect_status 0 "$run" train --model $gpt -K 4 -M 4 -N 4 --steps 1
expect_out "^backend     cpu: $(phrase $((cores / 4 > 0 ? cores / 4 : 1))) on "

# A profile measured with 2 threads says so in its device, and so does its line.
expect_status 0 "$run" profile --model $gpt --micro-batch-sizes 1,2 --warmup 0 --repeats 1 \
  --threads-per-rank 2 --out "$tmp/p.json"
expect_out ", 2 threads per rank (fp32)"
grep -q '"device": *"[^"]*, 2 threads per rank"' "$tmp/p.json" || fail "profile device lacks the threads"
# --stages K: the threads a rank of a K-stage run gets by default.
expect_status 0 "$run" profile --model $gpt --micro-batch-sizes 1 --warmup 0 --repeats 1 --stages "$cores" \
  --out "$tmp/q.json"
grep -q '"device": *"[^"]*threads per rank"' "$tmp/q.json" && fail "--stages = cores: one thread per rank, no suffix"

# Validate: one thread count for the whole grid (the largest K's share), so one profile.
expect_status 0 "$run" validate --model $gpt -K 1,2 -M 2 -N 4 --steps 2 --warmup 0 --repeats 1 --threads-per-rank 2
expect_out "profile     measured now at micro-batch sizes 2 (.*, 2 threads per rank, fp32"

# Bad values and other backends.
expect_status 2 "$run" train --model $gpt -K 1 -M 1 -N 4 --steps 1 --threads-per-rank 0
expect_one_error_line "--threads-per-rank"
expect_status 2 "$run" train --model $gpt -K 1 -M 1 -N 4 --steps 1 --threads-per-rank 1025
expect_one_error_line "--threads-per-rank"
expect_status 2 "$run" train --model $gpt -K 1 -M 1 -N 4 --steps 1 --threads-per-rank two
expect_one_error_line "--threads-per-rank"
expect_status 2 "$run" train --backend cuda --model $gpt -K 1 -M 1 -N 4 --steps 1 --threads-per-rank 2
expect_one_error_line "--threads-per-rank applies to --backend cpu only"
expect_status 2 "$run" validate --backend cuda --model $gpt -K 1 -M 1 -N 4 --threads-per-rank 2
expect_one_error_line "--threads-per-rank applies to --backend cpu only"
finish "--threads-per-rank"
