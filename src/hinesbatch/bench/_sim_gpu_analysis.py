"""What a compartment-step costs at least on a GPU, and the goals of ``bench sim --part gpu``.

Two floors bound the time of a step from below (a throughput above them is impossible in
their model):

* **Bytes**: an engine that keeps the state in device memory reads and writes, every step,
  v of every node and hh's m, h, n of every membrane node (:func:`bytes_per_node_step`);
  at the copy bandwidth measured in the same run (bytes read + written per second) that
  takes ``nodes x bytes / bandwidth``. An engine that keeps the state on chip across steps
  can beat this floor (a ratio above 1).
* **Flops**: the arithmetic of hh's generated code and of the cable equation, counted
  operation by operation (:data:`HH_EXACT`, :data:`HH_TABLE`, :data:`CABLE`), with exp(),
  pow() and divisions expanded into the floating-point operations of their CUDA
  implementations (:data:`CALL_FLOPS`, approximate), at the card's peak (:func:`peak_flops`:
  FMA units per SM x SMs x clock x 2).

``vs_bytes_floor`` and ``vs_flops_floor`` are a measured throughput divided by the floor's.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["WORD_BYTES", "HH_EXACT", "HH_TABLE", "CABLE", "CALL_FLOPS", "FMA_UNITS", "Cost",
           "bytes_per_node_step", "flops_per_node_step", "peak_flops", "floor_ratios",
           "GOALS", "evaluate_goals"]

WORD_BYTES = {"float64": 8, "float32": 4}


@dataclass(frozen=True)
class Cost:
    """Operations of one piece of a step: plain flops (add, sub, mul, compare), divisions
    and exp()-like calls (exp; pow counts as two)."""

    what: str
    flops: int
    divisions: int = 0
    exps: int = 0


#: hh with exact rates, per membrane node and step (NEURON's hh.mod as hinesbatch generates
#: it: ``rates`` with two ``vtrap``, cnexp for m, h, n, the current evaluated at v + 0.001
#: and at v for the conductance).
HH_EXACT = (
    Cost("rates: q10 = pow(3, (celsius - 6.3)/10)", 1, 1, 2),
    Cost("rates: alpha_m, alpha_n = scale * vtrap(-(v + c), 10)", 2 * 4, 2 * 2, 2),
    Cost("rates: beta_m, alpha_h, beta_n = scale * exp(-(v + c)/k)", 3 * 2, 3, 3),
    Cost("rates: beta_h = 1/(exp(-(v + 35)/10) + 1)", 2, 2, 1),
    Cost("rates: sum, tau = 1/(q10 sum), inf = alpha/sum for m, h, n", 3 * 2, 3 * 2),
    Cost("cnexp: x += (1 - exp(dt (-1/tau))) (-(inf/tau)/(-1/tau) - x) for m, h, n",
         3 * 5, 3 * 3, 3),
    Cost("currents at v + 0.001 and at v: gna m^3 h, gk n^4, ina, ik, il, their sum",
         2 * 16 + 1, 0),
    Cost("conductance (i(v + 0.001) - i(v))/0.001 (total and per ion), into rhs and d", 4, 3),
)
#: hh with NEURON's rate table (``usetable_hh = 1``): the rates are 6 linear interpolations
#: in a 201-row table (index, fraction, 3 flops each) instead of the exp()s.
HH_TABLE = (Cost("rates from the table: index, fraction, 6 interpolations", 6 + 6 * 3),
            *HH_EXACT[5:])
#: The cable equation per node and step: axial currents into rhs and d, capacitance,
#: Hines elimination and back substitution, the voltage update.
CABLE = (Cost("axial terms of rhs and d, capacitance", 8),
         Cost("elimination p = a/d; d, rhs of the parent", 4, 1),
         Cost("back substitution and division by d; v += rhs", 3, 1))
#: Flops counted for one call in the floor [flops]: CUDA's exp (fp64: range reduction and a
#: degree-11 polynomial in FMAs; fp32: ex2.approx with its range reduction) and IEEE
#: division (reciprocal estimate and Newton-Raphson FMAs). Approximate by design.
CALL_FLOPS = {"float64": {"exp": 28, "division": 12}, "float32": {"exp": 10, "division": 8}}
#: FMA units per SM (fp64, fp32) by compute capability (NVIDIA's architecture whitepapers).
FMA_UNITS = {(6, 0): (32, 64), (7, 0): (32, 64), (7, 5): (2, 64), (8, 0): (32, 64),
             (8, 6): (2, 128), (8, 7): (2, 128), (8, 9): (2, 128), (9, 0): (64, 128),
             (12, 0): (2, 128)}


def _check_precision(precision: str) -> None:
    if precision not in WORD_BYTES:
        raise ValueError(f"precision must be one of {', '.join(WORD_BYTES)}, got {precision!r}")


def _check_fraction(membrane_fraction: float) -> None:
    if not 0.0 <= membrane_fraction <= 1.0:
        raise ValueError(f"membrane_fraction must lie in [0, 1], got {membrane_fraction!r}")


def bytes_per_node_step(precision: str, membrane_fraction: float) -> float:
    """Bytes read and written per node and step when the state lives in device memory.

    Parameters
    ----------
    precision : {"float64", "float32"}
    membrane_fraction : float
        Membrane nodes (with hh: m, h, n) per node, in [0, 1].

    Returns
    -------
    float
        ``2 x word x (1 + 3 x membrane_fraction)`` [bytes]: v and the gates, each read once
        and written once.
    """
    _check_precision(precision)
    _check_fraction(membrane_fraction)
    return 2.0 * WORD_BYTES[precision] * (1.0 + 3.0 * membrane_fraction)


def _flops(costs, precision: str) -> float:
    calls = CALL_FLOPS[precision]
    return float(sum(c.flops + c.divisions * calls["division"] + c.exps * calls["exp"]
                     for c in costs))


def flops_per_node_step(precision: str, membrane_fraction: float, *, tables: bool) -> float:
    """Flops per node and step: the cable equation at every node and hh at the membrane
    nodes, exact rates or the table, exp and division expanded (:data:`CALL_FLOPS`)."""
    _check_precision(precision)
    _check_fraction(membrane_fraction)
    hh = HH_TABLE if tables else HH_EXACT
    return _flops(CABLE, precision) + membrane_fraction * _flops(hh, precision)


def peak_flops(compute_capability: tuple[int, int], sms: int, clock_khz: float,
               precision: str) -> float | None:
    """Peak flops/s of a card's FMA units (an FMA counted as 2 flops), or None for a compute
    capability missing from :data:`FMA_UNITS`.

    Parameters
    ----------
    compute_capability : (major, minor)
    sms : int
        Streaming multiprocessors.
    clock_khz : float
        Boost clock [kHz] (CUDA's ``cudaDevAttrClockRate``).
    precision : {"float64", "float32"}
    """
    _check_precision(precision)
    units = FMA_UNITS.get(tuple(compute_capability))
    if units is None or sms <= 0 or clock_khz <= 0:
        return None
    lanes = units[0] if precision == "float64" else units[1]
    return 2.0 * lanes * sms * clock_khz * 1e3


def floor_ratios(rate: float, *, precision: str, membrane_fraction: float, tables: bool,
                 bandwidth: float | None, peak: float | None) -> dict:
    """A measured throughput against the floors.

    Parameters
    ----------
    rate : float
        Measured node-steps per second.
    bandwidth : float or None
        Copy bandwidth [bytes read + written per s]; None leaves ``vs_bytes_floor`` None.
    peak : float or None
        Peak flops/s of the precision; None leaves ``vs_flops_floor`` None.

    Returns
    -------
    dict
        ``vs_bytes_floor`` and ``vs_flops_floor``: ``rate`` over the floor's throughput.
    """
    out = {"vs_bytes_floor": None, "vs_flops_floor": None}
    if bandwidth:
        out["vs_bytes_floor"] = rate / (bandwidth / bytes_per_node_step(precision,
                                                                        membrane_fraction))
    if peak:
        out["vs_flops_floor"] = rate / (peak / flops_per_node_step(precision, membrane_fraction,
                                                                   tables=tables))
    return out


#: Speed-up over Jaxley by simulations at once (Fig. 2, exact rates, each precision): at
#: least this much; at 100 strictly faster.
SPEEDUP_GOALS = {10000: 20.0, 1000: 10.0, 100: 1.0}
#: The mixed batch's throughput within this factor of the single-morphology batch's.
MIXED_GOAL = 1.5
#: Speed-up of n GPUs over one on the same batch.
SCALING_GOALS = {2: 1.9, 4: 3.6}
GOALS = {"speedup_vs_jaxley": SPEEDUP_GOALS, "mixed_within": MIXED_GOAL,
         "gpus": SCALING_GOALS}


def _verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def evaluate_goals(fig2: list[dict], batches: list[dict], scaling: list[dict], *,
                   precisions=("float64", "float32"), judged: str | None = None,
                   devices: int = 1) -> list[str]:
    """One line per goal: the measured value and ``met``, ``NOT met`` or why it was not
    judged.

    Parameters
    ----------
    fig2, batches, scaling : list of dict
        The benchmark's rows (``tool``, ``rates``, ``precision``, ``cells``,
        ``speedup_vs_jaxley``; ``batch``, ``G_comp_steps_per_s``; ``devices``,
        ``speedup_vs_one``).
    judged : str, optional
        Why no goal can be judged (a dry run on a CPU backend): the lines say so.
    devices : int
        GPUs of the machine: scaling goals beyond it are "not measured (n GPUs here)".
    """
    lines = []

    def line(text, met):
        if judged:
            return f"{text} -> not judged ({judged})"
        return f"{text} -> {_verdict(met)}"

    for precision in precisions:
        for cells, goal in sorted(SPEEDUP_GOALS.items(), reverse=True):
            want = f">= {goal:g}x" if goal > 1 else "faster than"
            row = next((r for r in fig2 if r["tool"] == "hinesbatch" and r["rates"] == "exact"
                        and r["precision"] == precision and r["cells"] == cells), None)
            head = f"Jaxley's Fig. 2 at {cells} cells, {precision}, exact rates: {want} Jaxley"
            if row is None or row.get("speedup_vs_jaxley") is None:
                lines.append(f"{head} -> not measured")
                continue
            s = row["speedup_vs_jaxley"]
            lines.append(line(f"{head}: {s:.2f}x", s >= goal if goal > 1 else s > 1.0))
    single = {r["precision"]: r for r in batches if r["batch"] == "single"}
    mixed = {r["precision"]: r for r in batches if r["batch"] == "mixed"}
    for precision in precisions:
        head = f"mixed batch within {MIXED_GOAL:g}x of the single-morphology batch, {precision}"
        s, m = single.get(precision), mixed.get(precision)
        if not s or not m or not s.get("G_comp_steps_per_s") or not m.get("G_comp_steps_per_s"):
            lines.append(f"{head} -> not measured")
            continue
        ratio = s["G_comp_steps_per_s"] / m["G_comp_steps_per_s"]
        lines.append(line(f"{head}: single/mixed throughput {ratio:.2f}", ratio <= MIXED_GOAL))
    for n, goal in sorted(SCALING_GOALS.items()):
        head = f"{n} GPUs >= {goal:g}x one"
        row = next((r for r in scaling if r["devices"] == n), None)
        if row is None or row.get("speedup_vs_one") is None:
            why = f"{devices} GPU{'s' if devices != 1 else ''} here" if n > devices \
                else "not run"
            lines.append(f"{head} -> not measured ({why})")
            continue
        s = row["speedup_vs_one"]
        lines.append(line(f"{head}: {s:.2f}x", s >= goal))
    return lines
