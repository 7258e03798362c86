"""PNG figures of ``hinesbatch bench hines``, drawn like the paper's Figs. 3-5."""
from __future__ import annotations

from pathlib import Path

__all__ = ["figures"]

_LABELS = {"multicore": "Multicore CPU", "flat": "Flat", "interleaved": "Full-Interleaved",
           "block-interleaved": "Block-Interleaved (BS 128)", "block-shared": "Block-Shared",
           "tiled": "tiled (hinesbatch)"}


def _table(tables: dict, prefix: str):
    for title, rows in tables.items():
        if title.startswith(prefix):
            return rows
    return None


def figures(tables: dict, out: Path) -> list[Path]:
    """Write fig3.png, fig4.png and fig5.png (those whose data exist); return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    out.mkdir(parents=True, exist_ok=True)
    speed = _table(tables, "Figs. 3 and 5: speedup")
    paths = []
    if speed:
        multi = _table(tables, "Several GPUs")
        paths.append(_fig3(speed, multi, out / "fig3.png"))
        paths.append(_fig5(speed, out / "fig5.png"))
    bs = _table(tables, "Fig. 4")
    if bs:
        paths.append(_fig4(bs, speed, out / "fig4.png"))
    return [p for p in paths if p is not None]


def _series(rows, category, key):
    pts = [(r["cells"], r[key]) for r in rows if r["category"] == category and r.get(key)]
    return [p[0] for p in pts], [p[1] for p in pts]


def _fig3(speed, multi, path):
    import matplotlib.pyplot as plt

    if not any(r["category"] == "medium-high" for r in speed):
        return None
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for key in ("multicore", "flat", "interleaved", "tiled"):
        x, y = _series(speed, "medium-high", key)
        ax.plot(x, y, marker="o", label=_LABELS[key] + (" (1 GPU)" if key != "multicore" else ""))
    if multi:
        pts = [(r["cells"], r["speedup_all_gpus_native"]) for r in multi
               if r["strategy"] == "interleaved" and r["speedup_all_gpus_native"]]
        if pts:
            ax.plot(*zip(*pts), marker="s", ls="--", label="Full-Interleaved (all GPUs)")
    _style(ax, "Fig. 3: medium-high cells, speedup over serial CPU")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def _fig4(bs_rows, speed, path):
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    bi = [r for r in bs_rows if r["strategy"] == "block-interleaved" and r["speedup_native"]]
    left.bar([str(r["bs"]) for r in bi], [r["speedup_native"] for r in bi], color="tab:green")
    full = [r for r in bs_rows if r["strategy"] == "interleaved" and r["speedup_native"]]
    if full:
        left.axhline(full[0]["speedup_native"], color="tab:red", ls="--", label="Full-Interleaved")
        left.legend()
    left.set_xlabel("BS (cells per block)")
    left.set_ylabel("speedup over serial CPU")
    left.set_title("Block-Interleaved, BS sweep")
    bars = {}
    shared = [r for r in bs_rows if r["strategy"] == "block-shared" and r["speedup_native"]]
    if shared:
        best = max(shared, key=lambda r: r["speedup_native"])
        bars[f"Block-Shared\n(BS {best['bs']})"] = best["speedup_native"]
    top = max((r["cells"] for r in speed if r["category"] == "medium-high"), default=None)
    for r in speed:
        if r["category"] == "medium-high" and r["cells"] == top:
            for key, label in (("flat", "Flat"), ("interleaved", "Full-Inter"),
                               ("multicore", "Multi"), ("tiled", "tiled")):
                if r.get(key):
                    bars[label] = r[key]
    right.bar(list(bars), list(bars.values()), color="tab:blue")
    right.set_yscale("log")
    right.set_title(f"medium-high, {top} cells")
    right.set_ylabel("speedup over serial CPU")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def _fig5(speed, path):
    import matplotlib.pyplot as plt

    cats = ["small-low", "small-high", "medium-low", "medium-high", "big-low", "big-high"]
    cats = [c for c in cats if any(r["category"] == c for r in speed)]
    if not cats:
        return None
    fig, axes = plt.subplots(3, 2, figsize=(10, 10), squeeze=False)
    for ax, cat in zip(axes.reshape(-1), cats):
        for key in ("multicore", "interleaved", "block-interleaved", "tiled"):
            x, y = _series(speed, cat, key)
            ax.plot(x, y, marker="o", label=_LABELS[key])
        node = next(r for r in speed if r["category"] == cat)
        _style(ax, f"{cat} ({node['nodes']} nodes, {node['sections']} sections)")
    for ax in axes.reshape(-1)[len(cats):]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def _style(ax, title):
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("cells")
    ax.set_ylabel("speedup over serial CPU")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
