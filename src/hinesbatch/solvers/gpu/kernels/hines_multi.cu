// Multi-morphology Hines solves on the schedules of hinesbatch.tree.schedules (FORMAT.md there):
// `levels` (Valero-Lara et al. 2018, §4), `fine` (Huber 2018, Arbor) and `dhs` (Zhang et al.
// 2023, DeepDendrite), plus the canonical <-> slot moves and the pivot-failure search.
//
// Values live in *slots* (the schedule's packed order); padding slots are never read or
// written. Race-free by construction: the thread that owns a node pulls the contributions of
// its children (finished in an earlier phase or step) into its own row, in the serial
// backward sweep's order, so every value has one writer and a fixed order of operations: no
// atomics, results identical run after run, and the arithmetic of the serial solver on the
// schedule's working tree (up to the GPU's contraction of a - b*c into FMAs).
//
// Pivots: the final diagonal of a node is checked where the forward sweep divides by it. A
// zero or non-finite pivot makes its thread store 1 into *failed (plain stores of one
// constant: no read-modify-write). multi_failure then runs after every solve: it returns at
// once when *failed is 0, else it scans the pivots, writes the backend's failure key
// (cell << 32 | node: the lowest failing cell, its failing node eliminated first) to *flag
// and the pivot to bad_value[cell], and clears *failed. No per-slot flags are stored.
#include "hines_common.cuh"

#define HBM_MAX_THREADS 1024
#define HBM_FIND_THREADS 256

// -- one branch (levels, fine) ----------------------------------------------------------------
// branch[b] = {base, stride, length, parent slot}: node j of branch b is slot base + j*stride;
// its child branches (first-node slots) are children[child_offsets[b] .. child_offsets[b+1]).
// Backward: pull the child branches into the last node, then Thomas towards the first node.
// The running pivot and rhs stay in registers; every node's final d and rhs are stored once.
template <typename T>
__device__ __forceinline__ void hbm_branch_backward(int b, T* __restrict__ d, T* __restrict__ rhs,
                                                    const T* __restrict__ u,
                                                    const T* __restrict__ l,
                                                    const int4* __restrict__ branch,
                                                    const int* __restrict__ child_offsets,
                                                    const int* __restrict__ children) {
    const int4 br = branch[b];
    const int s0 = br.x, h = br.y;
    int j = s0 + (br.z - 1) * h;
    T dj = d[j], rj = rhs[j];
    const int e1 = child_offsets[b + 1];
    for (int e = child_offsets[b]; e < e1; ++e) {  // in the serial sweep's order
        const int c = children[e];
        const T f = u[c] / d[c];
        dj -= f * l[c];
        rj -= f * rhs[c];
    }
    for (; j > s0; j -= h) {
        const T f = u[j] / dj;
        const T lj = l[j];
        d[j] = dj;
        rhs[j] = rj;
        dj = d[j - h] - f * lj;
        rj = rhs[j - h] - f * rj;
    }
    d[s0] = dj;
    rhs[s0] = rj;
}

// Forward: the first node reads its parent's solution (an earlier phase), then the chain.
// Returns whether a pivot of the branch is zero or not finite.
template <typename T>
__device__ __forceinline__ bool hbm_branch_forward(int b, const T* __restrict__ d,
                                                   T* __restrict__ rhs, const T* __restrict__ l,
                                                   const int4* __restrict__ branch) {
    const int4 br = branch[b];
    const int s0 = br.x, h = br.y, n = br.z, p = br.w;
    T x = rhs[s0];
    if (p >= 0) x -= l[s0] * rhs[p];
    T pivot = d[s0];
    bool bad = hb_bad_pivot(pivot);
    x /= pivot;
    rhs[s0] = x;
    for (int i = 1, j = s0 + h; i < n; ++i, j += h) {
        pivot = d[j];
        bad |= hb_bad_pivot(pivot);
        x = (rhs[j] - l[j] * x) / pivot;
        rhs[j] = x;
    }
    return bad;
}

// -- levels: one launch per level and sweep, one thread per branch b0 .. b1-1 -----------------
// MODE 0: backward sweep of a level; 1: forward sweep; 2: both (the root level, whose
// branches hang on nothing: each thread finishes its own branch).
template <typename T, int MODE>
__global__ void __launch_bounds__(HBM_MAX_THREADS)
multi_levels(T* __restrict__ d, T* __restrict__ rhs, const T* __restrict__ u,
             const T* __restrict__ l, const int4* __restrict__ branch,
             const int* __restrict__ child_offsets,
             const int* __restrict__ children, int b0, int b1, int* __restrict__ failed) {
    const int b = b0 + static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (b >= b1) return;
    if (MODE != 1) hbm_branch_backward(b, d, rhs, u, l, branch, child_offsets, children);
    if (MODE != 0 && hbm_branch_forward(b, d, rhs, l, branch)) *failed = 1;
}

// -- fine: one block per group (whole cells), its levels separated by __syncthreads() ---------
// A level wider than the block runs in rounds: thread t takes branches t, t + blockDim.x, ...
// (the same branches in both sweeps, so the root level needs no barrier between them).
// No __launch_bounds__: with one, ptxas keeps the float build at 32 registers and spills
// around the division's slow-path call; the launcher checks the block against the compiled
// kernel's max_threads_per_block instead.
template <typename T>
__global__ void multi_fine(T* __restrict__ d, T* __restrict__ rhs, const T* __restrict__ u,
           const T* __restrict__ l, const int4* __restrict__ branch,
           const int* __restrict__ child_offsets, const int* __restrict__ children,
           const int* __restrict__ group_offsets, const int* __restrict__ phase_offsets,
           int* __restrict__ failed) {
    const int p0 = group_offsets[blockIdx.x], p1 = group_offsets[blockIdx.x + 1];
    const int t = threadIdx.x, nt = blockDim.x;
    for (int p = p1 - 1; p > p0; --p) {
        const int end = phase_offsets[p + 1];
        for (int b = phase_offsets[p] + t; b < end; b += nt)
            hbm_branch_backward(b, d, rhs, u, l, branch, child_offsets, children);
        __syncthreads();
    }
    bool bad = false;
    if (p1 > p0) {
        const int end = phase_offsets[p0 + 1];
        for (int b = phase_offsets[p0] + t; b < end; b += nt) {
            hbm_branch_backward(b, d, rhs, u, l, branch, child_offsets, children);
            bad |= hbm_branch_forward(b, d, rhs, l, branch);
        }
    }
    for (int p = p0 + 1; p < p1; ++p) {
        __syncthreads();
        const int end = phase_offsets[p + 1];
        for (int b = phase_offsets[p] + t; b < end; b += nt)
            bad |= hbm_branch_forward(b, d, rhs, l, branch);
    }
    if (bad) *failed = 1;
}

// -- dhs: k = 1 << log_k lanes per cell (a sub-warp group), __syncwarp(group) per step -------
// Cells c0 .. c1-1 of the schedule order (all with this k); blockDim.x a multiple of 32, so a
// cell's lanes are k adjacent lanes of one warp. Lane t of a cell owns its slots j*k + t.
// cell[c] = {first value slot, first shape slot, steps, 0}; shape_slot[first + q] =
// {parent slot, node (-1: idle lane)}; children: cell-local slots.
template <typename T>
__global__ void __launch_bounds__(HBM_MAX_THREADS)
multi_dhs(T* __restrict__ d, T* __restrict__ rhs, const T* __restrict__ u,
          const T* __restrict__ l, const int2* __restrict__ shape_slot,
          const int* __restrict__ child_offsets, const int* __restrict__ children,
          const int4* __restrict__ cell, int c0, int c1, int log_k, int* __restrict__ failed) {
    const int gt = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    const int c = c0 + (gt >> log_k);
    if (c >= c1) return;  // whole groups leave together
    const int k = 1 << log_k, t = gt & (k - 1);
    const unsigned lane = threadIdx.x & 31u;
    const unsigned mask = k == 32 ? 0xffffffffu : ((1u << k) - 1u) << (lane & ~(k - 1u));
    const int4 info = cell[c];
    const int first = info.y, steps = info.z;
    T* __restrict__ dc = d + info.x;
    T* __restrict__ rc = rhs + info.x;
    const T* __restrict__ uc = u + info.x;
    const T* __restrict__ lc = l + info.x;
    for (int j = 0; j < steps; ++j) {  // backward: pull the children, deepest nodes first
        const int q = first + j * k + t;
        const int e0 = child_offsets[q], e1 = child_offsets[q + 1];
        if (e0 < e1) {
            const int own = q - first;
            T dq = dc[own], rq = rc[own];
            for (int e = e0; e < e1; ++e) {  // in the serial sweep's order
                const int w = children[e];
                const T f = uc[w] / dc[w];
                dq -= f * lc[w];
                rq -= f * rc[w];
            }
            dc[own] = dq;
            rc[own] = rq;
        }
        __syncwarp(mask);
    }
    bool bad = false;
    for (int j = steps - 1; j >= 0; --j) {  // forward: the steps in reverse
        const int own = j * k + t;
        const int2 slot = shape_slot[first + own];
        if (slot.y >= 0) {
            T x = rc[own];
            if (slot.x >= 0) x -= lc[own] * rc[slot.x];
            const T pivot = dc[own];
            bad |= hb_bad_pivot(pivot);
            rc[own] = x / pivot;
        }
        __syncwarp(mask);
    }
    if (bad) *failed = 1;
}

// -- canonical <-> slots ----------------------------------------------------------------------
// Value v of the canonical order lives in slot node_slot[v]. sr may be null (one array).
template <typename T>
__global__ void multi_gather(const T* __restrict__ d, const T* __restrict__ rhs,
                             T* __restrict__ sd, T* __restrict__ sr,
                             const int* __restrict__ node_slot, long long n_values) {
    const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long v = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
         v < n_values; v += step) {
        const int k = node_slot[v];
        sd[k] = d[v];
        if (sr != nullptr) sr[k] = rhs[v];
    }
}

template <typename T>
__global__ void multi_scatter(const T* __restrict__ sr, T* __restrict__ rhs,
                              const int* __restrict__ node_slot, long long n_values) {
    const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long v = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
         v < n_values; v += step)
        rhs[v] = sr[node_slot[v]];
}

// -- the failing pivot (one block, HBM_FIND_THREADS threads) ----------------------------------
// Cell of canonical value v: v / n (offsets null: n nodes per cell) or the range of offsets
// (n_cells + 1 entries) holding it. rank (nullable; per value, or per node when offsets is
// null) numbers the nodes of a cell in the tree the schedule eliminates (re-rooted); without
// it the node itself. The failing node reported is the one of highest rank in the lowest
// failing cell: eliminated first, so its pivot failed on its own (a failure spreads only to
// ancestors, of lower rank) - the serial solver's choice when not re-rooted.
template <typename T>
__global__ void __launch_bounds__(HBM_FIND_THREADS)
multi_failure(const T* __restrict__ d, const int* __restrict__ node_slot,
              const long long* __restrict__ offsets, const int* __restrict__ rank, int n,
              int n_cells, long long n_values, long long cell_base, int* __restrict__ failed,
              unsigned long long* __restrict__ flag, T* __restrict__ bad_value) {
    __shared__ unsigned long long keys[HBM_FIND_THREADS];
    __shared__ long long where[HBM_FIND_THREADS];
    __shared__ int any;
    const int t = threadIdx.x;
    if (t == 0) any = *failed;
    __syncthreads();
    if (any == 0) return;
    unsigned long long best = ~0ull;
    long long best_v = -1;
    for (long long v = t; v < n_values; v += HBM_FIND_THREADS) {
        if (!hb_bad_pivot(d[node_slot[v]])) continue;
        long long cell, node;
        if (offsets == nullptr) {
            cell = v / n;
            node = v - cell * n;
        } else {
            int lo = 0, hi = n_cells;  // offsets[lo] <= v < offsets[hi]
            while (hi - lo > 1) {
                const int mid = (lo + hi) >> 1;
                if (offsets[mid] <= v) lo = mid; else hi = mid;
            }
            cell = lo;
            node = v - offsets[lo];
        }
        const long long r = rank == nullptr ? node : rank[offsets == nullptr ? node : v];
        const unsigned long long key = (static_cast<unsigned long long>(cell) << 32) |
                                       (0xFFFFFFFFull - static_cast<unsigned long long>(r));
        if (key < best) { best = key; best_v = v; }
    }
    keys[t] = best;
    where[t] = best_v;
    __syncthreads();
    for (int half = HBM_FIND_THREADS / 2; half > 0; half >>= 1) {  // keys are distinct
        if (t < half && keys[t + half] < keys[t]) {
            keys[t] = keys[t + half];
            where[t] = where[t + half];
        }
        __syncthreads();
    }
    if (t == 0) {
        const long long v = where[0];
        if (v >= 0) {
            const long long cell = static_cast<long long>(keys[0] >> 32);
            const long long node = offsets == nullptr ? v - cell * n : v - offsets[cell];
            *flag = (static_cast<unsigned long long>(cell_base + cell) << 32) |
                    static_cast<unsigned long long>(node);
            bad_value[cell] = d[node_slot[v]];
        }
        *failed = 0;
    }
}
