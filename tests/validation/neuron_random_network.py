"""The stylized random network of ``tests/mpi/random_network.py`` built in NEURON with
``neuron.h``, for ``test_neuron_random_network.py``.

Usage: ``python neuron_random_network.py SEED TSTOP OUT.npz``

Every cell from :func:`random_network.shape` (``create``, ``connect`` to the parent's x = 1
end, ``L``, ``diam``, ``nseg``, Ra 100; hh on the soma, pas (0.0002, -65) and hh on the
dendrites; ``ExpSyn`` at soma(0.5) with tau 2, ``Exp2Syn`` at dend[0](0.5) with tau1 0.5,
tau2 3), registered with ``pc.set_gid2node`` and ``pc.cell(gid, NetCon(soma(0.5)._ref_v))``
(threshold 10); the NetStims as ``h.NetStim``; every connection of the description as
``pc.gid_connect`` (cells) or ``h.NetCon`` (NetStims), in the description's order; then
``stdinit`` and ``pc.psolve(tstop)``. OUT.npz holds the raster (``gids``, ``times``).
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mpi"))
import random_network


def main(argv):
    from neuron import h

    seed, tstop, out = int(argv[1]), float(argv[2]), argv[3]
    net = random_network.build(seed, swc=False)
    h.load_file("stdrun.hoc")
    pc = h.ParallelContext()
    keep, synapses, stims = [], {}, {}
    for gid in net.cell_gids.tolist():
        s = random_network.shape(seed, gid)
        secs = [h.Section(name=n) for n in s["names"]]
        for k in range(1, len(secs)):
            secs[k].connect(secs[s["parents"][k]](1), 0)
        for sec, length, diam, nseg in zip(secs, s["L"], s["diam"], s["nseg"]):
            sec.nseg = nseg
            sec.L = length
            sec.diam = diam
            sec.Ra = 100
            sec.cm = 1
        secs[0].insert("hh")
        for sec in secs[1:]:
            sec.insert("pas")
            sec.g_pas = 0.0002
            sec.e_pas = -65
            sec.insert("hh")
        exp = h.ExpSyn(secs[0](0.5))
        exp.tau = 2
        exp2 = h.Exp2Syn(secs[1](0.5))
        exp2.tau1 = 0.5
        exp2.tau2 = 3
        synapses[gid] = {"ExpSyn[0]": exp, "Exp2Syn[0]": exp2}
        pc.set_gid2node(gid, pc.id())
        nc = h.NetCon(secs[0](0.5)._ref_v, None, sec=secs[0])
        nc.threshold = 10
        pc.cell(gid, nc)
        keep += [secs, nc]
    for g in net.generator_gids.tolist():
        _, params = net.generator(g)
        stim = h.NetStim()
        stim.start, stim.interval, stim.number = (params["start"], params["interval"],
                                                  params["number"])
        stims[g] = stim
    conns = net.connections
    for s, t, syn, w, d in zip(conns["source"].tolist(), conns["target"].tolist(),
                               conns["synapse"], conns["weight"].tolist(),
                               conns["delay"].tolist()):
        target = synapses[t][syn]
        nc = h.NetCon(stims[s], target) if s in stims else pc.gid_connect(s, target)
        nc.weight[0] = w
        nc.delay = d
        keep.append(nc)
    tvec, idvec = h.Vector(), h.Vector()
    pc.spike_record(-1, tvec, idvec)
    pc.set_maxstep(10)
    h.stdinit()
    pc.psolve(tstop)
    np.savez(out, gids=np.array(idvec, dtype=np.int64), times=np.array(tvec))


if __name__ == "__main__":
    main(sys.argv)
