"""Tests of the plot scripts (plots/): the CSV and trace loaders, and each script
run as a user runs it, on the hand-made inputs in tests/plots/data/.

data/sweep.csv: an 8-layer model, batch 48, schedules gpipe and 1f1b, recompute
never and always, K in {1, 2, 4, 8}, M in {1, ..., 32}; M = 32 does not divide
the batch, so those 16 rows are skipped; 25 ok rows do not fit memory.
data/trace_sim_gpipe_k2_m2.json: the simulator's GPipe K=2 M=2 step (F 100 us,
B 200 us, transfers 20 us, STEP 30 us). data/trace_cpu_gpipe_k2_m2.json: a
measured run of the same schedule, two steps from ts 15000 us, whose slow
transfers overlap so that a second send and receive lane (tids 3, 4) appear.
data/trace_sim_dualpipev_overlap.json: `gpipe-sim run --schedule-file
tests/data/torch_csv/dualpipev_k2_m4_comms.csv --overlap-f-b 0.8` on the shipped
transformer-24L-h1024-h100 profile, N = 8: the backward of each overlapped pair on
its own lane (tid 1000000), send waits and housekeeping of zero length.
data/inference_sweep.csv: `gpipe-sim sweep --workload inference -K 1,2,4 -B 1..4
--micro-batch-sizes 1,2 -R 32` on an analytic dit-xl-2 profile on the H200.
data/validation.csv: a `gpipe-run validate --out` file, 3 run configurations
(one whose measured activation peak differs) and 2 skipped.
data/plan.csv: `gpipe-sim plan --model llama:layers=8,hidden=512,heads=8,kv_heads=2,
ffn=1408,seq=512,vocab=1024 --device h100 --gpus 8 --gpus-per-node 4 --global-batch 32
--micro-batch-sizes 1,4`: 113 rows, 92 that fit, 21 that cannot exist (T = 4 splits
the 2 key/value heads of none).
Run: /usr/bin/python3 -m unittest discover -s tests/plots
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLOTS = os.path.join(ROOT, "plots")
DATA = os.path.join(ROOT, "tests", "plots", "data")
SWEEP = os.path.join(DATA, "sweep.csv")
SIM_TRACE = os.path.join(DATA, "trace_sim_gpipe_k2_m2.json")
CPU_TRACE = os.path.join(DATA, "trace_cpu_gpipe_k2_m2.json")
VALIDATION = os.path.join(DATA, "validation.csv")
OVERLAP_TRACE = os.path.join(DATA, "trace_sim_dualpipev_overlap.json")
INFERENCE_SWEEP = os.path.join(DATA, "inference_sweep.csv")
PLAN = os.path.join(DATA, "plan.csv")
SCRIPTS = ["bubble_vs_m.py", "bubble_by_schedule.py", "sweep_heatmap.py", "gantt.py", "memory.py",
           "validation.py", "inference_tradeoff.py", "plan_heatmap.py"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

sys.path.insert(0, PLOTS)
import common  # noqa: E402  (found through the path above)
import validation  # noqa: E402


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


class TempDirTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def edited_trace(self, name, edit):
        """A copy of the simulated trace after edit(doc), written to the temp dir."""
        doc = json.loads(read(SIM_TRACE))
        edit(doc)
        return self.write(name, json.dumps(doc))


class SweepLoaderTest(TempDirTest):
    def test_counts_rows_statuses_and_fits(self):
        rows = common.load_sweep(SWEEP)
        self.assertEqual(len(rows), 96)
        self.assertEqual(sum(r.status == "skipped" for r in rows), 16)
        self.assertEqual(sum(r.fits is False for r in rows), 25)
        self.assertEqual(sum(r.fits is None for r in rows), 16)  # exactly the skipped rows
        skipped = next(r for r in rows if r.status == "skipped")
        self.assertEqual(skipped.microbatches, 32)
        self.assertIn("not divisible", skipped.reason)
        self.assertIsNone(skipped.metrics["bubble_fraction"])
        first = rows[0]
        self.assertEqual((first.schedule, first.recompute, first.stages, first.microbatches),
                         ("gpipe", "never", 1, 1))
        self.assertEqual(first.metrics["peak_memory_bytes"], 35040000000)
        self.assertIsInstance(first.metrics["peak_memory_bytes"], int)
        self.assertEqual(first.line, 2)

    def test_select_rows_defaults_to_first_schedule_without_recompute(self):
        schedule, rows = common.select_rows(common.load_sweep(SWEEP), SWEEP)
        self.assertEqual(schedule, "gpipe")
        self.assertEqual(len(rows), 24)
        self.assertTrue(all(r.recompute == "never" for r in rows))
        schedule, rows = common.select_rows(common.load_sweep(SWEEP), SWEEP, "1f1b", "always")
        self.assertEqual((schedule, len(rows)), ("1f1b", 24))

    def test_select_rows_names_what_the_file_has(self):
        rows = common.load_sweep(SWEEP)
        with self.assertRaisesRegex(common.InputError, "schedule 'zb'.*has: gpipe, 1f1b"):
            common.select_rows(rows, SWEEP, "zb")
        with self.assertRaisesRegex(common.InputError, "recompute 'sometimes'.*never, always"):
            common.select_rows(rows, SWEEP, None, "sometimes")

    def test_analytic_curve_is_the_gpipe_closed_form(self):
        self.assertEqual(common.analytic_bubble(1, 8), 0.0)
        self.assertEqual(common.analytic_bubble(4, 8), 3 / 11)
        self.assertEqual(common.analytic_bubble(2, 1), 0.5)
        import numpy as np
        curve = common.analytic_bubble(4, np.array([1.0, 2.0, 4.0]))
        np.testing.assert_allclose(curve, [3 / 4, 3 / 5, 3 / 7], rtol=1e-15)
        # The CSV's own column (6 decimals) agrees with the closed form to its precision.
        for r in common.load_sweep(SWEEP):
            if r.status == "ok":
                self.assertAlmostEqual(r.metrics["bubble_fraction_analytic"],
                                       common.analytic_bubble(r.stages, r.microbatches), places=6)

    def bad_sweep(self, header_edit=None, row_edit=None):
        lines = read(SWEEP).splitlines()
        if header_edit:
            lines[0] = header_edit(lines[0])
        if row_edit:
            lines[1] = row_edit(lines[1])
        return self.write("bad.csv", "\n".join(lines) + "\n")

    def test_rejects_bad_csv_naming_line_and_column(self):
        cases = [
            (dict(header_edit=lambda h: h.replace(",fits", "")), "missing column\\(s\\): fits"),
            (dict(row_edit=lambda r: r.replace(",ok,", ",done,")), ":2: column 'status'"),
            (dict(row_edit=lambda r: r.replace("46430.000", "fast")),
             ":2: column 'step_time_us' is not a number: 'fast'"),
            (dict(row_edit=lambda r: r.replace("46430.000", "")),
             ":2: column 'step_time_us' is empty in an ok row"),
            (dict(row_edit=lambda r: "gpipe,never,0" + r[len("gpipe,never,1"):]),
             ":2: column 'stages' must be a positive integer"),
            (dict(row_edit=lambda r: r[:-1] + "yes"), ":2: column 'fits' must be 1, 0 or empty"),
            (dict(row_edit=lambda r: r + ",extra"), ":2: expected 19 fields"),
        ]
        for kwargs, message in cases:
            with self.subTest(message=message):
                with self.assertRaisesRegex(common.InputError, message):
                    common.load_sweep(self.bad_sweep(**kwargs))

    def test_rejects_duplicates_empty_and_missing_files(self):
        lines = read(SWEEP).splitlines()
        dup = self.write("dup.csv", "\n".join(lines[:3] + [lines[2]]) + "\n")
        with self.assertRaisesRegex(common.InputError, ":4: duplicate row for K=1 M=2 .*line 3"):
            common.select_rows(common.load_sweep(dup), dup)
        with self.assertRaisesRegex(common.InputError, "empty file"):
            common.load_sweep(self.write("empty.csv", ""))
        with self.assertRaisesRegex(common.InputError, "no data rows"):
            common.load_sweep(self.write("header.csv", lines[0] + "\n"))
        with self.assertRaisesRegex(common.InputError, "cannot read '.*none.csv'"):
            common.load_sweep(os.path.join(self.tmp, "none.csv"))


class TraceLoaderTest(TempDirTest):
    def test_parses_actions_memory_and_names(self):
        trace = common.load_trace(SIM_TRACE)
        self.assertEqual(trace.num_ranks, 2)
        self.assertEqual(len(trace.actions), 18)
        self.assertEqual(sum(a.tid == 0 for a in trace.actions), 10)
        self.assertEqual(trace.rank_names, {0: "rank 0 (stage 0)", 1: "rank 1 (stage 1)"})
        self.assertEqual(trace.memory[0], [(0.0, 0), (0.0, 4000000), (100.0, 8000000),
                                           (740.0, 4000000), (940.0, 0)])
        send = next(a for a in trace.actions if a.name == "0SEND_F1")
        self.assertEqual((send.kind, send.stage, send.microbatch, send.rank, send.tid),
                         ("SEND_F", 0, 1, 0, 1))
        self.assertEqual((send.start_us, send.end_us), (200.0, 220.0))
        step = next(a for a in trace.actions if a.name == "1STEP")
        self.assertEqual((step.kind, step.stage, step.microbatch), ("STEP", 1, 0))
        self.assertEqual(trace.describe(), "gpipe K=2 M=2 recompute never, sim")
        self.assertEqual(common.step_count(trace), 1)

    def test_reads_overlapped_pairs_and_torch_housekeeping(self):
        trace = common.load_trace(OVERLAP_TRACE)
        self.assertEqual(trace.describe().split(",")[0], "dualpipev_k2_m4_comms K=2 V=2 M=4 recompute never")
        overlapped = [a for a in trace.actions if a.tid == common.OVERLAP_TID]
        self.assertEqual(len(overlapped), 6)  # three pairs per rank
        self.assertTrue(all(a.kind == "B" for a in overlapped))
        self.assertIn("UNSHARD", {a.kind for a in trace.actions})

    def test_splits_a_measured_trace_into_steps(self):
        trace = common.load_trace(CPU_TRACE)
        self.assertEqual(len(trace.actions), 36)
        self.assertEqual(common.step_count(trace), 2)
        self.assertEqual(sorted({a.tid for a in trace.actions}), [0, 1, 2, 3, 4])
        first, last = common.step_actions(trace, 0), common.step_actions(trace, -1)
        self.assertEqual((len(first), len(last)), (18, 18))
        self.assertEqual(max(a.end_us for a in first), 16246.0)
        self.assertEqual(min(a.start_us for a in last), 16300.0)
        self.assertEqual(common.step_actions(trace, 1), last)
        with self.assertRaisesRegex(common.InputError, "--step 2 is out of range.*2 step"):
            common.step_actions(trace, 2)

    def test_rejects_bad_traces_naming_the_field(self):
        def drop_num_ranks(doc):
            del doc["otherData"]["gpipe"]["schedule"]["num_ranks"]

        def x_events(doc):
            return [e for e in doc["traceEvents"] if e["ph"] == "X"]

        def set_first_x(key, value):
            return lambda doc: x_events(doc)[0].__setitem__(key, value)

        def no_actions(doc):
            doc["traceEvents"] = [e for e in doc["traceEvents"] if e["ph"] != "X"]

        cases = [
            (drop_num_ranks, "field 'otherData.gpipe.schedule.num_ranks' is missing"),
            (lambda doc: doc.pop("otherData"), "field 'otherData' is missing"),
            (set_first_x("name", "0X0"), "traceEvents\\[10\\].name' is not an action: '0X0'"),
            (set_first_x("pid", 5), "traceEvents\\[10\\].pid' is 5, outside \\[0, 2\\)"),
            (set_first_x("tid", 1), "traceEvents\\[10\\].tid' is 1, which does not fit 0F0"),
            (set_first_x("cat", "comm"), "traceEvents\\[10\\].cat' must be \"compute\" for 0F0"),
            (set_first_x("ts", "soon"), "traceEvents\\[10\\].ts' must be a number"),
            (set_first_x("dur", -1), "traceEvents\\[10\\].dur' must not be negative"),
            (no_actions, "no compute or comm actions"),
        ]
        for edit, message in cases:
            with self.subTest(message=message):
                with self.assertRaisesRegex(common.InputError, message):
                    common.load_trace(self.edited_trace("bad.json", edit))

    def test_version_2_writes_lane_plus_one_and_reads_the_same_lanes(self):
        def to_version_2(doc):
            doc["otherData"]["gpipe"]["version"] = 2
            for e in doc["traceEvents"]:
                if "tid" in e:
                    e["tid"] += 1

        v1 = common.load_trace(SIM_TRACE)
        v2 = common.load_trace(self.edited_trace("v2.json", to_version_2))
        self.assertEqual(v2.actions, v1.actions)

        def compute_on_tid_0(doc):
            to_version_2(doc)
            next(e for e in doc["traceEvents"] if e["ph"] == "X")["tid"] = 0

        with self.assertRaisesRegex(common.InputError, "traceEvents\\[10\\].tid' is 0, which does not fit 0F0"):
            common.load_trace(self.edited_trace("tid0.json", compute_on_tid_0))
        with self.assertRaisesRegex(common.InputError, "version' must be 1 or 2"):
            common.load_trace(self.edited_trace("v3.json", lambda doc: doc["otherData"]["gpipe"].update(version=3)))

    def test_rejects_malformed_json(self):
        path = self.write("trunc.json", read(SIM_TRACE)[:200])
        with self.assertRaisesRegex(common.InputError, "trunc.json: not valid JSON"):
            common.load_trace(path)
        with self.assertRaisesRegex(common.InputError, "not a Chrome trace object"):
            common.load_trace(self.write("list.json", "[1, 2]"))


def with_noise(text):
    """The validation CSV with validate's noise columns: every ok row's steps spread +-50 us."""
    lines = text.splitlines()
    out = [lines[0] + ",measured_step_q1_us,measured_step_q3_us,outside_band_points"]
    for line in lines[1:]:
        if ",ok," not in line:
            out.append(line + ",,,")
            continue
        measured = float(line.split(",ok,,")[1].split(",")[1])
        predicted = float(line.split(",ok,,")[1].split(",")[0])
        q1, q3 = measured - 50, measured + 50
        outside = max(0.0, q1 - predicted, predicted - q3) / measured * 100
        out.append(line + f",{q1:.3f},{q3:.3f},{outside:.3f}")
    return "\n".join(out) + "\n"


class ValidationLoaderTest(TempDirTest):
    def test_reads_ok_rows_and_counts_skipped(self):
        rows, skipped = validation.load_validation(VALIDATION)
        self.assertEqual((len(rows), skipped), (3, 2))
        self.assertEqual(rows[1]["predicted_step_us"], 700.0)
        self.assertEqual(rows[1]["measured_bubble"], 0.3)
        self.assertEqual([r["peak_equal"] for r in rows], [True, True, False])
        self.assertEqual((rows[2]["schedule"], rows[2]["recompute"]), ("1f1b", "always"))

    def test_reads_the_noise_band_where_the_csv_has_it(self):
        rows, _ = validation.load_validation(self.write("noise.csv", with_noise(read(VALIDATION))))
        self.assertEqual((rows[0]["measured_step_q1_us"], rows[0]["measured_step_q3_us"]), (1050.0, 1150.0))
        self.assertEqual(rows[0]["outside_band_points"], 4.545)
        old, _ = validation.load_validation(VALIDATION)  # older files: no band
        self.assertIsNone(old[0]["measured_step_q1_us"])

    def test_rejects_bad_rows_naming_line_and_column(self):
        text = read(VALIDATION)
        with self.assertRaisesRegex(common.InputError, ":2: column 'measured_step_us' is not a number"):
            validation.load_validation(self.write("a.csv", text.replace(",1100.000,", ",slow,")))
        with self.assertRaisesRegex(common.InputError, ":2: column 'predicted_step_us' is empty"):
            validation.load_validation(self.write("b.csv", text.replace(",1000.000,", ",,")))
        with self.assertRaisesRegex(common.InputError, ":3: column 'status' must be ok or skipped"):
            validation.load_validation(self.write("c.csv", text.replace('"2,1",ok', '"2,1",done', 1)))


class ScriptTest(TempDirTest):
    """Each script as a user runs it: exit status, the path it prints, the PNG it writes."""

    def run_script(self, script, *args):
        return subprocess.run([sys.executable, os.path.join(PLOTS, script), *args],
                              capture_output=True, text=True, timeout=120)

    def assert_png(self, script, *args):
        out = os.path.join(self.tmp, script.replace(".py", ".png"))
        result = self.run_script(script, *args, "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), out)
        with open(out, "rb") as f:
            data = f.read()
        self.assertTrue(data.startswith(PNG_SIGNATURE))
        self.assertGreater(len(data), 10000)  # a drawn figure, not an empty canvas

    def assert_fails(self, script, args, message):
        result = self.run_script(script, *args)
        self.assertEqual(result.returncode, 2, result.stderr)
        lines = result.stderr.splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertRegex(lines[0], f"^{script}: error: .*{message}")
        self.assertEqual(result.stdout, "")

    def test_scripts_are_executable_with_the_debian_python(self):
        for script in SCRIPTS:
            path = os.path.join(PLOTS, script)
            self.assertTrue(os.access(path, os.X_OK), script)
            self.assertEqual(read(path).splitlines()[0], "#!/usr/bin/python3", script)

    def test_help(self):
        for script in SCRIPTS:
            result = self.run_script(script, "--help")
            self.assertEqual(result.returncode, 0, script)
            self.assertIn("--out", result.stdout)

    def test_bubble_vs_m(self):
        self.assert_png("bubble_vs_m.py", SWEEP)
        self.assert_png("bubble_vs_m.py", SWEEP, "--schedule", "1f1b", "--recompute", "always")

    def test_bubble_by_schedule(self):
        self.assert_png("bubble_by_schedule.py", SWEEP)
        self.assert_png("bubble_by_schedule.py", SWEEP, "--stages", "2", "--recompute", "always")

    def test_bubble_by_schedule_lines_and_errors(self):
        import bubble_by_schedule
        rows = common.load_sweep(SWEEP)
        series = bubble_by_schedule.series_by_schedule(rows, 4, "never")
        self.assertEqual(list(series), ["gpipe", "1f1b"])
        ms, simulated, analytic = series["gpipe"]
        # The dashed line is the file's closed-form column: (K-1)/(M+K-1) for GPipe.
        for m, a in zip(ms, analytic):
            self.assertAlmostEqual(a, 3 / (m + 3), places=6)
        self.assert_fails("bubble_by_schedule.py", [SWEEP, "--out", "x.png", "--stages", "3"],
                          "no simulated row at K=3")
        self.assert_fails("bubble_by_schedule.py", [SWEEP, "--out", "x.png", "--recompute", "x"],
                          "no simulated row with recompute 'x'")

    def test_sweep_heatmap(self):
        self.assert_png("sweep_heatmap.py", SWEEP)
        self.assert_png("sweep_heatmap.py", SWEEP, "--metric", "memory", "--schedule", "1f1b")

    def test_gantt(self):
        self.assert_png("gantt.py", OVERLAP_TRACE)
        self.assert_png("gantt.py", SIM_TRACE)
        self.assert_png("gantt.py", SIM_TRACE, CPU_TRACE, "--labels", "pred,meas", "--step", "0")

    def test_memory(self):
        self.assert_png("memory.py", SIM_TRACE)
        self.assert_png("memory.py", CPU_TRACE)

    def test_bad_sweep_inputs(self):
        missing = os.path.join(self.tmp, "none.csv")
        no_fits = self.write("nofits.csv", read(SWEEP).replace(",fits\n", "\n", 1))
        for script in ("bubble_vs_m.py", "sweep_heatmap.py"):
            with self.subTest(script=script):
                self.assert_fails(script, [missing, "--out", "x.png"], "cannot read")
                self.assert_fails(script, [no_fits, "--out", "x.png"],
                                  "missing column\\(s\\): fits")
                self.assert_fails(script, [SWEEP, "--out", "x.png", "--schedule", "zb"],
                                  "no rows with schedule 'zb'")
                self.assert_fails(script, [SWEEP], "required: --out")
        self.assert_fails("sweep_heatmap.py", [SWEEP, "--out", "x.png", "--metric", "speed"],
                          "--metric: invalid choice: 'speed'")

    def test_bad_trace_inputs(self):
        truncated = self.write("trunc.json", read(SIM_TRACE)[:300])
        for script in ("gantt.py", "memory.py"):
            with self.subTest(script=script):
                self.assert_fails(script, [os.path.join(self.tmp, "none.json"), "--out", "x.png"],
                                  "cannot read")
                self.assert_fails(script, [truncated, "--out", "x.png"], "not valid JSON")
        self.assert_fails("gantt.py", [SIM_TRACE, CPU_TRACE, "--labels", "one", "--out", "x.png"],
                          "--labels has 1 name\\(s\\) for 2 trace\\(s\\)")
        self.assert_fails("gantt.py", [CPU_TRACE, "--step", "5", "--out", "x.png"],
                          "--step 5 is out of range")
        no_memory = self.edited_trace("nomem.json", lambda doc: doc.__setitem__(
            "traceEvents", [e for e in doc["traceEvents"] if e["ph"] != "C"]))
        self.assert_fails("memory.py", [no_memory, "--out", "x.png"],
                          "no 'activation memory' counter events")

    def test_validation(self):
        self.assert_png("validation.py", VALIDATION)

    def test_validation_with_noise_bands(self):
        self.assert_png("validation.py", self.write("noise.csv", with_noise(read(VALIDATION))))

    def test_bad_validation_inputs(self):
        self.assert_fails("validation.py", [os.path.join(self.tmp, "none.csv"), "--out", "x.png"],
                          "cannot read")
        no_equal = self.write("noeq.csv", read(VALIDATION).replace(",peak_activation_equal\n", "\n", 1))
        self.assert_fails("validation.py", [no_equal, "--out", "x.png"],
                          "missing column\\(s\\): peak_activation_equal")
        lines = read(VALIDATION).splitlines()
        skipped_only = self.write("skipped.csv", "\n".join([lines[0], lines[3], lines[5]]) + "\n")
        self.assert_fails("validation.py", [skipped_only, "--out", "x.png"],
                          "every configuration was skipped")

    def test_plan_heatmap(self):
        self.assert_png("plan_heatmap.py", PLAN)
        self.assert_png("plan_heatmap.py", PLAN, "--title", "a plan")
        sys.path.insert(0, PLOTS)
        import plan_heatmap
        cells = plan_heatmap.load(PLAN)
        # T 1 and 2 at every K dividing 8 / T; the T = 4 row says it cannot, for any K.
        self.assertEqual(sorted(cells), [(1, 1), (1, 2), (1, 4), (1, 8), (2, 1), (2, 2), (2, 4)])
        self.assertTrue(all(c[0] == "ok" for c in cells.values()))
        self.assert_fails("plan_heatmap.py", [SWEEP, "--out", "x.png"], "not a gpipe-sim plan CSV")
        header = read(PLAN).splitlines()[0]
        over = self.write("over.csv", header + "\n1,1,8,1,4,1,1f1b,never,0,over memory,\"\",1.0,1.0,1.0,0.1,1,0,0,0\n")
        self.assert_fails("plan_heatmap.py", [over, "--out", "x.png"], "no configuration fits")
        broken = self.write("broken.csv", header + "\nx,1,8,1,4,1,1f1b,never,0,ok,\"\",1.0,1.0,1.0,0.1,1,0,0,0\n")
        self.assert_fails("plan_heatmap.py", [broken, "--out", "x.png"], "broken.csv:2: a number is malformed")

    def test_inference_tradeoff(self):
        self.assert_png("inference_tradeoff.py", INFERENCE_SWEEP)
        self.assert_png("inference_tradeoff.py", INFERENCE_SWEEP, "--latency-limit-us", "3000")

    def test_inference_pareto_front_and_errors(self):
        import inference_tradeoff
        # (K, B, b, samples/s, p99 us): the second is beaten by the third (faster and sooner).
        points = [(1, 1, 1, 100.0, 10.0), (1, 2, 1, 150.0, 30.0), (1, 3, 1, 160.0, 20.0), (1, 4, 1, 90.0, 5.0)]
        self.assertEqual(inference_tradeoff.pareto_front(points), [points[3], points[0], points[2]])
        self.assertEqual(len(inference_tradeoff.load(INFERENCE_SWEEP)), 24)
        self.assert_fails("inference_tradeoff.py", [SWEEP, "--out", "x.png"], "not an inference sweep CSV")
        lines = read(INFERENCE_SWEEP).splitlines()
        broken = self.write("broken.csv", "\n".join([lines[0], lines[1].replace(",ok,", ",ok,", 1).split(",ok,")[0]
                                                     + ",ok,,x,x,x,x,x,x,x,x,x,x,x,x,x"]) + "\n")
        self.assert_fails("inference_tradeoff.py", [broken, "--out", "x.png"], "broken.csv:2: a number is malformed")

    def test_unwritable_output(self):
        out = os.path.join(self.tmp, "no", "such", "dir", "m.png")
        self.assert_fails("memory.py", [SIM_TRACE, "--out", out], "cannot write")


if __name__ == "__main__":
    unittest.main()
