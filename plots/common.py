"""Shared loading, validation and styling for the gpipe plot scripts.

Readers for the two files the tools write (docs/design.md): the sweep CSV of
`gpipe-sim sweep --out` and the Chrome trace of `--trace`. Bad input raises
InputError with a message naming the file and the line/field; `run_main` turns
it into one line on stderr and exit status 2, the same contract as gpipe-sim.
Only the standard library here, so the loaders are testable without matplotlib.
"""

import argparse
import csv
import json
import math
import re
import sys
from dataclasses import dataclass, field

# Okabe & Ito's palette: distinguishable with the common colour-vision deficiencies.
# Yellow last: it is the hardest to see on white.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442"]

SWEEP_COLUMNS = [
    "schedule", "recompute", "stages", "microbatches", "micro_batch_size", "batch", "partition",
    "status", "reason", "step_time_us", "bubble_fraction", "bubble_fraction_analytic",
    "bubble_time_over_ideal", "throughput_samples_per_s", "utilization_min",
    "peak_activation_bytes", "static_bytes", "peak_memory_bytes", "fits",
]
# Metrics every `ok` row must carry (a skipped row carries none).
REQUIRED_OK_METRICS = ["step_time_us", "bubble_fraction", "throughput_samples_per_s",
                       "peak_memory_bytes"]
_FLOAT_COLUMNS = ["step_time_us", "bubble_fraction", "bubble_fraction_analytic",
                  "bubble_time_over_ideal", "throughput_samples_per_s", "utilization_min"]
_BYTE_COLUMNS = ["peak_activation_bytes", "static_bytes", "peak_memory_bytes"]

MEMORY_COUNTER = "activation memory"
ACTION_RE = re.compile(r"^(\d+)(WAIT_SEND_F|WAIT_SEND_B|SEND_F|RECV_F|SEND_B|RECV_B|STEP|UNSHARD|RESHARD|"
                       r"WAIT_REDUCE_GRAD|REDUCE_GRAD|F|B|I|W|R)(\d*)$")
OVERLAP_TID = 1_000_000  # the lane of an overlapped pair's backward (timelines/trace_lanes.hpp)


class InputError(Exception):
    """Bad input: the message names the file and the line or field."""


def analytic_bubble(stages, microbatches):
    """GPipe's bubble fraction (K-1)/(M+K-1); works on numbers and numpy arrays."""
    return (stages - 1) / (microbatches + stages - 1)


# ---------------------------------------------------------------- command line

class _OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line (`prog: error: ...`), exit 2, like gpipe-sim."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def make_parser(prog, description):
    return _OneLineParser(prog=prog, description=description)


def run_main(prog, main):
    """Calls main(); InputError becomes one stderr line and exit status 2."""
    try:
        main()
    except InputError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        sys.exit(2)


def new_figure(**kwargs):
    """A pyplot figure on the Agg backend (no display needed)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"axes.prop_cycle": matplotlib.cycler(color=PALETTE),
                         "axes.titlesize": 11, "axes.labelsize": 10, "legend.fontsize": 8.5})
    return plt.subplots(**kwargs)


def save_figure(fig, out):
    """Writes the PNG and prints its path; an unwritable path is bad input."""
    import matplotlib.pyplot as plt
    try:
        fig.savefig(out, dpi=150)
    except OSError as e:
        raise InputError(f"cannot write '{out}': {e.strerror or e}") from None
    finally:
        plt.close(fig)
    print(out)


def time_unit(span_us):
    """(divisor, label) putting a span in microseconds into readable units."""
    if span_us >= 1e6:
        return 1e6, "s"
    if span_us >= 1e4:
        return 1e3, "ms"
    return 1.0, "\u00b5s"


def contrast(color):
    """Black or white, whichever reads better on the colour (a name, hex or RGBA)."""
    from matplotlib.colors import to_rgb
    r, g, b = to_rgb(color)
    return "black" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.45 else "white"


def _read_text(path):
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise InputError(f"cannot read '{path}': {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None


def csv_rows(path, columns, what):
    """(line number, row dict) of a CSV that has every one of `columns`; InputError
    "PATH: not WHAT (no column ...)" when some are missing."""
    reader = csv.DictReader(_read_text(path).splitlines())
    missing = [c for c in columns if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(f"{path}: not {what} (no column {', '.join(missing)})")
    return enumerate(reader, start=2)


# ---------------------------------------------------------------- sweep CSV

@dataclass
class SweepRow:
    line: int
    schedule: str
    recompute: str
    stages: int
    microbatches: int
    batch: str
    status: str  # "ok" or "skipped"
    reason: str
    metrics: dict  # float/int values of the metric columns, None where empty
    fits: object  # True, False or None (unknown)
    stages_per_rank: object = None  # V, or None (a file without the column, or not yet known)


def _number(text, path, line, column, kind):
    if text == "":
        return None
    try:
        value = kind(text)
    except ValueError:
        raise InputError(f"{path}:{line}: column '{column}' is not a number: '{text}'") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{path}:{line}: column '{column}' is not finite: '{text}'")
    return value


def _positive_int(text, path, line, column):
    value = _number(text, path, line, column, int)
    if value is None or value < 1:
        raise InputError(f"{path}:{line}: column '{column}' must be a positive integer, "
                         f"got '{text}'")
    return value


def _parse_row(raw, path, line):
    status = raw["status"]
    if status not in ("ok", "skipped"):
        raise InputError(f"{path}:{line}: column 'status' must be ok or skipped, got '{status}'")
    metrics = {c: _number(raw[c], path, line, c, float) for c in _FLOAT_COLUMNS}
    metrics.update({c: _number(raw[c], path, line, c, int) for c in _BYTE_COLUMNS})
    if status == "ok":
        for c in REQUIRED_OK_METRICS:
            if metrics[c] is None:
                raise InputError(f"{path}:{line}: column '{c}' is empty in an ok row")
    fits = {"1": True, "0": False, "": None}.get(raw["fits"])
    if raw["fits"] not in ("1", "0", ""):
        raise InputError(f"{path}:{line}: column 'fits' must be 1, 0 or empty, "
                         f"got '{raw['fits']}'")
    stages_per_rank = _number(raw.get("stages_per_rank") or "", path, line, "stages_per_rank", int)
    return SweepRow(line=line, schedule=raw["schedule"], recompute=raw["recompute"],
                    stages=_positive_int(raw["stages"], path, line, "stages"),
                    microbatches=_positive_int(raw["microbatches"], path, line, "microbatches"),
                    batch=raw["batch"], status=status, reason=raw["reason"],
                    metrics=metrics, fits=fits, stages_per_rank=stages_per_rank)


def load_sweep(path):
    """The rows of a sweep CSV, in file order; raises InputError on bad input."""
    reader = csv.DictReader(_read_text(path).splitlines())
    if reader.fieldnames is None:
        raise InputError(f"{path}: empty file, expected a sweep CSV header")
    missing = [c for c in SWEEP_COLUMNS if c not in reader.fieldnames]
    if missing:
        raise InputError(f"{path}: missing column(s): {', '.join(missing)}")
    rows = []
    for raw in reader:
        line = reader.line_num
        if None in raw or any(v is None for v in raw.values()):
            raise InputError(f"{path}:{line}: expected {len(reader.fieldnames)} fields")
        rows.append(_parse_row(raw, path, line))
    if not rows:
        raise InputError(f"{path}: no data rows")
    return rows


def select_rows(rows, path, schedule=None, recompute="never"):
    """(schedule, rows of that schedule and recompute policy); schedule None = the first."""
    schedules = list(dict.fromkeys(r.schedule for r in rows))
    schedule = schedule if schedule is not None else schedules[0]
    if schedule not in schedules:
        raise InputError(f"{path}: no rows with schedule '{schedule}' "
                         f"(the file has: {', '.join(schedules)})")
    of_schedule = [r for r in rows if r.schedule == schedule]
    chosen = [r for r in of_schedule if r.recompute == recompute]
    if not chosen:
        policies = ", ".join(dict.fromkeys(r.recompute for r in of_schedule))
        raise InputError(f"{path}: no rows with schedule '{schedule}' and recompute "
                         f"'{recompute}' (it has: {policies})")
    seen = {}
    for r in chosen:
        key = (r.stages, r.microbatches, r.stages_per_rank)
        if key in seen:
            raise InputError(f"{path}:{r.line}: duplicate row for K={r.stages} M={r.microbatches} "
                             f"(first on line {seen[key]})")
        seen[key] = r.line
    return schedule, chosen


# ---------------------------------------------------------------- Chrome trace

@dataclass
class TraceAction:
    name: str  # the action text, such as "2F0"
    kind: str  # F, B, I, W, R, STEP, SEND_F, RECV_F, SEND_B, RECV_B
    stage: int
    microbatch: int
    rank: int
    tid: int  # the lane: 0 compute, odd send lanes, even >= 2 receive lanes (the trace's tid less 1 from version 2)
    start_us: float
    dur_us: float

    @property
    def end_us(self):
        return self.start_us + self.dur_us


@dataclass
class Trace:
    path: str
    schedule: dict  # otherData.gpipe.schedule
    source: dict  # otherData.gpipe.source
    metrics: dict
    actions: list  # of TraceAction, sorted by start time
    memory: dict = field(default_factory=dict)  # rank -> [(ts_us, bytes)] sorted by time
    rank_names: dict = field(default_factory=dict)  # rank -> "rank 0 (stage 0)"

    @property
    def num_ranks(self):
        return self.schedule["num_ranks"]

    def describe(self):
        """'gpipe K=2 M=2 recompute never, sim' for titles; V=2 where a rank holds two stages."""
        s = self.schedule
        src = self.source.get("kind", "?")
        if self.source.get("device"):
            src += f" ({self.source['device']})"
        ranks = s.get("num_ranks", s["num_stages"])
        v = f" V={s['num_stages'] // ranks}" if ranks and s["num_stages"] != ranks else ""
        return (f"{s['name']} K={ranks}{v} M={s['num_microbatches']} "
                f"recompute {s['recompute']}, {src}")


def _field(obj, key, where, path, types, what):
    if not isinstance(obj, dict) or key not in obj:
        raise InputError(f"{path}: field '{where}{key}' is missing")
    value = obj[key]
    if not isinstance(value, types) or isinstance(value, bool):
        raise InputError(f"{path}: field '{where}{key}' must be {what}")
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{path}: field '{where}{key}' must be finite")
    return value


def _read_header(doc, path):
    other = _field(doc, "otherData", "", path, dict, "an object")
    gpipe = _field(other, "gpipe", "otherData.", path, dict, "an object")
    p = "otherData.gpipe."
    sched = _field(gpipe, "schedule", p, path, dict, "an object")
    for key in ("name", "recompute"):
        _field(sched, key, p + "schedule.", path, str, "a string")
    for key in ("num_ranks", "num_stages", "num_microbatches"):
        if _field(sched, key, p + "schedule.", path, int, "an integer") < 1:
            raise InputError(f"{path}: field '{p}schedule.{key}' must be positive")
    source = _field(gpipe, "source", p, path, dict, "an object")
    _field(source, "kind", p + "source.", path, str, "a string")
    metrics = gpipe.get("metrics", {})
    version = gpipe.get("version", 1)
    if version not in (1, 2):
        raise InputError(f"{path}: field '{p}version' must be 1 or 2")
    return sched, source, metrics if isinstance(metrics, dict) else {}, version


def _read_action(ev, where, path, num_ranks, version):
    name = _field(ev, "name", where, path, str, "a string")
    match = ACTION_RE.match(name)
    if not match:
        raise InputError(f"{path}: field '{where}name' is not an action: '{name}'")
    rank = _field(ev, "pid", where, path, int, "an integer")
    if not 0 <= rank < num_ranks:
        raise InputError(f"{path}: field '{where}pid' is {rank}, outside [0, {num_ranks})")
    kind = match.group(2)
    comm = kind.startswith(("SEND", "RECV"))
    if ev.get("cat") != ("comm" if comm else "compute"):
        raise InputError(f"{path}: field '{where}cat' must be \"{'comm' if comm else 'compute'}\" "
                         f"for {name}")
    tid = _field(ev, "tid", where, path, int, "an integer")
    # Version 2 writes lane + 1 (Perfetto reads tid 0 as none); lanes below are version 1's numbers.
    lane = tid - 1 if version >= 2 else tid
    on_compute_lane = lane == 0 or (lane == OVERLAP_TID and kind in ("B", "I"))
    if on_compute_lane == comm or lane < 0:
        raise InputError(f"{path}: field '{where}tid' is {tid}, which does not fit {name}")
    dur = _field(ev, "dur", where, path, (int, float), "a number")
    if dur < 0:
        raise InputError(f"{path}: field '{where}dur' must not be negative")
    return TraceAction(name=name, kind=kind, stage=int(match.group(1)),
                       microbatch=int(match.group(3) or 0), rank=rank, tid=lane,
                       start_us=float(_field(ev, "ts", where, path, (int, float), "a number")),
                       dur_us=float(dur))


def load_trace(path):
    """A gpipe Chrome trace: its header, actions, memory samples and rank names."""
    try:
        doc = json.loads(_read_text(path))
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: not a Chrome trace object")
    events = _field(doc, "traceEvents", "", path, list, "an array")
    sched, source, metrics, version = _read_header(doc, path)
    trace = Trace(path=path, schedule=sched, source=source, metrics=metrics, actions=[])
    for i, ev in enumerate(events):
        where = f"traceEvents[{i}]."
        ph = _field(ev, "ph", where, path, str, "a string")
        if ph == "X" and ev.get("cat") in ("compute", "comm"):
            trace.actions.append(_read_action(ev, where, path, trace.num_ranks, version))
        elif ph == "C" and ev.get("name") == MEMORY_COUNTER:
            rank = _field(ev, "pid", where, path, int, "an integer")
            if not 0 <= rank < trace.num_ranks:
                raise InputError(f"{path}: field '{where}pid' is {rank}, "
                                 f"outside [0, {trace.num_ranks})")
            ts = _field(ev, "ts", where, path, (int, float), "a number")
            size = _field(_field(ev, "args", where, path, dict, "an object"), "bytes",
                          where + "args.", path, (int, float), "a number")
            trace.memory.setdefault(rank, []).append((float(ts), size))
        elif ph == "M" and ev.get("name") == "process_name":
            name = ev.get("args", {}).get("name") if isinstance(ev.get("args"), dict) else None
            if isinstance(name, str) and isinstance(ev.get("pid"), int):
                trace.rank_names[ev["pid"]] = name
    if not trace.actions:
        raise InputError(f"{path}: no compute or comm actions in traceEvents")
    trace.actions.sort(key=lambda a: (a.start_us, a.rank, a.tid))
    for samples in trace.memory.values():
        samples.sort(key=lambda s: s[0])  # stable: equal times keep the writer's order
    return trace


def step_count(trace):
    """How many training steps the trace holds: the most runs of one action on one rank."""
    counts = {}
    for a in trace.actions:
        counts[(a.rank, a.name)] = counts.get((a.rank, a.name), 0) + 1
    return max(counts.values())


def step_actions(trace, step):
    """The actions of one step (0-based; -1 = the last): the step-th run of each action."""
    steps = step_count(trace)
    index = step + steps if step < 0 else step
    if not 0 <= index < steps:
        raise InputError(f"{trace.path}: --step {step} is out of range: the trace has "
                         f"{steps} step(s)")
    seen = {}
    chosen = []
    for a in trace.actions:
        n = seen.get((a.rank, a.name), 0)
        seen[(a.rank, a.name)] = n + 1
        if n == index:
            chosen.append(a)
    return chosen
