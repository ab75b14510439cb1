#!/usr/bin/env bash
# torch's runtime as a cost model (sim/runtime_overhead.hpp): scripts/fit-torch-overhead
# fits it on torch's own GPipe and interleaved 1F1B runs of the bench GPT
# (tests/data/torch/), and `gpipe-sim run --runtime-overhead FILE` adds exactly
# what it fitted; the fit's arithmetic on points whose answer is known; and a
# file or flag it cannot take, one error line and exit 2.
# Usage: torch_overhead_test.sh GPIPE_SIM
set -u
sim=$1
source "$(dirname "$0")/lib.sh"
data=tests/data/torch
fit=scripts/fit-torch-overhead
gpipe=$data/pipe_gpipe_rank0.json,$data/pipe_gpipe_rank1.json
interleaved=$data/pipe_interleaved_rank0.json,$data/pipe_interleaved_rank1.json

expect_status 0 "$sim" profile --from-torch-trace "$data/gpt_cpu_b1.json,$data/gpt_cpu_b2.json" \
  --micro-batch-sizes 1,2 --out "$tmp/gpt.json"
expect_status 0 "$fit" --sim "$sim" --profile "$tmp/gpt.json" --gpipe "$gpipe" --interleaved "$interleaved" \
  --interleaved-csv "$data/pipe_interleaved.csv" --torch-version 2.15.0+cu132 --out "$tmp/torch-pp.json"
expect_out "^$tmp/torch-pp.json: torch.distributed.pipelining 2.15.0+cu132 (gloo) on CPU (vm): "
# The runtime's own actions cost what the interleaved run measured of them
# (the diff's means), the transfers both runs' mean.
"$sim" run --profile "$tmp/gpt.json" --schedule-file "$data/pipe_interleaved.csv" -N 8 --partition 1,1,1,1 \
  --trace "$tmp/i.json" >/dev/null || fail "run of the interleaved schedule"
"$sim" diff "$tmp/i.json" --torch-traces "$interleaved" --json --tolerance 1e9 >"$tmp/i_diff.json" ||
  fail "diff of the interleaved run"
python3 - "$tmp/torch-pp.json" "$tmp/i_diff.json" <<'PY' || fail "the fitted file: $(cat "$tmp/torch-pp.json")"
import json, sys
o, d = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert o["format"] == "gpipe runtime overhead" and o["backend"] == "gloo" and o["device"] == "CPU (vm)", o
assert len(o["fitted_on"]) == 5 and o["measured_by"].startswith("scripts/fit-torch-overhead "), o
for k in d["kinds"]:
    if k["kind"] not in ("F", "B"):
        assert abs(o["per_action_us"][k["kind"]] - k["measured_mean_us"]) <= 0.05, (k, o["per_action_us"])
assert {"F", "B"} <= set(o["per_action_us"]) and set(o["per_layer_us"]) == {"F", "B"}, o
assert all(v >= 0 for v in [*o["per_action_us"].values(), *o["per_layer_us"].values()]), o
assert o["transfer_us"] > 0, o
PY

# The fit of d = a + c L through two points, never negative.
python3 - "$fit" <<'PY' || fail "fit_kind"
import importlib.machinery, importlib.util, sys
loader = importlib.machinery.SourceFileLoader("fit", sys.argv[1])
spec = importlib.util.spec_from_loader("fit", loader)
fit = importlib.util.module_from_spec(spec)
loader.exec_module(fit)
assert fit.fit_kind(500.0, 2, 300.0, 1) == (100.0, 200.0)     # 100 + 200 L through both
a, c = fit.fit_kind(600.0, 2, 200.0, 1)                        # a would be -200: 0, c by least squares
assert a == 0.0 and abs(c - (600 * 2 + 200 * 1) / 5) < 1e-9, (a, c)
assert fit.fit_kind(100.0, 2, 300.0, 1) == (200.0, 0.0)        # c would be negative: 0, a the mean
assert fit.fit_kind(-50.0, 2, -20.0, 1) == (0.0, 0.0)          # torch faster than the profile: nothing to add
assert fit.even_runs(8, 4) == [2, 2, 2, 2] and fit.even_runs(7, 2) == [3, 4]
PY

# Applied: every action of a kind costs its per-action cost, plus its per-layer
# cost once per layer of its stage, more than without the file (a file written
# here, so that every term is non-zero).
cat >"$tmp/costs.json" <<'JSON'
{"format": "gpipe runtime overhead", "runtime": "torch.distributed.pipelining", "version": "2.15.0",
 "backend": "gloo", "device": "CPU (vm)", "measured_by": "by this test", "fitted_on": ["none"],
 "per_action_us": {"F": 10, "B": 20}, "per_layer_us": {"F": 1, "B": 3}, "transfer_us": 50}
JSON
expect_status 0 "$sim" run --profile "$tmp/gpt.json" -K 2 -M 4 -N 8 --schedule gpipe --partition 1,3 \
  --trace "$tmp/plain.json"
expect_status 0 "$sim" run --profile "$tmp/gpt.json" -K 2 -M 4 -N 8 --schedule gpipe --partition 1,3 \
  --runtime-overhead "$tmp/costs.json" --trace "$tmp/costed.json"
expect_out "^runtime     torch.distributed.pipelining 2.15.0 (gloo) on CPU (vm): F=10 us, B=20 us an action; F=1 us, B=3 us a layer; transfers 50 us ($tmp/costs.json)$"
python3 - "$tmp/plain.json" "$tmp/costed.json" <<'PY' || fail "the costs as applied"
import json, re, sys
def actions(path):
    out = {}
    for e in json.load(open(path))["traceEvents"]:
        m = re.fullmatch(r"(\d+)([FB])(\d+)", e.get("name", ""))
        if e.get("ph") == "X" and m:
            out[e["name"]] = (int(m[1]), m[2], e["dur"])
    return out
plain, costed = actions(sys.argv[1]), actions(sys.argv[2])
assert plain.keys() == costed.keys() and len(plain) == 16, (plain.keys(), costed.keys())
layers = [1, 3]
for name, (stage, kind, dur) in costed.items():
    extra = (10 + 1 * layers[stage]) if kind == "F" else (20 + 3 * layers[stage])
    assert abs(dur - plain[name][2] - extra) < 0.01, (name, dur, plain[name][2], extra)
PY

# The committed overhead traces (tests/data/torch/overhead/, gzip as torch
# writes x.json.gz): fitted on the 2-block GPT, checked on the 6-block one,
# the numbers of docs/torch.md's table (run b).
o=$data/overhead
for m in gpt2 gpt6; do
  expect_status 0 "$sim" profile --from-torch-trace "$o/${m}_b1.json.gz,$o/${m}_b2.json.gz" --micro-batch-sizes 1,2 \
    --layers 'layer[0-9]+' --out "$tmp/$m.json"
done
expect_status 0 "$fit" --sim "$sim" --profile "$tmp/gpt2.json" \
  --gpipe "$o/gpt2_gpipe_rank0.json.gz,$o/gpt2_gpipe_rank1.json.gz" \
  --interleaved "$o/gpt2_interleaved_rank0.json.gz,$o/gpt2_interleaved_rank1.json.gz" \
  --interleaved-csv "$o/gpt2_interleaved.csv" --torch-version 2.15.0+cu132 --out "$tmp/fitted.json"
expect_out "F=318.7 us, B=85.1 us, REDUCE_GRAD=132.9 us, .* an action; F=0.0 us, B=424.2 us a layer; transfers 507.2 us$"
check_6_blocks() {  # NAME RUN-FLAGS...: the step error of the 6-block run NAME predicted with the fitted file
  local name=$1; shift
  "$sim" run --profile "$tmp/gpt6.json" "$@" --runtime-overhead "$tmp/fitted.json" --trace "$tmp/$name.json" \
    >/dev/null || fail "run of the 6-block $name"
  "$sim" diff "$tmp/$name.json" --torch-traces "$o/gpt6_${name}_rank0.json.gz,$o/gpt6_${name}_rank1.json.gz" --json \
    --tolerance 1e9 | python3 -c 'import json, sys; print(round(json.load(sys.stdin)["step_time_error_pct"], 1))'
}
got=$(check_6_blocks gpipe -K 2 -M 4 -N 8 --schedule gpipe --partition 4,4)
[ "$got" = "-25.0" ] || fail "the 6-block GPipe check: $got %, docs/torch.md says -25.0 %"
got=$(check_6_blocks interleaved --schedule-file "$o/gpt6_interleaved.csv" -N 8 --partition 2,2,2,2)
[ "$got" = "-0.9" ] || fail "the 6-block interleaved check: $got %, docs/torch.md says -0.9 %"

# What it cannot take.
expect_status 2 "$sim" run --profile "$tmp/gpt.json" -K 2 -M 4 -N 8 --runtime-overhead "$tmp/none.json"
expect_one_error_line "$tmp/none.json: cannot read"
expect_status 2 "$sim" run --profile "$tmp/gpt.json" -K 2 -M 4 -N 8 --runtime-overhead "$tmp/gpt.json"
expect_one_error_line "$tmp/gpt.json: format: expected \"gpipe runtime overhead\" (a file of scripts/fit-torch-overhead)"
expect_status 2 "$sim" run --profile "$tmp/gpt.json" -K 2 -M 4 -N 8 --runtime-overhead "$tmp/costs.json" \
  --action-overhead-us F=1
expect_one_error_line "--runtime-overhead and --action-overhead-us are two answers to one question: give one"
expect_status 2 "$fit" --sim "$sim" --profile "$tmp/none.json" --gpipe "$gpipe" --interleaved "$interleaved" \
  --interleaved-csv "$data/pipe_interleaved.csv" --torch-version 2.15.0 --out "$tmp/x.json"
expect_one_error_line "fit-torch-overhead: $tmp/none.json: no such file"
expect_status 2 "$fit" --sim "$sim" --profile "$tmp/gpt.json" --gpipe "$interleaved" --interleaved "$interleaved" \
  --interleaved-csv "$data/pipe_interleaved.csv" --torch-version 2.15.0 --out "$tmp/x.json"
expect_one_error_line "fit-torch-overhead: gpipe-sim diff: "

finish torch_overhead_test
