"""``hinesbatch simulate --mechanism ...``: cells with mechanisms, run by :class:`hinesbatch.Simulation`.

The command builds one :class:`hinesbatch.Cell` per ``--cells`` copy (the named mechanisms
inserted everywhere, the clamps placed), records every ``--record`` in every cell, runs, and
writes the :class:`hinesbatch.Results` with :func:`write_outputs`, which ``hinesbatch run``
shares. Everything that can be checked before the run is (mechanism names, output folders,
matplotlib and h5py, disk and memory), so a run is not lost to a typo in a file name.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import time

from ..io.atomic import check_writable
from .cli_options import (DEFAULT_LOCATION, SPIKE_THRESHOLD_MV, USER_ERRORS, ClampOption,
                          RecordOption, check_disk, fail, npz_path, one_line, plot_path)
from .memory import MemoryEstimate
from .passive import default_morphology, show_progress
from .stimuli import TimeGrid

__all__ = ["run_active", "write_outputs", "check_outputs", "spike_summary", "location_text"]

#: Output kinds (the keys of a model file's ``outputs``) -> the option that names them.
OUTPUT_OPTIONS = {"npz": "--out", "spikes": "--spikes-out", "plot": "--plot",
                  "raster": "--raster"}
#: Float64 values held per node and cell while running, at most for the built-in mechanisms
#: (v, d, rhs, the mechanisms' states and currents): the memory estimate's basis.
_VALUES_PER_NODE = 16


def run_active(args: argparse.Namespace, clamps: list[ClampOption],
               records: list[RecordOption]) -> int:
    """Build, run and save the simulation of ``hinesbatch simulate --mechanism``.

    Returns the exit status: 0, or 1 with one line on stderr.
    """
    import hinesbatch as hb

    spikes = bool(args.spikes or args.spikes_out or args.raster)
    try:
        outputs = check_outputs({"npz": args.out, "plot": args.plot,
                                 "spikes": args.spikes_out, "raster": args.raster})
        mechanisms = _mechanisms(hb, args.mechanism)
        n_steps = TimeGrid(args.tstop, args.dt).n_steps
        check_disk(outputs["npz"], args, traces=len(records))
    except USER_ERRORS as exc:
        return fail(one_line(exc))
    swc = default_morphology() if args.swc is None else contextlib.nullcontext(args.swc)
    with swc as path:
        try:
            start = time.perf_counter()
            sim, n_nodes = _build(hb, path, args, mechanisms, clamps, records, spikes=spikes,
                                  n_samples=n_steps // args.record_every + 1)
            setup_s = time.perf_counter() - start
            show = show_progress(args.progress, n_steps * n_nodes * args.cells)
            start = time.perf_counter()
            res = sim.run(args.tstop, progress=show)
            run_s = time.perf_counter() - start
            written = write_outputs(res, outputs)
        except USER_ERRORS as exc:
            return fail(one_line(exc))
    clamp_text = "; ".join(f"IClamp {c.amp:g} nA {c.delay:g}-{c.delay + c.dur:g} ms at "
                           f"{location_text(c.location)}" for c in clamps)
    celsius = getattr(sim, "celsius", args.celsius)
    model = (f"{os.path.basename(str(path))}: {n_nodes} nodes"
             f"{f' x {args.cells} cells' if args.cells > 1 else ''}; "
             f"{' + '.join(mechanisms)} everywhere; celsius "
             f"{'as NEURON' if celsius is None else format(celsius, 'g')}; hh tables "
             f"{'off' if args.no_tables else 'on'}")
    print("\n".join([f"cell:     {model}",
                     f"stimulus: {clamp_text}",
                     *summary_lines(res, n_cells=args.cells, n_steps=n_steps, dt=args.dt,
                                    tstop=args.tstop, setup_s=setup_s, run_s=run_s,
                                    written=written, spikes=spikes)]))
    return 0


def location_text(location: tuple[str, float]) -> str:
    """``("soma[0]", 0.5)`` -> ``"soma[0](0.5)"`` (x exactly, as ``repr`` gives it)."""
    section, x = location
    return f"{section}({float(x)!r})"


def _mechanisms(hb, names: list[str]) -> list[str]:
    """The names in order without repeats (NEURON inserts once), each a built-in mechanism."""
    valid = list(hb.mechanisms.names())
    unique = list(dict.fromkeys(names))
    for name in unique:
        if name not in valid:
            raise ValueError(f"--mechanism {name}: unknown mechanism; valid: {', '.join(valid)}")
    return unique


def _build(hb, path, args, mechanisms, clamps, records, *, spikes: bool, n_samples: int):
    """The :class:`Simulation` of ``args.cells`` copies with its recordings set, and the
    nodes per cell. The memory the run needs is checked once the first cell is built."""
    morphology = hb.read_swc(path)
    pas = {k: v for k, v in (("g_pas", args.g_pas), ("e_pas", args.e_pas)) if v is not None}

    def cell():
        c = hb.Cell(morphology, nseg=args.nseg, d_lambda=args.d_lambda, ra=args.ra, cm=args.cm)
        for name in mechanisms:
            c.insert(name, **(pas if name == "pas" else {}))
        for clamp in clamps:
            c.place("IClamp", location_text(clamp.location), delay=clamp.delay, dur=clamp.dur,
                    amp=clamp.amp)
        return c

    first = cell()
    n_nodes = int(first.geometry.n_nodes)
    _check_memory(args.cells, n_nodes, len(records), n_samples)
    cells = [first] + [cell() for _ in range(args.cells - 1)]
    options = {"celsius": args.celsius} if args.celsius is not None else {}
    if args.precision != "float64":
        options["precision"] = args.precision
    sim = hb.Simulation(cells, dt=args.dt, v_init=args.v_init, backend=args.backend,
                        tables=not args.no_tables, **options)
    for gid in range(len(cells)):
        for variable, location in records:
            sim.record(variable, cell=gid, location=location_text(location),
                       every=args.record_every)
        if spikes:
            source = sim.spike_source(gid, location_text(DEFAULT_LOCATION),
                                      threshold=SPIKE_THRESHOLD_MV)
            sim.record_spikes(source)
    return sim, n_nodes


def _check_memory(n_cells: int, n_nodes: int, n_traces: int, n_samples: int) -> None:
    estimate = MemoryEstimate(host={
        "state": n_cells * n_nodes * _VALUES_PER_NODE * 8,
        "recordings": n_cells * n_traces * n_samples * 8})
    estimate.check(hint="simulate fewer cells (--cells), record fewer variables or every k-th "
                        "step (--record-every K)")


def check_outputs(outputs: dict) -> dict:
    """The files to write, checked before the run: ``{"npz", "spikes", "plot", "raster"}`` ->
    path or None.

    ``.npz`` is appended to ``npz`` and ``.png`` to plots without an extension. Raises
    ``OSError`` or ``ValueError`` naming the file when a folder is missing or not writable,
    or when matplotlib (plots) or h5py (spikes) is missing.
    """
    unknown = sorted(set(outputs) - set(OUTPUT_OPTIONS))
    if unknown:
        raise ValueError(f"unknown outputs {', '.join(unknown)}; valid: "
                         f"{', '.join(OUTPUT_OPTIONS)}")
    paths = {key: None for key in OUTPUT_OPTIONS}
    for key, value in outputs.items():
        if value is None:
            continue
        value = os.fspath(value)
        if key == "npz":
            value = npz_path(value)
        elif key in ("plot", "raster"):
            value = plot_path(value, OUTPUT_OPTIONS[key])
        elif key == "spikes":
            try:
                import h5py  # noqa: F401
            except ImportError:
                raise OSError("--spikes-out needs h5py (SONATA spike reports are HDF5): "
                              "pip install h5py") from None
        check_writable(value)
        paths[key] = value
    return paths


def write_outputs(res, paths: dict) -> list[str]:
    """Write ``res`` (a :class:`hinesbatch.Results`) to the files ``paths`` names (as
    :func:`check_outputs` returns them). Each writer of :class:`hinesbatch.Results` writes
    atomically (:mod:`hinesbatch.io.atomic`). Returns the files written."""
    writers = {"npz": res.save, "spikes": res.save_spikes,
               "plot": lambda p: res.plot(p), "raster": lambda p: res.raster(p)}
    written = []
    for key in OUTPUT_OPTIONS:
        path = paths.get(key)
        if path is not None:
            writers[key](path)
            written.append(path)
    return written


def spike_summary(res) -> str:
    """``"7 (3 of 4 sources fired)"``."""
    counts = [len(times) for times in res.spikes.values()]
    return f"{sum(counts)} ({sum(1 for c in counts if c)} of {len(counts)} sources fired)"


def summary_lines(res, *, n_cells: int, n_steps: int, dt: float, tstop: float, setup_s: float,
                  run_s: float, written: list[str], spikes: bool) -> list[str]:
    """The lines of a run's summary shared by ``simulate --mechanism`` and ``run``."""
    keys = list(res.keys())
    lines = [f"run:      {n_cells} cell{'s' if n_cells != 1 else ''}, {n_steps} steps of "
             f"{dt:g} ms to {tstop:g} ms; {len(keys)} recording{'s' if len(keys) != 1 else ''}"]
    backend = getattr(res, "meta", {}).get("backend")
    if backend:
        lines.append(f"backend:  {backend}")
    lines.append(f"time:     {run_s:.3f} s running (including compiling kernels on first use), "
                 f"{setup_s:.3f} s set-up")
    if keys:
        trace = res[keys[0]]
        unit = res.units.get(keys[0], "")
        lines.append(f"{keys[0]}: {trace[0]:.3f} -> {trace[-1]:.3f} {unit} (min "
                     f"{trace.min():.3f}, max {trace.max():.3f})")
    if spikes or res.spikes:
        lines.append(f"spikes:   {spike_summary(res)}")
    lines.append(f"output:   {', '.join(written) if written else 'none'}")
    return lines
