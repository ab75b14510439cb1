#!/usr/bin/env bash
# gpipe-sim and PyTorch as a user meets them, on the traces torch wrote of the
# bench GPT (tests/data/torch/): profile --from-torch-trace (the profile it
# writes, what it says it did not measure, a run from it) and diff
# --torch-traces (torch's own pipeline run against a prediction); and every
# trace they cannot read (edited copies: without module names, cut short,
# without memory events, a rank missing, clocks apart) or a flag they cannot
# take, one error line and exit 2.
# Usage: gpipe_sim_torch_test.sh GPIPE_SIM
set -u
sim=$1
source "$(dirname "$0")/lib.sh"
data=tests/data/torch
traces=$data/gpt_cpu_b1.json,$data/gpt_cpu_b2.json

expect_status 0 "$sim" profile --from-torch-trace "$traces" --micro-batch-sizes 1,2 --torch-version 2.15.0+cu132 \
  --model transformer:layers=2,hidden=32,heads=2,seq=16,vocab=64 --out "$tmp/gpt.json"
expect_out "^$tmp/gpt.json: torch-trace profile of transformer:layers=2,hidden=32,heads=2,seq=16,vocab=64 on CPU (vm) (fp32), 4 layers (Embed_0, Block_0, Block_1, Head_0), micro-batch sizes 1,2$"
expect_out "^measured from PyTorch 2.15.0+cu132 profiler traces of CPU ops: $data/gpt_cpu_b1.json (b=1, 3 steps by ProfilerStep#N spans, [0-9.]* to [0-9.]* us a step ([0-9.]* % apart); each time the median of the steps; the profile holds [0-9.]* us of the [0-9.]* us step, [-+][0-9.]* %)"
expect_out "^not measured: output_bytes of the last layer (Head_0)"
python3 - "$tmp/gpt.json" <<'PY' || fail "the profile: $(cat "$tmp/gpt.json")"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["source"] == "torch-trace" and p["measured_from"].startswith("PyTorch 2.15.0"), p
assert [l["param_bytes"] for l in p["layers"]] == [10240, 50816, 50816, 8448], p["layers"]
assert len(p["not_measured"]) >= 4, p["not_measured"]
PY
# A profile like any other: the simulator runs it.
expect_status 0 "$sim" run --profile "$tmp/gpt.json" -K 2 -M 2 -N 4
expect_out "^profile     $tmp/gpt.json (torch-trace, CPU (vm), fp32)"

# Four steps taken the ordinary way (no prof.step()): split by the model's
# forward, their spread said, the median taken or the step asked for.
expect_status 0 "$sim" profile --from-torch-trace $data/steps_unmarked.json --micro-batch-sizes 1 --out "$tmp/steps.json"
expect_out "(b=1, 4 steps by the forward of module GPT_0, [0-9.]* to [0-9.]* us a step ([0-9.]* % apart); each time the median of the steps; the profile holds [0-9.]* us of the [0-9.]* us step, [-+][0-9.]* %)"
expect_status 0 "$sim" profile --from-torch-trace $data/steps_unmarked.json --micro-batch-sizes 1 --step 3 --out "$tmp/step3.json"
expect_out "; step 3 taken; the profile holds "
expect_status 2 "$sim" profile --from-torch-trace $data/steps_unmarked.json --micro-batch-sizes 1 --step 5 --out "$tmp/p.json"
expect_one_error_line "steps_unmarked.json: --step 5: the trace has 4 steps (split by the forward of module GPT_0); give 1 to 4"
expect_status 2 "$sim" profile --model mlp:layers=2,hidden=8 --device h100 --micro-batch-sizes 1 --step 2 --out "$tmp/p.json"
expect_one_error_line "--step requires --from-torch-trace"
expect_status 0 "$sim" profile --from-torch-trace $data/steps_labels.json --micro-batch-sizes 1 --layers 'layer[0-9]+' \
  --no-activation-bytes --out "$tmp/labels.json"
expect_out "(b=1, 4 steps by the span of layer layer0, "

# Flags: one line, exit 2.
expect_status 2 "$sim" profile --from-torch-trace "$traces" --micro-batch-sizes 1 --out "$tmp/p.json"
expect_one_error_line "--micro-batch-sizes: 1 sizes for 2 traces: give each trace's micro-batch size, in the same order"
expect_status 2 "$sim" profile --from-torch-trace "$traces" --micro-batch-sizes 1,2 --device h100 --out "$tmp/p.json"
expect_one_error_line "--device excludes --from-torch-trace"
expect_status 2 "$sim" profile --micro-batch-sizes 1 --out "$tmp/p.json"
expect_one_error_line "give --model and --device (an analytic profile), or --from-torch-trace"
expect_status 2 "$sim" profile --model mlp:layers=2,hidden=8 --device h100 --micro-batch-sizes 1 --layers 'Block.*' \
  --out "$tmp/p.json"
expect_one_error_line "--layers requires --from-torch-trace"
expect_status 2 "$sim" profile --from-torch-trace "$data/gpt_cpu_b1.json" --micro-batch-sizes 1 --layers 'Conv.*' \
  --out "$tmp/p.json"
expect_one_error_line "no module or record_function label matches --layers 'Conv.*'"

# Bad traces, as edited copies: one line naming what is missing, exit 2.
python3 - "$data/gpt_cpu_b1.json" "$tmp" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
events = t["traceEvents"]
json.dump(dict(t, traceEvents=[e for e in events if not e.get("name", "").startswith("nn.Module")]),
          open(sys.argv[2] + "/no_modules.json", "w"))
json.dump(dict(t, traceEvents=[e for e in events if e.get("name") != "[memory]"], profile_memory=0),
          open(sys.argv[2] + "/no_memory.json", "w"))
json.dump(dict(t, traceEvents=[e for e in events if "evaluate_function" not in e.get("name", "")]),
          open(sys.argv[2] + "/no_backward.json", "w"))
open(sys.argv[2] + "/cut.json", "w").write(open(sys.argv[1]).read()[:20000])
PY
expect_status 2 "$sim" profile --from-torch-trace "$tmp/no_modules.json" --micro-batch-sizes 1 --out "$tmp/p.json"
expect_one_error_line "$tmp/no_modules.json: no module events: profile an eager model with with_stack=True"
expect_status 2 "$sim" profile --from-torch-trace "$tmp/no_memory.json" --micro-batch-sizes 1 --out "$tmp/p.json"
expect_one_error_line "$tmp/no_memory.json: no memory events, so activation bytes cannot be measured"
expect_status 0 "$sim" profile --from-torch-trace "$tmp/no_memory.json" --micro-batch-sizes 1 --no-activation-bytes \
  --out "$tmp/p.json"
expect_out "^not measured: activation_bytes: no memory events"
expect_status 2 "$sim" profile --from-torch-trace "$tmp/no_backward.json" --micro-batch-sizes 1 --out "$tmp/p.json"
expect_one_error_line "$tmp/no_backward.json: no backward after the forward"
expect_status 2 "$sim" profile --from-torch-trace "$tmp/cut.json" --micro-batch-sizes 1 --out "$tmp/p.json"
expect_one_error_line "$tmp/cut.json: not valid JSON"
expect_status 2 "$sim" profile --from-torch-trace "$tmp/missing.json" --micro-batch-sizes 1 --out "$tmp/p.json"
expect_one_error_line "missing.json"

# torch's pipeline runs against a prediction from that profile: GPipe K=2 and
# torch's own interleaved schedule (its CSV), actions matched one by one.
ranks=$data/pipe_gpipe_rank0.json,$data/pipe_gpipe_rank1.json
expect_status 0 "$sim" run --profile "$tmp/gpt.json" -K 2 -M 4 -N 8 --schedule gpipe --partition 2,2 --trace "$tmp/pred.json"
expect_status 1 "$sim" diff "$tmp/pred.json" --torch-traces "$ranks" --torch-timeline "$tmp/torch.json"
expect_out "^torch       2 ranks (ScheduleGPipe's labels), clock: one host's clock (the traces' base times), error at most 0.0 us"
expect_out "^actions     matched 32, only in predicted 0, only in measured 0$"
expect_out "the prediction's 2 STEPs left out (torch's optimizer runs outside its schedule)"
expect_out "^  rank 0    idle "
expect_out "longest measured wait: "
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["otherData"]["gpipe"]["source"]["kind"] == "torch"' \
  "$tmp/torch.json" || fail "--torch-timeline: $(tail -c 300 "$tmp/torch.json")"
expect_status 0 "$sim" diff "$tmp/torch.json" "$tmp/torch.json"  # a gpipe trace like any other
expect_status 0 "$sim" run --profile "$tmp/gpt.json" --schedule-file "$data/pipe_interleaved.csv" -N 8 \
  --partition 1,1,1,1 --trace "$tmp/pred_il.json"
expect_status 1 "$sim" diff "$tmp/pred_il.json" --torch-traces "$data/pipe_interleaved_rank1.json,$data/pipe_interleaved_rank0.json" --json
python3 - "$tmp/out" <<'PY' || fail "diff --json of the interleaved run: $(head -c 400 "$tmp/out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["matched"] == 120 and d["only_in_measured"] == [], d["only_in_measured"]
w = d["waits"]["measured"]
assert len(w) == 2 and all(abs(r["peer_us"] + r["transfer_us"] + r["other_us"] + r["after_last_us"] - r["idle_us"]) < 1e-6 for r in w), w
PY
# The same run profiled over 4 steps without prof.step(): the median step
# compared, the spread said; or the step asked for.
steps=$data/pipe_interleaved_steps_rank0.json,$data/pipe_interleaved_steps_rank1.json
expect_status 1 "$sim" diff "$tmp/pred_il.json" --torch-traces "$steps"
expect_out "^torch step  [1-4] of 4 (the median), [0-9.]* us; the steps [0-9.]* to [0-9.]* us ([0-9.]* % apart)$"
expect_out "^actions     matched 120, only in predicted 0, only in measured 0$"
expect_status 1 "$sim" diff "$tmp/pred_il.json" --torch-traces "$steps" --torch-step 3 --json
python3 - "$tmp/out" <<'PY' || fail "diff --torch-step 3 --json: $(head -c 400 "$tmp/out")"
import json, sys
t = json.load(open(sys.argv[1]))["torch"]
assert (t["steps"], t["step"], t["step_taken"], len(t["step_spans_us"])) == (4, 3, "asked for", 4), t
PY
expect_status 2 "$sim" diff "$tmp/pred_il.json" --torch-traces "$steps" --torch-step 5
expect_one_error_line "--torch-step 5: the traces hold 4 steps; give 1 to 4"
expect_status 2 "$sim" diff "$tmp/pred_il.json" "$tmp/pred_il.json" --torch-step 2
expect_one_error_line "--torch-step requires --torch-traces"
# Bad runs: one line, exit 2.
expect_status 2 "$sim" diff "$tmp/pred.json" --torch-traces "$data/pipe_gpipe_rank0.json"
expect_one_error_line "--torch-traces: rank 1's trace is missing (the run had 2 ranks)"
expect_status 2 "$sim" diff "$tmp/pred.json" "$tmp/pred.json" --torch-traces "$ranks"
expect_one_error_line "give MEASURED (a gpipe trace) or --torch-traces"
expect_status 2 "$sim" diff "$tmp/pred_il.json" --torch-traces "$ranks"
expect_one_error_line "differ"
python3 - "$data/pipe_gpipe_rank1.json" "$tmp" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
keep = lambda e: not (e.get("cat") == "user_annotation" and e["name"].split(" ")[0] in ("Forward", "Backward"))
json.dump(dict(t, traceEvents=[e for e in t["traceEvents"] if keep(e)]), open(sys.argv[2] + "/unlabelled.json", "w"))
json.dump(dict(t, baseTimeNanoseconds=t["baseTimeNanoseconds"] + 5 * 10**9, host_name="elsewhere"),
          open(sys.argv[2] + "/skewed.json", "w"))
PY
expect_status 2 "$sim" diff "$tmp/pred.json" --torch-traces "$data/pipe_gpipe_rank0.json,$tmp/unlabelled.json"
expect_one_error_line "$tmp/unlabelled.json: no pipeline actions: torch.distributed.pipelining labels them PP:<action>"
expect_status 1 "$sim" diff "$tmp/pred.json" --torch-traces "$data/pipe_gpipe_rank0.json,$tmp/skewed.json"
expect_out "clock: barrier exits aligned, error at most"

# Calibrated to torch: a fixed cost per action on top of the profile's (here
# the runtime's own actions, which no profile prices, at their measured
# means), and a bad one refused.
expect_status 0 "$sim" run --profile "$tmp/gpt.json" --schedule-file "$data/pipe_interleaved.csv" -N 8 \
  --partition 1,1,1,1 --link-latency-us 695.2 \
  --action-overhead-us UNSHARD=12.6,RESHARD=5.7,REDUCE_GRAD=68.9,WAIT_REDUCE_GRAD=7.5 --trace "$tmp/cal.json"
expect_status 1 "$sim" diff "$tmp/cal.json" --torch-traces "$data/pipe_interleaved_rank0.json,$data/pipe_interleaved_rank1.json" --json
python3 - "$tmp/out" <<'PY' || fail "the calibrated diff: $(head -c 400 "$tmp/out")"
import json, sys
d = json.load(open(sys.argv[1]))
means = {k["kind"]: round(k["predicted_mean_us"] - k["measured_mean_us"], 1) for k in d["kinds"]}
calibrated = {k: means[k] for k in ("UNSHARD", "RESHARD", "REDUCE_GRAD", "WAIT_REDUCE_GRAD")}
assert all(v == 0.0 for v in calibrated.values()), means  # the overheads are the measured means
PY
expect_status 2 "$sim" run --profile "$tmp/gpt.json" -K 2 -M 4 -N 8 --action-overhead-us SEND_F=3
expect_one_error_line "--action-overhead-us: 'SEND_F' is not a kind of action on the compute stream"

finish "gpipe-sim and PyTorch traces"
