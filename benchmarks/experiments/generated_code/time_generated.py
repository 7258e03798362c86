"""Time hines_generated (straight-line code per structure, generated.py beside this) against
``tiled`` and the copy bandwidth: 256000 x 313-node cells (medium-high), fp64, Block-Interleaved
layout; checks the first 64 cells against the serial CPU solver. An experiment, see README.md.

    OUT=dir VARIANTS='[[4,22,16],[4,44,16]]' PYTHONPATH=src python3 \
        benchmarks/experiments/generated_code/time_generated.py

VARIANTS: [nodes per step of the elimination order (factor_schedule slots), cells per block,
nodes loaded ahead]; the variants compile in parallel processes (tens of seconds each).
"""
import json, os, sys, time
import multiprocessing as mp
import numpy as np
import cupy
from hinesbatch.bench.hines import stand_in_structure
from hinesbatch.solvers.gpu.schedule import factor_schedule
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from generated import generated_source, elimination_order  # noqa: E402
from hinesbatch.solvers.gpu.compile import source_text, _INCLUDE

CELL = stand_in_structure("medium-high")[0]


def inline(text):
    seen = set()
    def header(m):
        if m.group(1) in seen: return ""
        seen.add(m.group(1)); return source_text(m.group(1))
    return _INCLUDE.sub(header, text)


def source(V, bs, ahead):
    order = elimination_order(factor_schedule(CELL, V))
    return inline(generated_source(CELL.parent, CELL.lower, CELL.u, order, ctype="double", bs=bs, ahead=ahead))


def compile_one(args):
    t0 = time.time()
    cupy.RawModule(code=source(*args), options=("-std=c++17",)).get_function("hines_generated")
    return time.time() - t0


def main():
    import hinesbatch
    from hinesbatch.bench._hines_cases import hines_values
    from hinesbatch.bench._gpu_timing import event_times, copy_bandwidth
    from hinesbatch.tree.structure import MonoBatch
    OUT = os.environ.get("OUT", ".")
    N_CELLS = int(os.environ.get("N_CELLS", 256000))
    VARIANTS = [tuple(v) for v in json.loads(os.environ.get("VARIANTS", "[[4,22,16],[2,22,32]]"))]
    PROFILE = bool(os.environ.get("PROFILE"))
    t0 = time.time()
    if len(VARIANTS) > 1:
        with mp.get_context("spawn").Pool(min(16, len(VARIANTS))) as pool:
            ctimes = pool.map(compile_one, VARIANTS)
    else:
        ctimes = [compile_one(VARIANTS[0])]
    print("parallel compile", time.time() - t0, ctimes, flush=True)
    cell = CELL
    n = cell.n_nodes
    d_host, r_host = hines_values(cell, N_CELLS)
    ref = hinesbatch.plan(MonoBatch(cell, 64), backend="serial").solve(d_host[:64].copy(), r_host[:64].copy())
    copy = copy_bandwidth(cupy) if not PROFILE else {"TB_per_s": 4.28}
    print("copy", copy, flush=True)
    tbs_copy = copy["TB_per_s"]
    plan = hinesbatch.plan(MonoBatch(cell, N_CELLS), backend="gpu", strategy="tiled", check_pivots=False)
    d0, r0 = cupy.asarray(d_host), cupy.asarray(r_host)
    wd, wr = cupy.empty_like(d0), cupy.empty_like(r0)
    def restore_t(i):
        cupy.copyto(wd, d0); cupy.copyto(wr, r0)
    from hinesbatch.solvers.gpu import layout_solver
    impl = layout_solver(plan)
    t_tiled = float(np.median(event_times(cupy, lambda i: impl.solve(wd, wr), restore_t, sets=1,
                                          repeats=2 if PROFILE else 10)))
    x_ref = wr.copy().reshape(N_CELLS, n)
    print("tiled vs serial", float(np.max(np.abs(x_ref[:64].get() - ref)) / np.max(np.abs(ref))))
    del d0, r0, wd, wr
    bytes_ = 24 * N_CELLS * n
    print("tiled ms", t_tiled, bytes_ / (t_tiled * 1e-3) / 1e12 / tbs_copy, flush=True)
    rows = []
    for (V, bs, ahead), tc in zip(VARIANTS, ctimes):
        fn = cupy.RawModule(code=source(V, bs, ahead), options=("-std=c++17",)).get_function("hines_generated")
        smem = n * bs * 16
        fn.max_dynamic_shared_size_bytes = smem
        nb = -(-N_CELLS // bs)
        pad = nb * bs - N_CELLS
        def to_layout(a, fill):
            a = np.concatenate([a, np.full((pad, n), fill)]) if pad else a
            return cupy.asarray(np.ascontiguousarray(a.reshape(nb, bs, n).transpose(0, 2, 1)))
        dl0, rl0 = to_layout(d_host, 1.0), to_layout(r_host, 0.0)
        dl, rl = cupy.empty_like(dl0), cupy.empty_like(rl0)
        flag = cupy.full(1, np.iinfo(np.uint64).max, dtype=np.uint64)
        badv = cupy.zeros(N_CELLS)
        def restore(i):
            cupy.copyto(dl, dl0); cupy.copyto(rl, rl0)
        def solve(i):
            fn((nb,), (bs,), (dl, rl, np.int64(N_CELLS), np.int64(0), flag, badv), shared_mem=smem)
        ms = float(np.median(event_times(cupy, solve, restore, sets=1, repeats=2 if PROFILE else 10)))
        x = rl.transpose(0, 2, 1).reshape(nb * bs, n)[:N_CELLS]
        err = float(cupy.max(cupy.abs(x - x_ref)) / cupy.max(cupy.abs(x_ref)))
        err_serial = float(np.max(np.abs(x[:64].get() - ref)) / np.max(np.abs(ref)))
        row = dict(V=V, bs=bs, ahead=ahead, ms=ms, ratio=bytes_ / (ms * 1e-3) / 1e12 / tbs_copy,
                   regs=fn.num_regs, local=fn.local_size_bytes, compile_s=round(tc, 1),
                   max_rel_vs_tiled=err, vs_serial=err_serial, flag=hex(int(flag.get()[0])))
        print(row, flush=True)
        rows.append(row)
        del dl0, rl0, dl, rl, x
        cupy.get_default_memory_pool().free_all_blocks()
    json.dump(dict(copy=copy, tiled_ms=t_tiled, rows=rows),
              open(os.path.join(OUT, "proto_generated.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
