#!/usr/bin/python3
"""Predicted against measured: the simulator checked by real runs.

Reads the CSV of `gpipe-run validate --out`. Left: step time, each run
configuration a marker at (measured, predicted), on log axes, with the
diagonal where the two agree and a shaded band of +-10 %; markers above the
diagonal are configurations the simulator thought slower than they were.
Right: the bubble fraction the same way, with GPipe's closed form
(K-1)/(M+K-1) as open markers at the measured value, so the gap between the
paper's idealised bubble and the real one shows too. Marker shape and colour
name the schedule and recompute policy, and a small label the stage count K
(a K above the machine's cores drifts below the diagonal: ranks share cores); configurations whose measured
activation peak differs from the prediction are ringed in red. Where the CSV
has them (validate's rounds), a horizontal bar spans each configuration's
noise band, the interquartile range of its warm steps, and the title counts
the predictions inside their band. Skipped rows (configurations that cannot
exist) are counted in the title.
"""

import csv

import common

PROG = "validation.py"

COLUMNS = [
    "schedule", "recompute", "stages", "microbatches", "micro_batch_size", "batch", "partition",
    "status", "reason", "predicted_step_us", "measured_step_us", "step_time_error_pct",
    "predicted_bubble", "measured_bubble", "bubble_fraction_analytic", "bubble_error_points",
    "predicted_peak_activation_bytes", "measured_peak_activation_bytes", "peak_activation_equal",
]
_REQUIRED_OK = ["predicted_step_us", "measured_step_us", "predicted_bubble", "measured_bubble",
                "bubble_fraction_analytic"]
_NOISE = ["measured_step_q1_us", "measured_step_q3_us", "outside_band_points"]
BAND = 0.10  # the shaded agreement band, +-10 %


def parse_args():
    parser = common.make_parser(PROG, __doc__.split("\n")[0])
    parser.add_argument("csv", metavar="VALIDATION.csv", help="CSV written by gpipe-run validate --out")
    parser.add_argument("--out", required=True, metavar="PNG", help="image to write")
    return parser.parse_args()


def _float(raw, column, path, line):
    text = raw[column]
    if text == "":
        return None
    try:
        return float(text)
    except ValueError:
        raise common.InputError(f"{path}:{line}: column '{column}' is not a number: '{text}'") from None


def load_validation(path):
    """(ok rows as dicts of numbers and labels, number of skipped rows); InputError on bad input."""
    reader = csv.DictReader(common._read_text(path).splitlines())
    if reader.fieldnames is None:
        raise common.InputError(f"{path}: empty file, expected a validation CSV header")
    missing = [c for c in COLUMNS if c not in reader.fieldnames]
    if missing:
        raise common.InputError(f"{path}: missing column(s): {', '.join(missing)}")
    rows, skipped = [], 0
    for raw in reader:
        line = reader.line_num
        if None in raw or any(v is None for v in raw.values()):
            raise common.InputError(f"{path}:{line}: expected {len(reader.fieldnames)} fields")
        if raw["status"] == "skipped":
            skipped += 1
            continue
        if raw["status"] != "ok":
            raise common.InputError(f"{path}:{line}: column 'status' must be ok or skipped, "
                                    f"got '{raw['status']}'")
        row = {c: _float(raw, c, path, line) for c in _REQUIRED_OK}
        for c in _REQUIRED_OK:
            if row[c] is None:
                raise common.InputError(f"{path}:{line}: column '{c}' is empty in an ok row")
        for c in ("predicted_step_us", "measured_step_us"):
            if row[c] <= 0:
                raise common.InputError(f"{path}:{line}: column '{c}' must be positive")
        for c in _NOISE:  # absent from older files; present, they must be numbers
            row[c] = _float(raw, c, path, line) if c in raw else None
        row.update(schedule=raw["schedule"], recompute=raw["recompute"],
                   stages=raw["stages"], microbatches=raw["microbatches"],
                   peak_equal=raw["peak_activation_equal"] == "1")
        rows.append(row)
    if not rows and not skipped:
        raise common.InputError(f"{path}: no data rows")
    if not rows:
        raise common.InputError(f"{path}: every configuration was skipped; nothing to plot")
    return rows, skipped


def draw(rows, skipped, out):
    import numpy as np
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter
    times = [r[c] for r in rows for c in ("measured_step_us", "predicted_step_us")]
    scale, unit = common.time_unit(max(times))
    fig, (left, right) = common.new_figure(nrows=1, ncols=2, figsize=(12, 5.5))
    groups = list(dict.fromkeys((r["schedule"], r["recompute"]) for r in rows))
    markers = "osD^vP*X"
    for i, group in enumerate(groups):
        chosen = [r for r in rows if (r["schedule"], r["recompute"]) == group]
        style = dict(marker=markers[i % len(markers)], color=common.PALETTE[i % len(common.PALETTE)],
                     ls="none", ms=7, label=f"{group[0]}, recompute {group[1]}")
        left.plot([r["measured_step_us"] / scale for r in chosen],
                  [r["predicted_step_us"] / scale for r in chosen], **style)
        banded = [r for r in chosen if r["measured_step_q1_us"] is not None and r["measured_step_q3_us"] is not None]
        if banded:  # the noise band: where the measured steps' middle half lies
            left.errorbar([r["measured_step_us"] / scale for r in banded],
                          [r["predicted_step_us"] / scale for r in banded],
                          xerr=[[(r["measured_step_us"] - r["measured_step_q1_us"]) / scale for r in banded],
                                [(r["measured_step_q3_us"] - r["measured_step_us"]) / scale for r in banded]],
                          fmt="none", ecolor=style["color"], elinewidth=1, capsize=2, alpha=0.7)
        right.plot([r["measured_bubble"] for r in chosen], [r["predicted_bubble"] for r in chosen], **style)
        right.plot([r["measured_bubble"] for r in chosen], [r["bubble_fraction_analytic"] for r in chosen],
                   marker=style["marker"], color=style["color"], mfc="none", ls="none", ms=7)
    for r in rows:  # K beside each point: oversubscribed cores show up as one K drifting off
        left.annotate(f"K{r['stages']}", (r["measured_step_us"] / scale, r["predicted_step_us"] / scale),
                      xytext=(4, -3), textcoords="offset points", fontsize=6, color="0.35")
    unequal = [r for r in rows if not r["peak_equal"]]
    if unequal:
        left.plot([r["measured_step_us"] / scale for r in unequal],
                  [r["predicted_step_us"] / scale for r in unequal],
                  marker="o", ms=14, mfc="none", mec="red", ls="none", label="peak activation differs")

    lo, hi = min(times) / scale / 1.5, max(times) / scale * 1.5
    line = np.geomspace(lo, hi, 50)
    left.plot(line, line, color="0.3", lw=1, zorder=0)
    left.fill_between(line, line * (1 - BAND), line * (1 + BAND), color="0.85", zorder=-1,
                      label=f"within \u00b1{BAND:.0%}")
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlim(lo, hi)
    left.set_ylim(lo, hi)
    for axis in (left.xaxis, left.yaxis):  # plain numbers, not 6x10^2
        axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(ScalarFormatter())
        axis.set_minor_formatter(NullFormatter())
    left.set_xlabel(f"measured step time ({unit})")
    left.set_ylabel(f"predicted step time ({unit})")
    left.set_title("step time")
    left.grid(True, which="major", alpha=0.3)
    left.legend(loc="upper left")

    right.plot([0, 1], [0, 1], color="0.3", lw=1, zorder=0)
    right.plot([], [], marker="o", mfc="none", color="0.4", ls="none", label="analytic (K\u22121)/(M+K\u22121)")
    right.set_xlim(-0.02, 1.0)
    right.set_ylim(-0.02, 1.0)
    right.set_xlabel("measured bubble fraction")
    right.set_ylabel("predicted bubble fraction (filled: simulator)")
    right.set_title("bubble")
    right.grid(True, alpha=0.3)
    right.legend(loc="upper left")

    errors = [abs(r["predicted_step_us"] - r["measured_step_us"]) / r["measured_step_us"] for r in rows]
    note = f", {skipped} skipped" if skipped else ""
    banded = [r for r in rows if r["outside_band_points"] is not None]
    inside = f"; {sum(r['outside_band_points'] == 0 for r in banded)} of {len(banded)} inside their noise band" \
        if banded else ""
    errors.sort()
    fig.suptitle(f"gpipe-sim against gpipe-run: {len(rows)} configurations{note}; "
                 f"median |step time error| {100 * errors[len(errors) // 2]:.1f} %{inside}")
    fig.tight_layout()
    common.save_figure(fig, out)


def main():
    args = parse_args()
    rows, skipped = load_validation(args.csv)
    draw(rows, skipped, args.out)


if __name__ == "__main__":
    common.run_main(PROG, main)
