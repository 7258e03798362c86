"""Host-side tables of the schedules: balancing metrics and DHS step counts.

``python scripts/schedule_tables.py SWC_DIR`` prints the Markdown tables of
``docs/multi-morphology.md``: the ``fine`` balance metrics
(:mod:`hinesbatch.tree.schedules.metrics`) per balancing
option on the SWC files of ``SWC_DIR`` and on random trees, and the DHS steps against
threads per cell for a pyramidal cell. Deterministic (fixed seeds); no GPU needed.
"""
from __future__ import annotations

import argparse
import glob
import os
import warnings

import numpy as np

from hinesbatch.tree.random_trees import random_tree
from hinesbatch.tree.structure import HinesStructure
from hinesbatch.tree.schedules.dhs import THREAD_CHOICES, dhs_schedule, dhs_steps
from hinesbatch.tree.schedules.fine import fine_schedule
from hinesbatch.tree.schedules.levels import level_schedule
from hinesbatch.tree.schedules.metrics import branch_metrics

__all__ = ["BALANCING", "datasets", "balance_table", "levels_table", "dhs_table", "main"]

#: The balancing options compared: label -> planner keywords.
BALANCING = {
    "none": {},
    "reroot": {"reroot": True},
    "split mean (Arbor)": {"split": "mean"},
    "split cost": {"split": "cost"},
    "reroot + split mean": {"reroot": True, "split": "mean"},
    "reroot + split cost": {"reroot": True, "split": "cost"},
}


def _real(swc_dir: str, **discretization) -> list[HinesStructure]:
    from hinesbatch.discretize import discretize

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [discretize(p, min_radius=0.01, **discretization).hines_structure()
                for p in sorted(glob.glob(os.path.join(swc_dir, "*.swc")))]


def datasets(swc_dir: str, *, copies: int = 16, n_random: int = 256) -> dict:
    """The batches of the tables: every SWC of ``swc_dir`` ``copies`` times (nseg=1 and
    d_lambda=0.1), and ``n_random`` random trees of 200-2000 nodes per branching
    probability 0.1, 0.5, 0.9."""
    out = {
        "real, nseg=1": HinesStructure.concatenate(_real(swc_dir, nseg=1) * copies),
        "real, d_lambda=0.1": HinesStructure.concatenate(_real(swc_dir, d_lambda=0.1) * copies),
    }
    for p in (0.1, 0.5, 0.9):
        rng = np.random.default_rng(int(p * 10))
        out[f"random p={p}"] = HinesStructure.concatenate(
            [random_tree(int(n), rng=rng, branch_probability=p)
             for n in rng.integers(200, 2001, n_random)])
    return out


def balance_table(batches: dict, *, block_size: int = 128, barrier_cost: float = 4.0) -> str:
    """Markdown table of :func:`~.metrics.branch_metrics` for ``fine`` per balancing option."""
    rows = ["| batch | balancing | blocks | levels (max) | block time max / mean | "
            f"cost max / mean (barrier = {barrier_cost:g}) | utilisation | "
            "cell critical path max / mean |",
            "|---|---|---|---|---|---|---|---|"]
    for name, s in batches.items():
        for label, options in BALANCING.items():
            schedule = fine_schedule(s, block_size=block_size, barrier_cost=barrier_cost,
                                     **options)
            m = branch_metrics(schedule, s, barrier_cost=barrier_cost)
            rows.append(
                f"| {name} | {label} | {m['groups']} | {m['levels']} | "
                f"{m['group_time_max']} / {m['group_time_mean']:.1f} | "
                f"{m['cost_max']:.0f} / {m['cost_mean']:.1f} | {m['utilisation']:.2f} | "
                f"{m['critical_path_max']} / {m['critical_path_mean']:.1f} |")
    return "\n".join(rows)


def levels_table(batches: dict) -> str:
    """Markdown table of the ``levels`` schedule: launches and the batch's critical path."""
    rows = ["| batch | balancing | levels (launches per sweep) | sum over levels of the "
            "longest branch | padding (lanes 32) |", "|---|---|---|---|---|"]
    for name, s in batches.items():
        for label in ("none", "reroot", "split mean (Arbor)"):
            m = branch_metrics(level_schedule(s, **BALANCING[label]), s)
            rows.append(f"| {name} | {label} | {m['levels']} | {m['group_time_max']} | "
                        f"{m['padding']:.1%} |")
    return "\n".join(rows)


def dhs_table(cell: HinesStructure, *, label: str) -> str:
    """Markdown table: DHS steps (and pull-weighted steps) for every thread count."""
    from hinesbatch.tree.balance import reroot

    head = "| root | " + " | ".join(f"k={k}" for k in THREAD_CHOICES) + " | auto k |"
    rows = [head, "|---" * (len(THREAD_CHOICES) + 2) + "|"]
    for root, tree in (("soma (as given)", cell), ("centre (re-rooted)", reroot(cell).structure)):
        steps = [int(dhs_steps(tree, k)[0]) for k in THREAD_CHOICES]
        work = [int(dhs_schedule(tree, threads=k).work_steps[0]) for k in THREAD_CHOICES]
        auto = int(dhs_schedule(tree).threads[0])
        rows.append(f"| {root} | " + " | ".join(f"{a} ({b})" for a, b in zip(steps, work))
                    + f" | {auto} |")
    return f"{label}: steps (pull-weighted steps)\n\n" + "\n".join(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("swc_dir", help="folder of SWC files (tests/data/morphologies/real)")
    parser.add_argument("--block-size", type=int, default=128)
    parser.add_argument("--barrier-cost", type=float, default=4.0)
    args = parser.parse_args(argv)
    from hinesbatch.discretize import discretize

    batches = datasets(args.swc_dir)
    print(balance_table(batches, block_size=args.block_size, barrier_cost=args.barrier_cost))
    print()
    print(levels_table(batches))
    print()
    ca1 = os.path.join(args.swc_dir, "morph_ca1_n120.swc")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cell = discretize(ca1, nseg=8).hines_structure()
    print(dhs_table(cell, label=f"morph_ca1_n120.swc, nseg=8 ({cell.n_nodes} nodes)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
