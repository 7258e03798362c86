"""NEURON's ringtest built with ``neuron.h`` as ringtest builds it: the reference of
``hinesbatch bench network`` and of the validation tests.

Usage: ``python -m hinesbatch.bench.neuron_ringtest OUT.npz [NRING NCELL NPT BRANCH_LO
BRANCH_HI COMPART_LO COMPART_HI TSTOP [NTHREAD]]`` (ringtest's defaults: 16 8 8 10 20 1 1
100, one thread). Run it in a fresh process: NEURON keeps global state.

The model follows neuronsimulator/ringtest (``ringtest.py``, ``ring.py``, ``cell.hoc``,
``commonutils.py``) step by step, in Python and without its files:

- ``h.Random().Random123(0, 1)`` shuffles the cell types, ``Random123(type, 2)`` draws
  each type's branching (``celltypeinfo``);
- every cell is a ball and stick with ``nb`` dendrites: ``create`` order soma, dend[0..],
  ``connect dend[0](0), soma(1)`` and ``dend[i](0), dend[secpar[i]](1)``; 3-D points on
  the soma (0..15 µm) and dend[0] (15..105 µm) before ``L``/``diam`` are set; Ra 100,
  cm 1; hh on the soma; pas (0.001, -65) and hh on the dendrites; ExpSyn at dend[0](0.8)
  (tau 2) and dend[0](0.1) (tau 5, e -80);
- ``pc.set_gid2node``, ``pc.cell(gid, NetCon(soma(1)._ref_v, None))`` with threshold 10,
  ``pc.gid_connect`` around each ring (weight 0.01, delay 1), one NetStim per ring (number
  1, start 0) into its first cell; ``pc.spike_record(-1, ...)``;
- ``cvode.cache_efficient(1)``, ``pc.set_maxstep(10)``, ``stdinit()``, ``pc.psolve(tstop)``.

Written to OUT.npz: ``gids``, ``times`` (the raster, in recording order), ``types`` (the
type of every gid), per cell of the first ring ``area<i>``, ``ri<i>`` (``seg.area()`` and
``seg.ri()`` of every segment and x = 1 node, section by section), ``draws`` (the first
20 ``discunif(0, 1000)`` draws of stream (6, 2), as a check of Random123) and
``psolve_s`` (wall seconds of ``pc.psolve(tstop)``, with ``pc.nthread(NTHREAD)``).
"""
import sys
import time

import numpy as np

__all__ = ["BallStick", "celltypeinfo", "main", "ringtest"]


def _h():
    from neuron import h

    return h


def celltypeinfo(cell_type, nbranch, ncompart):
    """ringtest's ``celltypeinfo``: (secpar, segvec) of a type, from stream (type, 2)."""
    h = _h()
    r = h.Random()
    r.Random123(cell_type, 2)
    nb = int(r.discunif(nbranch[0], nbranch[1]))
    r.discunif(ncompart[0], ncompart[1])
    segvec = [int(r.repick()) for _ in range(nb)]
    secpar = [0] * nb
    slots = [[0, 0]]
    for i in range(1, nb):
        a = int(r.discunif(0, len(slots) - 1))
        secpar[i] = slots[a][0]
        slots[a][1] += 1
        if slots[a][1] > 1:
            slots[a] = [i, 0]
        else:
            slots.append([i, 0])
    return secpar, segvec


class BallStick:
    """ringtest's ``B_BallStick`` with dendrites ``secpar`` and their ``segvec`` nseg."""

    def __init__(self, secpar, segvec):
        h = _h()
        self.soma = h.Section(name="soma", cell=self)
        self.dend = [h.Section(name=f"dend[{i}]", cell=self) for i in range(len(secpar))]
        self.dend[0].connect(self.soma(1), 0)
        for i in range(1, len(secpar)):
            self.dend[i].connect(self.dend[secpar[i]](1), 0)
        for d, n in zip(self.dend, segvec):
            d.nseg = n
        self.soma.pt3dclear()
        self.soma.pt3dadd(0, 0, 0, 1)
        self.soma.pt3dadd(15, 0, 0, 1)
        self.dend[0].pt3dclear()
        self.dend[0].pt3dadd(15, 0, 0, 1)
        self.dend[0].pt3dadd(105, 0, 0, 1)
        self.soma.L = self.soma.diam = 12.6157
        self.dend[0].L = 200
        self.dend[0].diam = 1
        for d in self.dend[1:]:
            d.L = 10
            d.diam = 1
        for sec in [self.soma, *self.dend]:
            sec.Ra = 100
            sec.cm = 1
        self.soma.insert("hh")
        for d in self.dend:
            d.insert("pas")
            d.g_pas = 0.001
            d.e_pas = -65
            d.insert("hh")
        self.synlist = [h.ExpSyn(self.dend[0](0.8)), h.ExpSyn(self.dend[0](0.1))]
        self.synlist[0].tau = 2
        self.synlist[1].tau = 5
        self.synlist[1].e = -80

    def geometry(self):
        """``seg.area()`` and ``seg.ri()`` of every segment and x = 1 node, in section order."""
        area, ri = [], []
        for sec in [self.soma, *self.dend]:
            for seg in sec:
                area.append(seg.area())
                ri.append(seg.ri())
            area.append(0.0)
            ri.append(sec(1).ri())
        return np.array(area), np.array(ri)


def ringtest(nring=16, ncell=8, npt=8, branch=(10, 20), compart=(1, 1), tstop=100.0,
             nthread=1):
    """Build and run the ringtest in this process; returns the arrays of OUT.npz."""
    h = _h()
    h.load_file("stdrun.hoc")
    pc = h.ParallelContext()
    pc.nthread(int(nthread), 1)
    ntype = (nring * ncell - 1) // npt + 1
    ran = h.Random()
    ran.Random123(0, 1)
    types = [i % ntype for i in range(ncell * nring)]
    n = len(types) - 1
    for i in range(n + 1):
        j = int(ran.discunif(i, n))
        types[i], types[j] = types[j], types[i]
    cells, keep = {}, []
    for r in range(nring):
        first = r * ncell
        for gid in range(first, first + ncell):
            cell = BallStick(*celltypeinfo(types[gid], branch, compart))
            cells[gid] = cell
            pc.set_gid2node(gid, pc.id())
            nc = h.NetCon(cell.soma(1)._ref_v, None, sec=cell.soma)
            nc.threshold = 10
            pc.cell(gid, nc)
        for i in range(ncell):
            nc = pc.gid_connect(first + i, cells[first + (i + 1) % ncell].synlist[0])
            nc.delay = 1
            nc.weight[0] = 0.01
            keep.append(nc)
        stim = h.NetStim()
        stim.number = 1
        stim.start = 0
        nc = h.NetCon(stim, cells[first].synlist[0])
        nc.delay = 1
        nc.weight[0] = 0.01
        keep += [stim, nc]
    tvec, idvec = h.Vector(), h.Vector()
    pc.spike_record(-1, tvec, idvec)
    h.cvode.cache_efficient(1)
    pc.set_maxstep(10)
    h.stdinit()
    start = time.perf_counter()
    pc.psolve(tstop)
    seconds = time.perf_counter() - start
    out = {"gids": np.array(idvec, dtype=np.int64), "times": np.array(tvec), "types": types,
           "psolve_s": seconds}
    for i in range(ncell):
        out[f"area{i}"], out[f"ri{i}"] = cells[i].geometry()
    return out


def main(argv):
    """``python -m hinesbatch.bench.neuron_ringtest OUT.npz [...]`` (module docstring)."""
    out = argv[1]
    nums = [float(a) for a in argv[2:]]
    if nums:
        nring, ncell, npt, b0, b1, c0, c1 = (int(x) for x in nums[:7])
        nthread = int(nums[8]) if len(nums) > 8 else 1
        result = ringtest(nring, ncell, npt, (b0, b1), (c0, c1), nums[7], nthread)
    else:
        result = ringtest()
    h = _h()
    r = h.Random()
    r.Random123(6, 2)
    result["draws"] = [int(r.discunif(0, 1000))] + [int(r.repick()) for _ in range(19)]
    np.savez(out, **result)


if __name__ == "__main__":
    main(sys.argv)
