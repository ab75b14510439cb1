#!/usr/bin/env bash
# Examples, each as a hostile or careless user would type it: every
# one ends in one clear line on stderr with the right exit status (2 for bad
# input, 1 for a failed run), under a 4 GiB address-space limit (not in the
# sanitize build, whose shadow memory needs more address space). Each one's
# time is printed, not asserted (no timed tests); CTest's timeout bounds them.
# Usage: hostile_input_test.sh GPIPE_SIM GPIPE_RUN
source "$(dirname "$0")/lib.sh"
sim=$1
run=$2
profile=tests/data/profiles/valid_two_layers.json

# limited STATUS TEXT CMD...: CMD under the limit exits STATUS with one line containing TEXT.
limited() {
  local want=$1 text=$2; shift 2
  local start=$SECONDS
  if [ -n "${GPIPE_SANITIZED:-}" ]; then
    expect_status "$want" timeout 120 "$@"
  else
    expect_status "$want" bash -c 'ulimit -v 4194304 && exec timeout 120 "$@"' limited "$@"
  fi
  expect_one_error_line -- "$text"
  echo "$((SECONDS - start)) s, exit $want: $*" | cut -c 1-160
}

# A profile with one sample field replaced: profile_with FIELD VALUE.
profile_with() {
  python3 - "$profile" "$1" "$2" >"$tmp/p.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
layer = doc["layers"][0]
field, value = sys.argv[2], sys.argv[3]
if field in ("optimizer_us", "param_bytes"):
    layer[field] = "@"
elif field == "bandwidth_GBps":
    doc["link"][field] = "@"
else:
    layer["samples"][0][field] = "@"
print(json.dumps(doc).replace('"@"', value))
PY
}
fixed=(-K 2 -M 2 -N 8)

# Numbers out of range, in every command that reads a profile.
profile_with fwd_us 1e400
limited 2 "not valid JSON" "$sim" check "$tmp/p.json"
limited 2 "not valid JSON" "$sim" run --profile "$tmp/p.json" "${fixed[@]}"
limited 2 "not valid JSON" "$sim" sweep --profile "$tmp/p.json" "${fixed[@]}"
limited 2 "not valid JSON" "$run" train --profile "$tmp/p.json" --model mlp:layers=2,hidden=8 "${fixed[@]}" --steps 1
"$sim" run --profile "$profile" "${fixed[@]}" --trace "$tmp/t.json" >/dev/null
sed 's/"ts": *[0-9.]*/"ts": 1e400/' "$tmp/t.json" >"$tmp/t400.json"
limited 2 "not valid JSON" "$sim" diff "$tmp/t400.json" "$tmp/t.json"
for value in 1e16 1e15; do
  profile_with fwd_us $value
  limited 2 "fwd_us" "$sim" run --profile "$tmp/p.json" "${fixed[@]}"
done
profile_with optimizer_us 1e16
limited 2 "optimizer_us" "$sim" run --profile "$tmp/p.json" "${fixed[@]}"
profile_with param_bytes 9223372036854775000
limited 2 "param_bytes" "$sim" run --profile "$tmp/p.json" "${fixed[@]}"
profile_with bandwidth_GBps 1e-300
limited 2 "bandwidth_GBps" "$sim" run --profile "$tmp/p.json" "${fixed[@]}"
limited 2 "--link-latency-us" "$sim" run --profile "$profile" "${fixed[@]}" --link-latency-us nan
limited 2 "--jitter" "$sim" run --profile "$profile" "${fixed[@]}" --jitter 1e308
limited 2 "--seed" "$sim" run --profile "$profile" "${fixed[@]}" --jitter 0.1 --seed 18446744073709551616

# Memory sized by the input.
printf '2147483647F0' >"$tmp/s.csv"
limited 2 "s.csv" "$sim" check "$tmp/s.csv"
printf '0F0,0B0\n1F0,1F3999999,1B0\n' >"$tmp/id.csv"
limited 2 "micro-batch 3999999 in a file of 5 actions" "$sim" check "$tmp/id.csv"
python3 -c "print(','.join(f'0B{i}' for i in range(300)))" >"$tmp/many.csv"
limited 2 "(and 299 more)" "$sim" check "$tmp/many.csv"
limited 2 "more than 10000000 cells" "$sim" schedule -K 20000 -M 4
limited 2 "256 MiB" "$sim" check /dev/zero

# Work with no bound.
limited 2 "--max-configurations" "$sim" sweep --profile "$profile" -K 1..6 -M 1..1000000 -N 1000000
limited 2 "--runs" "$sim" run --profile "$profile" "${fixed[@]}" --jitter 0.1 --runs 1000000000
limited 2 "--micro-batch-sizes" "$sim" profile --model mlp:layers=2,hidden=8 --device h100 \
  --micro-batch-sizes 1..1000000 --out "$tmp/o.json"
limited 2 "layers" "$run" train --model mlp:layers=1048576,hidden=8 -K 1 -M 1 -N 1 --steps 1
limited 2 "layers" "$sim" profile --model mlp:layers=64000,hidden=8 --device h100 --micro-batch-sizes 1 \
  --out "$tmp/o.json"

# Error lines: a 50 MB cell is cut, raw CR and non-UTF-8 bytes are escaped.
python3 -c "import sys; sys.stdout.write('0F0,' + 'x' * 50_000_000 + '\n')" >"$tmp/big-cell.csv"
limited 2 "bytes cut" "$sim" check "$tmp/big-cell.csv"
# 2000 bytes of the line, and the "[N bytes cut]" marker.
[ "$(wc -c <"$tmp/err")" -le 2100 ] || fail "error line of $(wc -c <"$tmp/err") bytes"
printf '0F0,0X\r\xff1\n' >"$tmp/raw.csv"
limited 2 "'0X\\x0D\\xFF1'" "$sim" check "$tmp/raw.csv"
grep -q $'\r' "$tmp/err" && fail "raw CR in the error line"

# validate with nothing runnable (every M above N).
limited 2 "nothing to validate" "$run" validate --model mlp:layers=2,hidden=8 -K 1 -M 8 -N 4 --steps 2

finish hostile_input_test
