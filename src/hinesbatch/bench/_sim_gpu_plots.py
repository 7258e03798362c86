"""The figure of ``hinesbatch bench sim --part gpu`` (``sim_gpu.png``): throughput and
speed-up over Jaxley against the number of simulations, and the real-morphology batches."""
from __future__ import annotations

from pathlib import Path

from ._sim_gpu_analysis import SPEEDUP_GOALS

__all__ = ["figure"]

_STYLE = {("Jaxley", "exact"): "k", ("hinesbatch", "exact"): "C0", ("hinesbatch", "table"): "C1"}
_LINE = {"float64": "-", "float32": "--"}


def _series(rows, tool, rates, precision, key):
    pts = sorted((r["cells"], r[key]) for r in rows if r["tool"] == tool
                 and r["rates"] == rates and r["precision"] == precision
                 and r.get(key) is not None)
    return [p[0] for p in pts], [p[1] for p in pts]


def figure(tables: dict, path: Path) -> Path | None:
    """Write the figure to ``path`` (None when there is nothing to draw); returns its path.

    ``tables`` holds the benchmark's rows by key (``fig2``, ``batch``, ``scaling``).
    ``ImportError`` without matplotlib.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig2, batch = tables.get("fig2") or [], tables.get("batch") or []
    if not fig2 and not batch:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.6))
    precisions = sorted({r["precision"] for r in fig2}, reverse=True)
    ax = axes[0]
    for (tool, rates), color in _STYLE.items():
        for p in precisions:
            x, y = _series(fig2, tool, rates, p, "G_comp_steps_per_s")
            if x:
                ax.plot(x, y, _LINE[p], color=color, marker="o", ms=4,
                        label=f"{tool} {rates} {p}")
    _axes(ax, "Fig. 2 workload: throughput", "G compartment-steps/s")
    ax = axes[1]
    for rates in ("exact", "table"):
        for p in precisions:
            x, y = _series(fig2, "hinesbatch", rates, p, "speedup_vs_jaxley")
            if x:
                ax.plot(x, y, _LINE[p], color=_STYLE[("hinesbatch", rates)], marker="o", ms=4,
                        label=f"hinesbatch {rates} {p}")
    gx, gy = zip(*sorted(SPEEDUP_GOALS.items()))
    ax.plot(gx, gy, "r_", ms=16, mew=2, label="goal (exact rates)")
    _axes(ax, "Speed-up over Jaxley (same N simulations)", "x Jaxley")
    ax = axes[2]
    labels = [f"{r['batch']}\n{r['precision']}" for r in batch]
    ax.bar(range(len(batch)), [r["G_comp_steps_per_s"] for r in batch],
           color=["C0" if r["batch"] == "single" else "C2" for r in batch])
    ax.set_xticks(range(len(batch)), labels)
    ax.set_ylabel("G compartment-steps/s")
    ax.set_title("Real morphologies: one cell's copies vs a mix of 17")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _axes(ax, title, ylabel):
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("simulations (cells) at once")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    if handles:
        ax.legend(fontsize=7)
