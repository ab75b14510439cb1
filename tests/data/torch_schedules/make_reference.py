#!/usr/bin/env python3
"""Writes the torch.distributed.pipelining reference schedules that
tests/interop/torch_conformance_test.cpp compares our generators with.

Run by hand, NOT in CI: it needs PyTorch 2.15 (a yardstick only, never a
dependency of the project), e.g.

    /work/torch-venv/bin/python tests/data/torch_schedules/make_reference.py

and commit what it writes next to it:

- <schedule>/K<k>_M<m>[_V<v>].csv: torch's compute order, one line per rank,
  one action per cell. Idle slots (None) and FSDP/DP housekeeping
  (REDUCE_GRAD, WAIT_REDUCE_GRAD, ...) are dropped; an `(0F3;3B1)OVERLAP_F_B`
  composite is expanded into its two cells, forward first, and the pair is
  recorded in manifest.json, so the CSV files stay plain torch CSV.
- manifest.json: every configuration of the grid, either generated (its CSV
  file and, where torch overlaps, the pairs as [rank, forward, backward]) or
  refused by torch (with torch's reason), in the order the grid is walked.
  Which rank holds a stage is read from the CSV (the rank whose line has it).
"""
import json
import logging
import pathlib
import warnings

warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)

import torch  # noqa: E402
from torch.distributed.pipelining._schedule_visualizer import get_schedule_ops  # noqa: E402
from torch.distributed.pipelining.schedules import _ComputationType  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
COMPUTE = {_ComputationType.FORWARD, _ComputationType.FULL_BACKWARD,
           _ComputationType.BACKWARD_INPUT, _ComputationType.BACKWARD_WEIGHT}

# (our name, torch's name, the V values of the grid, our options). V = None:
# a single-stage schedule. GPipe is ours with --backward-order forward (torch
# runs B0 first). ZBV and DualPipeV take V = 2 only: V = 3 is there to record
# torch's refusal, on a few (K, M).
FAMILIES = [
    ("gpipe", "GPipe", [None], {"backward_order": "forward"}),
    ("1f1b", "1F1B", [None], {}),
    ("interleaved-1f1b", "Interleaved1F1B", [2, 3], {}),
    ("looped-bfs", "LoopedBFS", [2, 3], {}),
    ("interleaved-zb", "InterleavedZeroBubble", [2, 3], {}),
    ("zbv", "ZBVZeroBubble", [2, 3], {}),
    ("dualpipev", "DualPipeV", [2, 3], {}),
]
FIXED_V = {"zbv": 2, "dualpipev": 2}


def microbatch_grid(name, k, v):
    """Every M in 1..12 for K <= 4; for K = 5, 6 the M that exercise each rule
    (M < K, M = K, M not a multiple of K, M = 2K, ...), to keep the data small."""
    if name in FIXED_V and v != FIXED_V[name]:
        return [4, 8] if k in (2, 4) else []
    if k <= 4:
        return list(range(1, 13))
    return sorted({1, 2, k - 1, k, k + 1, 2 * k - 1, 2 * k, 11, 12} & set(range(1, 13)))


def expand(rank_actions):
    """Compute cells in order, composites expanded; and the overlapped pairs."""
    cells, pairs = [], []
    for action in rank_actions:
        if action is None:
            continue
        if action.sub_actions is not None:
            if action.computation_type != _ComputationType.OVERLAP_F_B:
                raise ValueError(f"unexpected composite {action}")
            forward, backward = action.sub_actions
            cells += [str(forward), str(backward)]
            pairs.append([str(forward), str(backward)])
        elif action.computation_type in COMPUTE:
            cells.append(str(action))
    return cells, pairs


def compact_json(manifest):
    """One configuration a line: readable in a diff, and small."""
    lines = []
    for key, value in manifest.items():
        if isinstance(value, list):
            rows = ",\n".join("  " + json.dumps(row) for row in value)
            lines.append(f" {json.dumps(key)}: [\n{rows}]")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main():
    if not torch.__version__.startswith("2.15"):
        raise SystemExit(f"needs PyTorch 2.15, found {torch.__version__}")
    generated, refused = [], []
    for name, torch_name, vs, options in FAMILIES:
        for v in vs:
            for k in range(1, 7):
                for m in microbatch_grid(name, k, v):
                    config = {"schedule": name, "torch": torch_name, "K": k, "M": m, "V": v or 1, **options}
                    try:
                        ops = get_schedule_ops(torch_name, k, m, v)
                    except (ValueError, AssertionError) as e:
                        refused.append({**config, "reason": str(e).splitlines()[0]})
                        continue
                    ranks, overlapped = [], []
                    for rank, rank_actions in enumerate(ops):
                        cells, pairs = expand(rank_actions)
                        ranks.append(cells)
                        overlapped += [[rank, *pair] for pair in pairs]
                    path = pathlib.Path(name) / (f"K{k}_M{m}" + (f"_V{v}" if v else "") + ".csv")
                    (HERE / path).parent.mkdir(exist_ok=True)
                    (HERE / path).write_text("".join(",".join(cells) + "\n" for cells in ranks))
                    generated.append({**config, "csv": str(path),
                                      **({"overlapped": overlapped} if overlapped else {})})
    manifest = {"format": "gpipe-torch-reference", "version": 1, "torch": torch.__version__,
                "generated": generated, "refused": refused}
    (HERE / "manifest.json").write_text(compact_json(manifest))
    print(f"{len(generated)} schedules, {len(refused)} refused")


if __name__ == "__main__":
    main()
