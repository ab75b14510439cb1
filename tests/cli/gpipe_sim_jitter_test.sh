#!/usr/bin/env bash
# gpipe-sim run's stochastic mode as a user runs it: --jitter/--runs/--seed on
# the default profile print nearest-rank percentiles (text and --json), the
# same seed repeats exactly, and bad values give one error line and exit 2.
# Usage: gpipe_sim_jitter_test.sh GPIPE_SIM
set -u
sim=$1
source "$(dirname "$0")/lib.sh"
config=(run -K 4 -M 8 -N 32)

expect_status 0 "$sim" "${config[@]}" --jitter 0.05 --runs 20
grep -q "^over 20 runs (jitter CV 0.05, seed 1; nearest-rank percentiles)$" "$tmp/out" \
  || fail "stochastic header: $(cat "$tmp/out")"
grep -q "^step time  *p5 .* p50 .* p95 " "$tmp/out" || fail "step time percentiles: $(cat "$tmp/out")"
grep -q "^bubble  *p5 .* p50 " "$tmp/out" || fail "bubble percentiles: $(cat "$tmp/out")"
cp "$tmp/out" "$tmp/first"
expect_status 0 "$sim" "${config[@]}" --jitter 0.05 --runs 20
cmp -s "$tmp/out" "$tmp/first" || fail "same seed, different output"
expect_status 0 "$sim" "${config[@]}" --jitter 0.05 --runs 20 --seed 2
grep -E "^(step time|bubble)  *p5" "$tmp/out" >"$tmp/second_line"
grep -E "^(step time|bubble)  *p5" "$tmp/first" | cmp -s - "$tmp/second_line" && fail "--seed 2 gave seed 1's percentiles"

# Without --jitter: the deterministic table only.
expect_status 0 "$sim" "${config[@]}"
grep -q "p50" "$tmp/out" && fail "percentiles without --jitter: $(cat "$tmp/out")"

expect_status 0 "$sim" "${config[@]}" --jitter 0.1 --runs 5 --seed 7 --json
python3 - "$tmp/out" <<'PY' || fail "--json stochastic object: $(cat "$tmp/out")"
import json, sys
d = json.load(open(sys.argv[1]))
s = d["stochastic"]
assert s["runs"] == 5 and s["seed"] == 7 and s["jitter_cv"] == 0.1, s
assert s["percentile_method"] == "nearest-rank"
for key in ("step_time_us", "bubble_fraction", "throughput_samples_per_s"):
    v = s[key]
    assert v["min"] <= v["p5"] <= v["p50"] <= v["p95"] <= v["max"], (key, v)
    assert v["deterministic"] == d["metrics"][key], key
PY
expect_status 0 "$sim" "${config[@]}" --json
grep -q '"stochastic"' "$tmp/out" && fail "stochastic object without --jitter"

expect_status 2 "$sim" "${config[@]}" --jitter -1
expect_one_error_line "--jitter must be a coefficient of variation from 0 to 10, got -1"
expect_status 2 "$sim" "${config[@]}" --jitter 0.05 --runs 0
expect_one_error_line "--runs: Value 0 not in range 1 to 100000"
expect_status 2 "$sim" "${config[@]}" --jitter nan
expect_one_error_line "--jitter"
expect_status 2 "$sim" "${config[@]}" --jitter 0.05 --seed -1
expect_one_error_line "--seed"

# A seed past 2^64 - 1 is refused, not clamped.
expect_status 2 "$sim" run --profile tests/data/profiles/valid_two_layers.json -K 2 -M 2 -N 4 --jitter 0.1 \
  --seed 18446744073709551616
expect_one_error_line "--seed: a seed is an integer from 0 to 18446744073709551615, got 18446744073709551616"

# Work is bounded: a billion jittered runs, or a grid of six million, is refused before it starts.
expect_status 2 "$sim" run --profile tests/data/profiles/valid_two_layers.json -K 2 -M 2 -N 4 --jitter 0.1 \
  --runs 1000000000
expect_one_error_line "--runs: Value 1000000000 not in range 1 to 100000"
expect_status 2 "$sim" sweep --profile tests/data/profiles/valid_two_layers.json -K 1..6 -M 1..1000000 -N 1000000
expect_one_error_line "the grid has 6000000 configurations, more than --max-configurations 100000"

finish "gpipe-sim run --jitter"
