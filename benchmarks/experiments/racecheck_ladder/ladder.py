#!/usr/bin/env python3
"""Which ingredient of ``hines_tiled_classes`` draws compute-sanitizer's racecheck reports?

A ladder of small kernels, each correct by construction, that share the one launch's control
flow (``hb_tiled_groups`` inside ``hines_tiled_classes``) with no Hines arithmetic: a
persistent block of 768 threads takes class after class; thread 0 writes the class into
static shared memory, a block barrier, every thread stages a table into dynamic shared memory,
a block barrier, the threads past the class's groups go straight to the block barrier that
ends the class, and each group of ``gt`` threads solves "tiles": a write of its own slots,
its named barrier (``bar.sync 1 + g, gt``), a read of a neighbour's slot, its named barrier.
Warp 0 then picks the next class and thread 0 writes it, between two block barriers.

Template bit mask ``F`` adds the one launch's other ingredients one at a time:

    1   the table staged with cp.async (waited with cp.async.wait_all before the barrier)
    2   the staggered start: group g's thread 0 spins (__nanosleep) on a shared flag that
        group g - 1 sets once it has its first tile, the rest of group g at its barrier
    4   the group's work in a switch on the class's lanes (three inlined copies of it)
    8   tiles taken from per-class counters in global memory (the block's first tiles by
        thread 0 into shared memory, each group's next by its thread 0 before its barrier),
        and the next class chosen by warp 0 from the counters (most tiles left)
    16  classes that leave warps idle (groups * gt < 768); without it every class fills the
        block
    32  the class read through a reference to the static shared struct throughout (as
        hb_tiled_groups reads ``c``); without it each thread copies it to registers first
    64  (host side, without 8) every group of a class solves the same number of tiles (two),
        so that every group meets its named barrier equally often between block barriers;
        without it the classes' tile counts leave some groups a tile more than others

Every variant counts the tiles solved per class and checks the values its groups read, so a
run under racecheck also fails on a wrong answer. Run

    compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 100000 \
        python3 ladder.py [F ...]

and count the reports per kernel (``count.py``).
"""
import sys

import cupy
import numpy as np

SOURCE = r"""
struct Cls { int gt, groups, lanes, tiles, rounds; };

__device__ __forceinline__ void cp_async4(void* s, const void* g) {
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(s));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(a), "l"(g) : "memory");
}
__device__ __forceinline__ void cp_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }
__device__ __forceinline__ void group_sync(int g, int gt) {
    asm volatile("bar.sync %0, %1;" ::"r"(g + 1), "r"(gt) : "memory");
}

constexpr int TABLE = 256;

// One class (the shape of hb_tiled_groups): stage, groups solve tiles, return.
template <int F, int L>
__device__ __forceinline__ void body(const Cls& c, int k, int* dyn, const int* src,
                                     int* counters, int* done, int* bad) {
    constexpr bool CP = F & 1, STAGGER = F & 2, COUNT = F & 8;
    const int tid = threadIdx.x, gt = c.gt, groups = c.groups;
    int* buf = dyn;                       // groups * gt: each group's slots
    int* table = buf + groups * gt;       // staged by every thread of the block
    int* started = table + TABLE;         // STAGGER: started[g]
    int* taken = started + groups;        // COUNT: taken[g] group g's next tile, [groups] first
    for (int i = tid; i < TABLE; i += blockDim.x) {
        const int* from = src + ((k * TABLE + i) & 4095);
        if (CP) cp_async4(table + i, from); else table[i] = *from;
    }
    if (STAGGER && tid < groups) started[tid] = 0;
    if (COUNT && tid == 0) taken[groups] = atomicAdd(counters + k, groups);
    if (CP) cp_wait_all();
    __syncthreads();
    if (tid >= groups * gt) return;
    const int g = tid / gt, gtid = tid - g * gt;
    const int stride = gridDim.x * groups;
    int tile = COUNT ? taken[groups] + g : blockIdx.x * groups + g;
    if (STAGGER && g > 0 && tile < c.tiles) {
        if (gtid == 0)
            while (atomicOr(started + g - 1, 0) == 0) __nanosleep(100);
        group_sync(g, gt);
    }
    int* mine = buf + g * gt;
    for (int it = 0; tile < c.tiles; ++it) {
        int next = tile + stride;
        if (COUNT && gtid == 0) taken[g] = atomicAdd(counters + k, 1);
        group_sync(g, gt);
        if (COUNT) next = taken[g];
        if (STAGGER && it == 0 && gtid == 0) atomicExch(started + g, 1);
        for (int r = 0; r < c.rounds; ++r) {
            mine[gtid] = tile * L + r + table[(gtid + r) & (TABLE - 1)];
            group_sync(g, gt);
            const int o = (gtid + 1) % gt;
            if (mine[o] != tile * L + r + table[(o + r) & (TABLE - 1)]) atomicAdd(bad, 1);
            group_sync(g, gt);
        }
        if (gtid == 0) atomicAdd(done + k, 1);
        tile = next;
    }
}

template <int F>
__global__ void __launch_bounds__(768, 1)
ladder(const Cls* __restrict__ classes, int n_classes, const int* __restrict__ home,
       const int* __restrict__ src, int* counters, int* done, int* bad) {
    extern __shared__ int dyn[];
    __shared__ int next_class, lanes;
    __shared__ Cls c;
    for (int k = home[blockIdx.x]; k >= 0; k = next_class) {
        if (threadIdx.x == 0) {
            c = classes[k];
            lanes = c.lanes;
        }
        __syncthreads();
        Cls local = c;
        const Cls& cr = (F & 32) ? c : local;
        if (F & 4) {
            switch (lanes) {
                case 8: body<F, 8>(cr, k, dyn, src, counters, done, bad); break;
                case 16: body<F, 16>(cr, k, dyn, src, counters, done, bad); break;
                case 32: body<F, 32>(cr, k, dyn, src, counters, done, bad); break;
                default: __trap();
            }
        } else {
            body<F, 8>(cr, k, dyn, src, counters, done, bad);
        }
        __syncthreads();
        if (threadIdx.x < 32) {
            int best = -1, most = 0;
            if (F & 8) {  // the class with the most tiles left
                for (int j = threadIdx.x; j < n_classes; j += 32) {
                    const int left = classes[j].tiles - atomicOr(counters + j, 0);
                    if (left > most) { most = left; best = j; }
                }
#pragma unroll
                for (int off = 16; off > 0; off >>= 1) {
                    const int om = __shfl_xor_sync(0xffffffffu, most, off);
                    const int ob = __shfl_xor_sync(0xffffffffu, best, off);
                    if (om > most || (om == most && ob > best)) { most = om; best = ob; }
                }
            } else {
                best = k + 1 < n_classes ? k + 1 : -1;
            }
            if (threadIdx.x == 0) next_class = best;
        }
        __syncthreads();
    }
}
"""

THREADS = 768
MASKS = (0, 1, 2, 4, 8, 16, 32, 16 | 1, 16 | 2, 16 | 4, 16 | 8, 16 | 32, 16 | 8 | 2,
         16 | 8 | 2 | 1, 63)
#: (threads per group, lanes, tiles, rounds): groups of 2-12 warps; with idle warps (F & 16)
#: the groups that fit in 768 threads minus one group's worth are used.
CLASSES = ((128, 8, 40, 3), (64, 16, 23, 2), (256, 32, 9, 4), (96, 8, 31, 2), (192, 16, 17, 3))


#: Variants with even tiles (64): the controls of the run after the first (run 2).
EVEN = (64, 64 | 16, 64 | 32 | 16 | 4 | 2 | 1)
BLOCKS = 2


def table(f: int) -> np.ndarray:
    rows = []
    for gt, lanes, tiles, rounds in CLASSES:
        groups = max(THREADS // gt - (1 if f & 16 else 0), 1)
        if f & 64:
            tiles = 2 * BLOCKS * groups
        rows.append((gt, groups, lanes, tiles, rounds))
    return np.array(rows, np.int32)


def main(masks) -> int:
    module = cupy.RawModule(code=SOURCE, options=("-std=c++17",),
                            name_expressions=[f"ladder<{f}>" for f in masks])
    src = cupy.arange(4096, dtype=cupy.int32) * 7 + 3
    failures = 0
    for f in masks:
        if f & 64 and f & 8:
            raise ValueError(f"ladder<{f}>: even tiles (64) need the static tiles (no 8)")
        rows = table(f)
        classes = cupy.asarray(rows)
        n = len(rows)
        blocks = BLOCKS
        home = cupy.asarray(np.array([b * n // blocks for b in range(blocks)] if f & 8
                                     else [0] * blocks, np.int32))
        counters = cupy.zeros(n, cupy.int32)
        done = cupy.zeros(n, cupy.int32)
        bad = cupy.zeros(1, cupy.int32)
        smem = 4 * (THREADS + 256 + 2 * 16 + 1)
        fn = module.get_function(f"ladder<{f}>")
        fn((blocks,), (THREADS,), (classes, np.int32(n), home, src, counters, done, bad),
           shared_mem=smem)
        cupy.cuda.runtime.deviceSynchronize()
        # without counters every block visits every class and tiles split by block; with
        # them the tiles are shared through the counters: each tile once either way
        ok = bool((done.get() == rows[:, 3]).all()) and int(bad.get()[0]) == 0
        failures += not ok
        print(f"ladder<{f}> {'ok' if ok else 'WRONG'}: tiles {done.get().tolist()} "
              f"(expected {rows[:, 3].tolist()}), bad reads {int(bad.get()[0])}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main([int(a) for a in sys.argv[1:]] or list(MASKS)))
