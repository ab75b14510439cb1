#!/usr/bin/env bash
# gpipe-sim's inference workload as a user runs it: `run --workload inference`
# prints the stream's metrics (text and --json) and equals the closed forms on
# equal stages and free links; the open loop and jitter; `sweep --workload
# inference` keeps the best throughput per K within a p99 limit and writes a
# CSV the plot reads; DiT's attention cache is state on its ranks, which
# training refuses; and each bad input is one error line with exit 2.
# Usage: gpipe_sim_inference_test.sh GPIPE_SIM
set -u
sim=$1
source "$(dirname "$0")/lib.sh"

# Four equal layers of 100 us, nothing sent: the closed forms' pipeline.
python3 - "$tmp/equal.json" <<'PY'
import json, sys
layer = lambda i: {"name": f"layer{i}", "kind": "test", "param_bytes": 400, "optimizer_us": 0,
                   "samples": [{"micro_batch_size": 1, "fwd_us": 100, "bwd_us": 200, "input_bytes": 0,
                                "output_bytes": 0, "activation_bytes": 0}]}
json.dump({"format": "gpipe-profile", "version": 1, "model": "test", "device": "test device",
           "source": "analytic", "dtype": "fp32", "link": {"latency_us": 0, "bandwidth_GBps": 1},
           "layers": [layer(i) for i in range(4)]}, open(sys.argv[1], "w"))
PY
equal=(run --workload inference --profile "$tmp/equal.json" -K 4 -b 1)

# A batch of B = 4 items: (B + K - 1) t = 700 us; the steady state of 40 items: min(B, K)/(K t) = 10000/s.
expect_status 0 "$sim" "${equal[@]}" -R 4 -B 4 --json
python3 - "$tmp/out" <<'PY' || fail "closed forms (batch): $(cat "$tmp/out")"
import json, sys
m = json.load(open(sys.argv[1]))["metrics"]
assert m["step_time_us"] == 700 == m["closed_form"]["batch_time_us"], m
assert m["latency_us"]["first"] == 400 == m["closed_form"]["first_latency_us"], m
for key in ("first", "mean", "p50", "p90", "p99", "max"):
    assert key in m["latency_us"], key
assert m["steady_throughput_items_per_s"] is None
PY
expect_status 0 "$sim" "${equal[@]}" -R 40 -B 2 --json
python3 - "$tmp/out" <<'PY' || fail "closed forms (steady): $(cat "$tmp/out")"
import json, sys
m = json.load(open(sys.argv[1]))["metrics"]
assert abs(m["steady_throughput_items_per_s"] - 5000) < 1e-6, m
assert abs(m["closed_form"]["steady_throughput_items_per_s"] - 5000) < 1e-6, m
assert len(m["ranks"]) == 4 and all("utilization" in r and "peak_activation_bytes" in r for r in m["ranks"])
assert m["bottleneck_stage"] == 0
PY

# The default profile, as a user would start: the text report.
expect_status 0 "$sim" run --workload inference -K 4 -b 2 -R 32
for line in "^workload    inference: 32 items of 2 samples, closed loop with at most 4 in flight" \
            "^throughput  .* items/s" "^latency     first .* p50 .* p99 " "^closed form 4 equal stages" \
            "^bottleneck  stage " "^ *rank  layers  forward/item"; do
  expect_out "$line"
done

# Open loop: items every 10 ms on a pipeline far faster: nobody waits, every latency is the first.
expect_status 0 "$sim" "${equal[@]}" -R 10 -B 1 --arrival-interval-us 10000 --json
python3 - "$tmp/out" <<'PY' || fail "open loop: $(cat "$tmp/out")"
import json, sys
d = json.load(open(sys.argv[1]))
l = d["metrics"]["latency_us"]
assert l["first"] == l["max"] == 400, l
assert d["config"]["arrival"] == {"interval_us": 10000.0}, d["config"]
PY
expect_status 0 "$sim" "${equal[@]}" -R 50 -B 2 --arrival-rate 4000 --arrival-seed 3
expect_out "open loop, Poisson at 4000/s (seed 3)"

# Jitter: percentiles over every item of every run.
expect_status 0 "$sim" "${equal[@]}" -R 40 -B 4 --jitter 0.2 --runs 5 --seed 9 --json
python3 - "$tmp/out" <<'PY' || fail "jitter: $(cat "$tmp/out")"
import json, sys
s = json.load(open(sys.argv[1]))["stochastic"]
assert s["runs"] == 5 and s["seed"] == 9 and s["percentile_method"] == "nearest-rank", s
l = s["latency_us"]
assert l["p50"] <= l["p90"] <= l["p99"] <= l["max"], l
assert s["throughput_items_per_s"]["min"] <= s["throughput_items_per_s"]["p50"] <= s["throughput_items_per_s"]["max"]
PY

# The sweep, its summary and CSV, and the plot of it.
expect_status 0 "$sim" sweep --workload inference --profile "$tmp/equal.json" -K 1,2,4 -B 1..4 \
  --micro-batch-sizes 1 -R 16 --latency-limit 500us --out "$tmp/inference.csv"
expect_out "^12 configurations: 12 simulated, 0 skipped"
expect_out "^best throughput per K (p99 latency within 500.0 us)"
[ "$(wc -l <"$tmp/inference.csv")" -eq 13 ] || fail "CSV rows: $(cat "$tmp/inference.csv")"
head -1 "$tmp/inference.csv" | grep -q "^stages,in_flight,micro_batch_size,requests," || fail "CSV head"
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  MPLCONFIGDIR="$tmp" /usr/bin/python3 plots/inference_tradeoff.py "$tmp/inference.csv" --out "$tmp/tradeoff.png" \
    --latency-limit-us 500 >/dev/null 2>"$tmp/err" || fail "plot: $(cat "$tmp/err")"
  [ -s "$tmp/tradeoff.png" ] || fail "no plot written"
fi

# DiT with its attention cache (cache=1): each block keeps 2 T H per sample of
# one stream, so a rank holds min(B, R) streams' worth of each of its blocks'
# from the start (fp32 here: 2 x 16 x 32 x 4 B x b = 2 x B = 2 -> 16 kB a block).
dit=dit:layers=2,hidden=32,heads=4,tokens=16,patch=1,channels=2,classes=3,cache=1
expect_status 0 "$sim" profile --model $dit --device h100 --dtype fp32 --micro-batch-sizes 2 --out "$tmp/dit.json"
expect_status 0 "$sim" run --workload inference --profile "$tmp/dit.json" -K 2 -b 2 -R 8 -B 2 --partition 2,2 --json
python3 - "$tmp/out" <<'PY' || fail "dit cache=1: $(head -c 600 "$tmp/out")"
import json, sys
ranks = json.load(open(sys.argv[1]))["metrics"]["ranks"]
assert [r["state_bytes"] for r in ranks] == [16384, 16384], [r["state_bytes"] for r in ranks]
assert all(r["peak_activation_bytes"] >= r["state_bytes"] for r in ranks), ranks
PY
expect_status 2 "$sim" run --profile "$tmp/dit.json" -K 2 -M 2 -N 4
expect_one_error_line "layer block0 (dit_block) keeps state from one item of an inference stream to the next"

# Bad input: one line, exit 2.
bad() {  # bad TEXT ARGS...: exit 2 with TEXT in one error line
  local text=$1; shift
  expect_status 2 "$sim" "$@"
  expect_one_error_line -- "$text"
}
bad "--in-flight must be at least 1" "${equal[@]}" -B 0
bad "--requests must be at least 1" "${equal[@]}" -R 0
bad "--arrival-rate must be a finite positive number" "${equal[@]}" --arrival-rate inf
bad "--arrival-rate must be a finite positive number" "${equal[@]}" --arrival-rate 0
bad "--in-flight is for inference: add --workload inference" run -K 4 -M 8 -N 32 --in-flight 2
bad "--schedule is for training" "${equal[@]}" --schedule 1f1b
bad "--arrival-interval-us excludes --arrival-rate" "${equal[@]}" --arrival-interval-us 5 --arrival-rate 5
bad "give --micro-batch-size b" run --workload inference -K 4
bad "--stages 9 exceeds the 4 layers" run --workload inference --profile "$tmp/equal.json" -K 9 -b 1
bad "--latency-limit 'soon'" sweep --workload inference --profile "$tmp/equal.json" -K 1 --latency-limit soon
bad "give --batch N" sweep -K 1 -M 1
bad "--requests 10000000 is more than the 1000000 items" "${equal[@]}" -R 10000000
bad "--requests 1000000 x --stages 32 is more than the 16777216 forwards" run --workload inference -K 32 -b 1 -R 1000000
finish gpipe_sim_inference_test
