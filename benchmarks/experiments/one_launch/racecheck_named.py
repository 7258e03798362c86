#!/usr/bin/env python3
"""Does compute-sanitizer's racecheck follow a block barrier (``__syncthreads``) that comes
after named barriers (``bar.sync id, count``)? A minimal kernel, correct by construction:

    thread 0 writes s[0]; __syncthreads(); every thread reads s[0];
    each warp: `rounds` named barriers of its own (id 1 + warp, 32 threads);
    thread 0 writes s[1]; __syncthreads(); every thread reads s[1].

``hines_tiled_classes`` has this pattern (groups with named barriers, then the block's barrier
before the next class). Run under racecheck; the printed sums check the values read.

    compute-sanitizer --tool racecheck --racecheck-report hazard python3 racecheck_named.py \
        [THREADS ...]
"""
import sys

import cupy

SOURCE = r"""
extern "C" __global__ void pattern(int* out, int rounds, int mode) {
    // mode 0: no named barriers; 1: every warp uses its own; 2: only the first half of the
    // warps do, the others go straight to the block barrier; 3: as 2, but every thread first
    // waits (spinning on a shared counter) until the named-barrier warps are done; 4: as 1,
    // but first a phase in which pairs of warps share a barrier (id 1 + warp / 2, 64 threads),
    // then a block barrier, so that ids 1.. are used with 64 threads, then with 32.
    __shared__ int s[2], done;
    const int warp = threadIdx.x / 32, warps = blockDim.x / 32;
    if (threadIdx.x == 0) { s[0] = 7; done = 0; }
    __syncthreads();
    int v = s[0];
    for (int r = 0; mode == 4 && r < rounds; ++r)
        asm volatile("bar.sync %0, %1;" :: "r"(warp / 2 + 1), "r"(64) : "memory");
    if (mode == 4) __syncthreads();
    const bool named = mode == 1 || mode == 4 || (mode >= 2 && warp < min(warps / 2, 15));
    for (int r = 0; named && r < rounds; ++r)
        asm volatile("bar.sync %0, %1;" :: "r"(warp + 1), "r"(32) : "memory");
    if (named && threadIdx.x % 32 == 0) atomicAdd(&done, 1);
    if (mode == 3)
        while (atomicAdd(&done, 0) < min(warps / 2, 15)) __nanosleep(100);
    __syncthreads();
    if (threadIdx.x == 0) s[1] = 11;
    __syncthreads();
    v += s[1];
    atomicAdd(out, v);
}
"""

PHASES = r"""
extern "C" __global__ void phases(int* out, int rounds) {
    // As hines_tiled_classes switches classes: in each phase thread 0 writes the phase's
    // group size, a block barrier, then the first `active` threads form groups of `size`
    // threads (32 or 64), each with its own named barrier (id 1 + group), the other warps
    // idle; every thread waits until the groups are done (a shared counter), a block
    // barrier, and the next phase.
    __shared__ int size, active, done;
    int v = 0;
    for (int phase = 0; phase < 4; ++phase) {
        if (threadIdx.x == 0) {
            size = phase % 2 ? 64 : 32;
            active = phase % 2 ? blockDim.x : blockDim.x / 2;
            done = 0;
        }
        __syncthreads();
        const int gt = size, n = active;
        v += gt;
        if (threadIdx.x < n) {
            const int g = threadIdx.x / gt;
            for (int r = 0; r < rounds; ++r)
                asm volatile("bar.sync %0, %1;" :: "r"(g + 1), "r"(gt) : "memory");
            if (threadIdx.x % gt == 0) atomicAdd(&done, 1);
        }
        while (atomicAdd(&done, 0) < n / gt) __nanosleep(100);
        __syncthreads();
    }
    atomicAdd(out, v);
}
"""


if __name__ == "__main__":
    fn = cupy.RawKernel(SOURCE, "pattern")
    # threads per block: 256, and (eleventh session) the one launch's 960 and 1024
    for threads in [int(t) for t in (sys.argv[1:] or ["256"])]:
        # modes 1 and 4 give every warp (pair) a barrier id of its own: 15 warps at most
        for mode in (0, 1, 2, 3, 4) if threads <= 480 else (0, 2, 3):
            out = cupy.zeros(1, cupy.int32)
            fn((1,), (threads,), (out, cupy.int32(3), cupy.int32(mode)))
            cupy.cuda.runtime.deviceSynchronize()
            print(f"{threads} threads, mode {mode}: sum {int(out[0])} "
                  f"(expected {threads * 18})", flush=True)
    fn = cupy.RawKernel(PHASES, "phases")
    out = cupy.zeros(1, cupy.int32)
    fn((1,), (256,), (out, cupy.int32(3)))
    cupy.cuda.runtime.deviceSynchronize()
    print(f"phases: sum {int(out[0])} (expected {256 * 192})", flush=True)
