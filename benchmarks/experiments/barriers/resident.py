#!/usr/bin/env python3
"""How many blocks an H200 SM keeps resident when a kernel uses named barriers.

Each kernel spins ~50 us per block and records its SM and start/end (%globaltimer); blocks of
32 threads, no shared memory, 132 * 64 blocks. The most blocks overlapping on one SM is the
residency. Variants: only __syncthreads (1 barrier), a named barrier with an immediate id
(bar.sync K: K + 1 barriers), and one with a register id (ptxas reserves all 16).
argv: OUT.json"""
import json, sys
import cupy
import numpy as np

SRC = r"""
__device__ __forceinline__ unsigned hb_smid() { unsigned s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s)); return s; }
__device__ __forceinline__ unsigned long long hb_now() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ __forceinline__ void spin(long long cycles) { const long long s = clock64(); while (clock64() - s < cycles) { } }
#define BODY(SYNC) \
    const unsigned long long t0 = hb_now(); SYNC; spin(cycles); SYNC; \
    if (threadIdx.x == 0) { sm[blockIdx.x] = hb_smid(); t[2 * blockIdx.x] = t0; t[2 * blockIdx.x + 1] = hb_now(); }
extern "C" __global__ void k_sync(unsigned* sm, unsigned long long* t, long long cycles, int id) { BODY(__syncthreads()) }
extern "C" __global__ void k_imm1(unsigned* sm, unsigned long long* t, long long cycles, int id) { BODY(asm volatile("bar.sync 1, 32;" ::: "memory")) }
extern "C" __global__ void k_imm3(unsigned* sm, unsigned long long* t, long long cycles, int id) { BODY(asm volatile("bar.sync 3, 32;" ::: "memory")) }
extern "C" __global__ void k_imm7(unsigned* sm, unsigned long long* t, long long cycles, int id) { BODY(asm volatile("bar.sync 7, 32;" ::: "memory")) }
extern "C" __global__ void k_reg(unsigned* sm, unsigned long long* t, long long cycles, int id) { BODY(asm volatile("bar.sync %0, 32;" :: "r"(id) : "memory")) }
"""
mod = cupy.RawModule(code=SRC)
n_sm = cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
blocks = n_sm * 64
out = {}
for name in ("k_sync", "k_imm1", "k_imm3", "k_imm7", "k_reg"):
    fn = mod.get_function(name)
    sm = cupy.zeros(blocks, np.uint32)
    t = cupy.zeros(2 * blocks, np.uint64)
    for _ in range(2):
        fn((blocks,), (32,), (sm, t, np.int64(100000), np.int32(1)))
    cupy.cuda.runtime.deviceSynchronize()
    s, tt = sm.get(), t.get().reshape(-1, 2).astype(np.int64)
    most = 0
    for k in range(n_sm):
        ev = sorted([(a, 1) for a, b in tt[s == k]] + [(b, -1) for a, b in tt[s == k]],
                    key=lambda e: (e[0], e[1]))
        live = 0
        for _, dv in ev:
            live += dv
            most = max(most, live)
    out[name] = {"max_resident_blocks_per_sm": int(most), "num_regs": fn.num_regs}
    print(name, out[name], flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
