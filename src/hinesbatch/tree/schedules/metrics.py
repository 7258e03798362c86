"""Host-side measures of a branch schedule's balance: what balancing changes before any GPU
runs it.

For a group (a CUDA block for ``fine``, the batch for ``levels``) with ``T`` threads:

* a phase's time is the longest branch of each *round* (``T`` branches at a time, longest
  first), summed over rounds; the group's **time** is the sum over its phases, in node
  eliminations (one sweep; both sweeps take twice that);
* its **utilisation** is its nodes / (``T`` x time): 1 when no thread ever waits;
  **imbalance** is the inverse;
* its modelled **cost** is its time plus ``barrier_cost`` node eliminations per phase
  (a barrier, then reading what other threads wrote);
* a cell's **critical path** is the sum over its levels of its longest branch there: the
  time of the cell alone with a thread per branch.

Over a schedule: ``levels`` (most phases in a group: barriers per sweep), the group time
(max and mean), ``utilisation`` = all nodes / sum of ``T`` x time over the groups (the
throughput bound of a full GPU), the cells' critical path (max and mean), padding.
"""
from __future__ import annotations

import numpy as np

from ..structure import MonoBatch, as_batch
from .branch_schedule import BranchSchedule

__all__ = ["branch_metrics"]


def branch_metrics(schedule: BranchSchedule, structure, *, barrier_cost: float = 4.0) -> dict:
    """The measures of the module docstring for ``schedule`` (planned from ``structure``).

    ``barrier_cost``: the cost of one barrier (a phase boundary) in node eliminations, for
    the modelled ``cost`` = time + barrier_cost x phases of each group.
    """
    s = as_batch(structure)
    phase_group = np.repeat(np.arange(schedule.n_groups), np.diff(schedule.group_offsets))
    lo, hi = schedule.phase_offsets[:-1].astype(np.int64), schedule.phase_offsets[1:]
    width = hi - lo
    threads = (width if schedule.block_threads is None
               else schedule.block_threads[phase_group].astype(np.int64))
    phase_time = _phase_times(schedule.length.astype(np.int64), lo, width, threads)
    group_time = np.bincount(phase_group, weights=phase_time, minlength=schedule.n_groups)
    group_threads = (np.maximum.reduceat(width, schedule.group_offsets[:-1])
                     if schedule.block_threads is None else schedule.block_threads)
    group_cost = group_time + barrier_cost * np.diff(schedule.group_offsets)
    nodes = schedule.node_slot.size
    crit = _critical_paths(schedule, s)
    return {
        "groups": schedule.n_groups,
        "levels": int(np.diff(schedule.group_offsets).max(initial=0)),
        "group_time_max": int(group_time.max(initial=0)),
        "group_time_mean": float(group_time.mean()) if group_time.size else 0.0,
        "cost_max": float(group_cost.max(initial=0)),
        "cost_mean": float(group_cost.mean()) if group_cost.size else 0.0,
        "utilisation": float(nodes / max(1.0, float(np.dot(group_threads, group_time)))),
        "critical_path_max": int(crit.max(initial=0)),
        "critical_path_mean": float(crit.mean()) if crit.size else 0.0,
        "padding": float(1 - nodes / max(1, schedule.n_slots)),
    }


def _phase_times(length, lo, width, threads) -> np.ndarray:
    """Sum over rounds of each round's longest branch."""
    rounds = -(-width // np.maximum(threads, 1))
    phase = np.repeat(np.arange(lo.size), rounds)
    r = np.arange(phase.size) - np.repeat(np.cumsum(rounds) - rounds, rounds)
    first = lo[phase] + r * threads[phase]
    last = np.minimum(first + threads[phase], lo[phase] + width[phase])
    bounds = np.stack([first, last], axis=1).reshape(-1)
    if bounds.size == 0:
        return np.zeros(lo.size)
    longest = np.maximum.reduceat(np.append(length, 0), bounds)[::2]
    return np.bincount(phase, weights=longest, minlength=lo.size)


def _critical_paths(schedule: BranchSchedule, s) -> np.ndarray:
    """Per cell: the sum over its levels of its longest branch there."""
    if s.n_cells == 0:
        return np.zeros(0)
    phase_group = np.repeat(np.arange(schedule.n_groups), np.diff(schedule.group_offsets))
    phase_level = np.arange(schedule.n_phases) - schedule.group_offsets[:-1][phase_group]
    level = np.repeat(phase_level, np.diff(schedule.phase_offsets))
    value = schedule.slot_node[schedule.base]
    if isinstance(s, MonoBatch):
        cell = value // max(1, s.nodes_per_cell)
    else:
        cell = np.searchsorted(s.cell_offsets, value, side="right") - 1
    top = int(level.max(initial=0)) + 1
    longest = np.zeros(s.n_cells * top, np.int64)
    np.maximum.at(longest, cell * top + level, schedule.length.astype(np.int64))
    return longest.reshape(s.n_cells, top).sum(axis=1)
