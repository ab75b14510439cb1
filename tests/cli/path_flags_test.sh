#!/usr/bin/env bash
# Every flag and argument of both tools that names a file (tools/common/path_flag.hpp):
# an empty name is bad usage (exit 2, one line naming the flag), where it used
# to read as "no file" (gpipe-sim run --trace '' wrote nothing and exited 0);
# an output path that cannot be written fails before the work, not after it.
# Usage: path_flags_test.sh GPIPE_SIM GPIPE_RUN
source "$(dirname "$0")/lib.sh"
sim=$1
run=$2
profile=tests/data/profiles/valid_two_layers.json
fixed=(-K 2 -M 2 -N 8)
model=(--model mlp:layers=2,hidden=8)

# empty FLAG CMD...: CMD, in which FLAG is given '', exits 2 with one line naming FLAG, and prints nothing.
empty() {
  local flag=$1; shift
  expect_status 2 "$@"
  expect_one_error_line -- "$flag: an empty path names no file"
  [ -s "$tmp/out" ] && fail "'$*' printed: $(cat "$tmp/out")"
}

empty --profile "$sim" run --profile '' "${fixed[@]}"
empty --schedule-file "$sim" run --profile "$profile" --schedule-file '' "${fixed[@]}"
empty --trace "$sim" run --profile "$profile" "${fixed[@]}" --trace ''
empty --profile "$sim" sweep --profile '' "${fixed[@]}"
empty --schedule-file "$sim" sweep --profile "$profile" --schedule-file '' -N 8
empty --out "$sim" sweep --profile "$profile" "${fixed[@]}" --out ''
empty --json-out "$sim" sweep --profile "$profile" "${fixed[@]}" --json-out ''
empty --out "$sim" profile "${model[@]}" --device h100 --micro-batch-sizes 1 --out ''
empty --device-file "$sim" profile "${model[@]}" --device h100 --device-file '' --micro-batch-sizes 1 --out "$tmp/p.json"
empty FILE "$sim" check ''
empty PREDICTED "$sim" diff '' "$tmp/m.json"
empty MEASURED "$sim" diff "$tmp/p.json" ''
empty --profile "$run" train "${model[@]}" "${fixed[@]}" --steps 1 --profile ''
empty --schedule-file "$run" train "${model[@]}" -N 8 --steps 1 --schedule-file ''
empty --trace "$run" train "${model[@]}" "${fixed[@]}" --steps 1 --trace ''
empty --out "$run" profile "${model[@]}" --micro-batch-sizes 1 --out ''
empty --profile "$run" validate "${model[@]}" "${fixed[@]}" --steps 2 --profile ''

# gpipe-sim's output paths are tried before the simulation: nothing is printed.
expect_status 2 "$sim" run --profile "$profile" "${fixed[@]}" --trace "$tmp/none/t.json"
expect_one_error_line -- "--trace $tmp/none/t.json: cannot write: No such file or directory"
[ -s "$tmp/out" ] && fail "run with an unwritable --trace printed the prediction"
expect_status 2 "$sim" sweep --profile "$profile" "${fixed[@]}" --out "$tmp"
expect_one_error_line -- "--out $tmp: cannot write: Is a directory"
[ -s "$tmp/out" ] && fail "sweep with an unwritable --out printed: $(cat "$tmp/out")"
expect_status 2 "$sim" sweep --profile "$profile" "${fixed[@]}" --json-out "$tmp/none/s.json"
expect_one_error_line -- "--json-out $tmp/none/s.json: cannot write"
# One that can be written is written.
expect_status 0 "$sim" sweep --profile "$profile" "${fixed[@]}" --out "$tmp/s.csv"
[ -s "$tmp/s.csv" ] || fail "sweep --out wrote no CSV"

finish path_flags_test
