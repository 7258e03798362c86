"""Figures of ``hinesbatch bench tridiagonal`` (PNG, from the result tables)."""
from __future__ import annotations

from pathlib import Path

__all__ = ["write_figures"]

_SPEED = "Fig. 9: speedup over cuSPARSE"
_CPU = "Figs. 10-11: speedup over the serial CPU (fp64)"
_ACC = "Fig. 12a: forward error against the serial fp64 CPU solve"
_MEM = "Fig. 12b: device memory beyond inputs and solution (MB, fp64)"
_VB = "Fig. 13: variable sizes, fp64 (ms)"


def write_figures(tables: dict, out) -> list[Path]:
    """Write tridiagonal_fig9.png, _fig10_11.png, _fig12.png and _fig13.png under ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    paths = []
    for name, draw in (("fig9", _fig9), ("fig10_11", _fig10_11), ("fig12", _fig12), ("fig13", _fig13)):
        fig = draw(plt, tables)
        if fig is None:
            continue
        path = out / f"tridiagonal_{name}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        paths.append(path)
    return paths


def _panels(rows, key):
    """rows grouped by ``key(row)``, in first-seen order."""
    groups: dict = {}
    for r in rows:
        groups.setdefault(key(r), []).append(r)
    return groups


def _fig9(plt, tables):
    rows = tables.get(_SPEED) or []
    if not rows:
        return None
    panels = _panels(rows, lambda r: (r["dtype"], "small" if r["n"] <= 512 else "large"))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    for ax, ((dtype, grid), prs) in zip(axes[0], panels.items()):
        for n, nrows in _panels(prs, lambda r: r["n"]).items():
            x = [r["systems"] for r in nrows]
            for key, style in (("chunked / strided", "-o"), ("thomas-native / strided", "--s")):
                ax.plot(x, [r[key] for r in nrows], style, label=f"{key.split(' /')[0]} n={n}", ms=3)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set(xscale="log", yscale="log", xlabel="systems", title=f"{dtype}, {grid} systems",
               ylabel="time of gtsv2StridedBatch / ours")
        ax.legend(fontsize=6)
    fig.suptitle("Fig. 9: speedup over cuSPARSE gtsv2StridedBatch (chunked: canonical values; "
                 "thomas-native: cuThomasBatch on interleaved values)", fontsize=8)
    return fig


def _fig10_11(plt, tables):
    rows = tables.get(_CPU) or []
    if not rows:
        return None
    sizes = sorted({r["n"] for r in rows})
    fig, axes = plt.subplots(1, len(sizes), figsize=(3.0 * len(sizes), 3.0), squeeze=False)
    for ax, n in zip(axes[0], sizes):
        nrows = [r for r in rows if r["n"] == n]
        x = [r["systems"] for r in nrows]
        for key in ("chunked x", "cuThomasBatch (thomas-native) x", "gtsv2StridedBatch x", "multicore x"):
            ax.plot(x, [r[key] for r in nrows], "-o", ms=3, label=key[:-2])
        ax.set(xscale="log", yscale="log", xlabel="systems", title=f"n = {n}")
    axes[0][0].set_ylabel("speedup over serial CPU")
    axes[0][0].legend(fontsize=6)
    fig.suptitle("Figs. 10-11: speedup over the serial CPU solver (fp64)", fontsize=8)
    return fig


def _fig12(plt, tables):
    acc, mem = tables.get(_ACC) or [], tables.get(_MEM) or []
    if not acc and not mem:
        return None
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6))
    for dtype, rows in _panels(acc, lambda r: r["dtype"]).items():
        keys = [k for k in rows[0] if k.endswith(" max")]
        for k in keys:
            a.plot([r["n"] for r in rows], [max(r[k], 1e-18) for r in rows],  # 0: equal to serial
                   "-o" if dtype == "float64" else ":x",
                   ms=3, label=f"{k[:-4]} {dtype}")
    a.set(xscale="log", yscale="log", xlabel="rows per system", ylabel="max forward error",
          title="Fig. 12a: error against serial fp64")
    a.legend(fontsize=5)
    if mem:
        keys = [k for k in mem[0] if k.endswith(" MB") and not k.startswith("inputs")]
        for k in keys:  # missing (None) values are left out; tiny ones shown at 1e-6 MB
            pts = [(r["n"], max(r[k], 1e-6)) for r in mem if r.get(k) is not None]
            b.plot([p[0] for p in pts], [p[1] for p in pts], "-o", ms=3, label=k[:-3])
        b.plot([r["n"] for r in mem], [r["inputs+solution MB"] for r in mem], "k--", label="inputs + solution")
        b.set(xscale="log", yscale="log", xlabel="rows per system", ylabel="MB",
              title=f"Fig. 12b: extra device memory, {mem[0]['systems']} systems")
        b.legend(fontsize=5)
    return fig


def _fig13(plt, tables):
    rows = tables.get(_VB) or []
    if not rows:
        return None
    keys = [k for k in rows[0] if k.endswith(" ms")]
    fig, ax = plt.subplots(figsize=(6, 3.4))
    width = 0.8 / len(keys)
    for j, k in enumerate(keys):
        ax.bar([i + j * width for i in range(len(rows))], [r[k] for r in rows], width, label=k[:-3])
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(rows))], [f"sizes {r['sizes']}" for r in rows])
    ax.set(ylabel="ms", title=f"Fig. 13: variable sizes, {rows[0]['systems']} systems, fp64")
    ax.legend(fontsize=7)
    return fig
