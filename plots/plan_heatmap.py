#!/usr/bin/python3
"""A cluster plan as a heat map: tensor parallelism T (y) by pipeline stages K (x).

Reads a `gpipe-sim plan --out` CSV. Each cell is the fastest configuration of
that T and K (D = N / (T K) replicas) that fits the device's memory, over the
micro-batch sizes, schedules, recompute policies and ZeRO stages the plan
tried: its tokens/s, with its MFU beneath. A cell where every configuration is
over memory is cross-hatched; one that cannot exist is grey and hatched (a K
where nothing can is left out). The fastest cell has a heavy border.
"""

import math

import numpy as np

import common

PROG = "plan_heatmap.py"
COLUMNS = ["tensor_parallel", "pipeline", "data_parallel", "status", "tokens_per_s", "mfu"]


def parse_args():
    parser = common.make_parser(PROG, __doc__.split("\n")[0])
    parser.add_argument("plan", metavar="PLAN.csv", help="CSV written by gpipe-sim plan --out")
    parser.add_argument("--out", required=True, metavar="PNG", help="image to write")
    parser.add_argument("--title", help="the figure's title (default: what the plan was)")
    return parser.parse_args()


def load(path):
    """{(T, K): (status, tokens/s, mfu, D)}: each cell's best that fits, else 'over memory' or 'skipped'."""
    cells = {}
    rank = {"skipped": 0, "over memory": 1, "ok": 2}
    for line, row in common.csv_rows(path, COLUMNS, "a gpipe-sim plan CSV"):
        try:
            t, k, d = int(row["tensor_parallel"]), int(row["pipeline"]), int(row["data_parallel"])
            tokens, mfu = float(row["tokens_per_s"]), float(row["mfu"])
        except (TypeError, ValueError):
            raise common.InputError(f"{path}:{line}: a number is malformed or missing") from None
        status = row["status"]
        if status not in rank:
            raise common.InputError(f"{path}:{line}: unknown status '{status}'")
        if not (math.isfinite(tokens) and tokens >= 0):
            raise common.InputError(f"{path}:{line}: tokens_per_s must be finite and >= 0")
        if k == 0:  # a T that cannot exist at any K
            continue
        best = cells.get((t, k))
        candidate = (status, tokens, mfu, d)
        if best is None or (rank[status], tokens) > (rank[best[0]], best[1]):
            cells[(t, k)] = candidate
    if not any(c[0] == "ok" for c in cells.values()):
        raise common.InputError(f"{path}: no configuration fits; nothing to plot")
    return cells


def main():
    from matplotlib.patches import Patch, Rectangle
    import matplotlib

    args = parse_args()
    cells = load(args.plan)
    ts = sorted({t for t, _ in cells})
    # A pipeline depth where nothing can exist (more stages than the model has
    # layers, more replicas than samples) is left out.
    ks = sorted({k for (_, k), c in cells.items() if c[0] != "skipped"})
    cells = {tk: c for tk, c in cells.items() if tk[1] in ks}
    values = np.full((len(ts), len(ks)), np.nan)
    for (t, k), (status, tokens, _, _) in cells.items():
        if status == "ok":
            values[ts.index(t), ks.index(k)] = tokens
    fig, ax = common.new_figure(figsize=(max(6, 1.3 * len(ks) + 3), max(4, 1.0 * len(ts) + 2.5)))
    cmap = matplotlib.colormaps["viridis"].copy()
    cmap.set_bad((1, 1, 1, 0))
    image = ax.imshow(np.ma.masked_invalid(values), origin="lower", aspect="auto", cmap=cmap)
    bar = fig.colorbar(image, ax=ax, fraction=0.06, pad=0.03)
    bar.set_label("tokens/s of the cell's fastest configuration that fits; brighter is better")
    best = max((c for c in cells.items() if c[1][0] == "ok"), key=lambda c: c[1][1])
    for (t, k), (status, tokens, mfu, d) in cells.items():
        i, j = ts.index(t), ks.index(k)
        if status == "skipped":
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="#c8c8c8", edgecolor="#7a7a7a",
                                   hatch="///", lw=0))
            ax.text(j, i, "cannot", ha="center", va="center", fontsize=8)
        elif status == "over memory":
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="white", edgecolor="#555555",
                                   hatch="xx", lw=0))
            ax.text(j, i, f"D={d}\nover memory", ha="center", va="center", fontsize=7.5)
        else:
            rgba = image.to_rgba(tokens)
            text = f"{tokens / 1e3:.1f}k\nMFU {100 * mfu:.0f}%\nD={d}"
            ax.text(j, i, text, ha="center", va="center", fontsize=7.5, color=common.contrast(rgba))
    bi, bj = ts.index(best[0][0]), ks.index(best[0][1])
    ax.add_patch(Rectangle((bj - 0.5, bi - 0.5), 1, 1, fill=False, edgecolor="red", lw=2.5))
    ax.set_xticks(range(len(ks)))
    ax.set_xticklabels([str(k) for k in ks])
    ax.set_yticks(range(len(ts)))
    ax.set_yticklabels([str(t) for t in ts])
    ax.set_xlabel("pipeline stages K")
    ax.set_ylabel("tensor parallel T (GPUs a stage)")
    ax.set_title(args.title or "Cluster plan: the fastest that fits, per T and K (D = N / (T K))")
    legend = [Patch(facecolor="#c8c8c8", edgecolor="#7a7a7a", hatch="///", label="cannot exist"),
              Patch(facecolor="white", edgecolor="#555555", hatch="xx", label="every configuration over memory"),
              Patch(facecolor="white", edgecolor="red", lw=2.5, label="fastest")]
    fig.legend(handles=legend, loc="lower center", ncol=3, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    common.save_figure(fig, args.out)


if __name__ == "__main__":
    common.run_main(PROG, main)
