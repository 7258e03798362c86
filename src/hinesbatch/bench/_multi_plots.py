"""The figures of ``hinesbatch bench multi`` (one PNG of four panels, ``multi.png``)."""
from __future__ import annotations

from pathlib import Path

__all__ = ["figures"]

_STYLE = {"interleaved": "k-o", "tiled": "C0-s", "levels": "C1-^", "fine": "C2-v",
          "fine-balanced": "C2--v", "dhs": "C3-D", "grouped": "C4-P",
          "grouped-one": "C4--P", "multicore": "C7:x",
          "mono": "k--"}


def _series(ax, rows, keys, *, x="cells"):
    for key in keys:
        pts = sorted((r[x], r[key]) for r in rows if r.get(key) is not None)
        if pts:
            ax.plot(*zip(*pts), _STYLE.get(key, "-"), label=key, ms=4)


def figures(rows: list[dict], out: Path) -> list[Path]:
    """Write ``multi.png`` under ``out``; returns the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 9))
    ax = axes[0, 0]
    mix = [dict(r, mono=(r["mono_equivalent"] or {}).get("ms")) for r in rows
           if r["figure"] == "real-mix" and "distinct" not in r["case"]]
    _series(ax, mix, ("interleaved", "tiled", "levels", "fine", "fine-balanced", "dhs", "grouped",
                      "grouped-one", "mono"))
    ax.set_title("Real mixes (17 morphologies, nseg=1); mono: ca1 copies, same nodes")
    ax = axes[0, 1]
    for depth, style in ((2, ":"), (3, "--"), (4, "-")):
        sub = [r for r in rows if r["figure"] == "fig14" and r["case"].endswith(f"depth {depth}")]
        for key, color in (("levels", "C1"), ("interleaved", "k"), ("multicore", "C7")):
            pts = sorted((r["cells"], r[key]) for r in sub if r.get(key) is not None)
            if pts:
                ax.plot(*zip(*pts), color=color, ls=style, marker="o", ms=3,
                        label=f"{key} depth {depth}")
    ax.set_title("Fig. 14: binary trees of ~512 nodes (shared)")
    ax = axes[1, 0]
    for level, color in (("high", "C0"), ("medium", "C1"), ("low", "C2")):
        sub = [r for r in rows if r["figure"] == "arbor" and f" {level} " in r["case"]]
        for key, style in (("fine", "-v"), ("fine-balanced", "--v"), ("dhs", ":D")):
            pts = sorted((r["cells"], r["interleaved"] / r[key]) for r in sub
                         if r.get(key) and r.get("interleaved"))
            if pts:
                ax.plot(*zip(*pts), style, color=color, ms=4, label=f"{key} {level}")
    ax.axhline(1.0, color="k", lw=0.5)
    ax.set_title("Arbor Figs. 7.1/7.2: speedup over one thread per cell")
    ax.set_ylabel("interleaved time / strategy time")
    ax = axes[1, 1]
    sub = [r for r in rows if r["figure"] == "fig6"]
    keys = ("interleaved", "tiled", "levels", "fine", "dhs")
    width = 0.8 / max(1, len(sub))
    for i, r in enumerate(sub):
        ax.bar([k + i * width for k in range(len(keys))], [r.get(k) or 0 for k in keys], width,
               label=r["case"])
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(keys))], keys)
    ax.set_title("Fig. 6: mono vs multi, random trees of 200 nodes")
    for a in axes.flat:
        a.set_xscale("log") if a is not axes[1, 1] else None
        if a is not axes[1, 0]:
            a.set_yscale("log")
            a.set_ylabel(a.get_ylabel() or "ms per solve (fp64)")
        if a is not axes[1, 1]:
            a.set_xlabel("cells")
        if a.get_legend_handles_labels()[0]:
            a.legend(fontsize=6)
    fig.tight_layout()
    path = Path(out) / "multi.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]
