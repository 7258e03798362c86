"""Jaxley's Fig. 2 workload, built in Jaxley the way its users build it.

One cell read with ``jx.read_swc(path, ncomp=4)``, Jaxley's ``HH`` channel everywhere (its
defaults are NEURON's hh at 6.3 degC), Ra and cm as hinesbatch's cells, v and the gates
initialised at -65 mV, a step current into the first soma compartment whose amplitude is
the vmapped argument, v recorded there; ``jax.jit(jax.vmap(simulate))`` over the
amplitudes, Jaxley's default solver (implicit Euler, ``jaxley.dhs``)::

    fig2 = JaxleyFig2(path, precision="float64")   # jax_enable_x64 set accordingly
    seconds, v = fig2.run(amps)                    # v: (len(amps), steps + 1) [mV]

The first call of a batch size compiles; :meth:`JaxleyFig2.run` times one call, ended with
``block_until_ready``. JAX is told not to preallocate most of the GPU's memory
(``XLA_PYTHON_CLIENT_PREALLOCATE=false`` unless set), so that CuPy in the same process
finds room.
"""
from __future__ import annotations

import os
import time
import warnings

import numpy as np

from . import _sim_gpu_work as work

__all__ = ["jaxley_missing", "jaxley_versions", "JaxleyFig2"]


def _import_jax():
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax

    return jax


def jaxley_missing() -> str | None:
    """Why Jaxley cannot run here (not installed, or broken), or None."""
    try:
        _import_jax()
        import jaxley  # noqa: F401
        from jaxley.channels import HH  # noqa: F401
    except Exception as exc:  # ImportError, or an install that fails at import
        return f"{type(exc).__name__}: {exc}"
    return None


def jaxley_versions() -> dict:
    """Versions of jax, jaxlib and jaxley, and the device JAX computes on (``jax_device``,
    ``jax_platform``: ``"gpu"``, ``"cpu"``...)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("jax", "jaxlib", "jaxley"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    try:
        device = _import_jax().devices()[0]
        out["jax_device"], out["jax_platform"] = str(device), str(device.platform)
    except Exception as exc:  # no backend at all
        out["jax_device"], out["jax_platform"] = f"none ({exc})", None
    return out


class JaxleyFig2:
    """Jaxley's Fig. 2 cell, simulated for many clamp amplitudes at once.

    Parameters
    ----------
    path : path
        SWC file of the cell.
    precision : {"float64", "float32"}
        Sets ``jax_enable_x64`` (a process-wide flag of JAX) before the cell is built.
    steps : int
        Time steps per simulation (``dt`` :data:`~._sim_gpu_work.DT` ms).

    Attributes
    ----------
    compartments : int
        Compartments of the cell (branches x 4).
    branches : int
    """

    def __init__(self, path, *, precision: str = "float64", steps: int = work.STEPS):
        if precision not in ("float64", "float32"):
            raise ValueError(f"precision must be 'float64' or 'float32', got {precision!r}")
        jax = _import_jax()
        jax.config.update("jax_enable_x64", precision == "float64")
        import jaxley as jx
        from jaxley.channels import HH

        self.precision, self.steps = precision, int(steps)
        with warnings.catch_warnings():  # SWC reading notes of real files
            warnings.simplefilter("ignore")
            cell = jx.read_swc(os.fspath(path), ncomp=work.NCOMP)
        cell.insert(HH())
        cell.set("axial_resistivity", work.RA)
        cell.set("capacitance", work.CM)
        cell.set("v", work.V_INIT)
        cell.init_states()
        nodes = cell.nodes
        soma = np.flatnonzero(nodes["soma"].to_numpy()) if "soma" in nodes else np.array([0])
        target = cell.select(nodes=[int(soma[0]) if soma.size else 0])
        target.record("v", verbose=False)
        self.compartments = len(nodes)
        self.branches = int(cell.total_nbranches)
        dt = work.DT
        # Jaxley runs int(t_max // dt + 1) steps: half a step below steps * dt is safe from
        # rounding either way
        t_max = (self.steps - 0.5) * dt
        delay, dur = work.STIMULUS

        def simulate(amp):
            current = jx.step_current(i_delay=delay, i_dur=dur, i_amp=amp, delta_t=dt,
                                      t_max=t_max)
            stimuli = target.data_stimulate(current)
            return jx.integrate(cell, delta_t=dt, t_max=t_max, data_stimuli=stimuli)

        self._jax = jax
        self._run = jax.jit(jax.vmap(simulate))

    def run(self, amps) -> tuple[float, np.ndarray]:
        """Simulate every amplitude [nA] of ``amps`` at once.

        Returns
        -------
        seconds : float
            Wall time of the call, ended with ``block_until_ready`` (a batch size's first
            call includes compilation).
        v : numpy.ndarray
            Shape (len(amps), steps + 1): v [mV] at the clamp, t = 0 first.

        Raises
        ------
        RuntimeError
            JAX's precision flag changed since the cell was built, or Jaxley computed in
            another precision or for another number of steps.
        """
        jnp = self._jax.numpy
        x64 = jnp.zeros(()).dtype == np.float64  # the flag's effect, in any JAX version
        if x64 != (self.precision == "float64"):
            raise RuntimeError(f"jax_enable_x64 is {x64} but this cell was built for "
                               f"{self.precision}; build one JaxleyFig2 per precision in turn")
        x = jnp.asarray(np.asarray(amps, dtype=float), dtype=self.precision)
        start = time.perf_counter()
        out = self._run(x)
        out.block_until_ready()
        seconds = time.perf_counter() - start
        if str(out.dtype) != self.precision:
            raise RuntimeError(f"Jaxley computed in {out.dtype}, not {self.precision}")
        v = np.asarray(out).reshape(len(x), -1)
        if v.shape[1] != self.steps + 1:
            raise RuntimeError(f"Jaxley returned {v.shape[1]} samples per simulation, not "
                               f"{self.steps + 1} (steps + 1)")
        return seconds, v
