// Block-Shared with the sweep's factors on chip (strategy `block-shared`, keep="factors").
//
// Layout: Block-Interleaved, as the other one-thread-per-cell kernels (hines_strided.cu):
// value i of cell c at ((c / bs) * n + i) * bs + c % bs, so that a warp's loads of one node
// are coalesced. Unlike the paper's Block-Shared (the whole rhs staged in shared memory, d
// read and written in global memory), d and rhs are read once from global memory, straight
// into registers, and x is written once over rhs: 24 bytes per node in fp64 (shared
// structure). What stays on chip is what the forward sweep needs of the backward one: per node
// j, m[j] = l[j] / D[j] and y[j] = R[j] / D[j] (D, R: pivot and rhs after j's children were
// eliminated), 2 values per node in the cell's own column of shared memory (slot j of cell
// cb of the block at column[j * bs + cb]: with one lane per cell a warp's accesses are
// adjacent words, no bank conflict, and no thread reads another's column, so the only
// barrier is after the schedule is staged; several lanes: below), plus a scratch slot (n, or
// n + k for lane k) for what has nowhere to go, so that every step is free of branches.
//
//   backward:  D[p] -= u[j] m[j],  R[p] -= u[j] y[j]   for p = parent[j];
//   forward:   x[j] = y[j] - m[j] x[parent[j]].
//
// The order of elimination is a schedule built on the host (schedule.factor_schedule): steps
// of V slots, the nodes of a step independent of each other (children always in earlier
// steps), so one thread has V dependency chains in flight. Each entry is (node, parent, flags,
// l, u); flags say where a node's contributions go:
//   HB_CARRY_IN   the node's child was this slot's node one step earlier: add the slot's carry
//                 (registers) to D and R;
//   HB_ACC        the node has children not carried: their contributions were summed in its
//                 shared slot (add them); in the forward sweep its x goes to that slot;
//   HB_CARRY_OUT  the parent is this slot's node one step later: the contribution stays in the
//                 slot's carry registers, and in the forward sweep x of the parent is there;
//   HB_ACC_INIT   first non-carried child of its parent: store into the parent's slot, not add;
//   HB_ROOT       the root: no contribution, x[parent] = 0.
// Dummy entries (node -1) pad the last step. A step's nodes have distinct parents, so its
// loads from shared memory all come before its stores. The values of the next P steps are
// loaded ahead into registers (a ring of P steps, indices fixed at compile time), so that
// enough loads are in flight although shared memory holds only a few dozen cells per SM.
//
// MONO: the schedule is the shared cell's (staged in shared memory, V * KB slots). Otherwise
// (V = 1, KB = 1) every cell has its own structure in the layout of the values:
// pflags[k] = parent << 5 | flags, u[k], l[k]; nodes in descending order, rows past the
// cell's size skipped.
//
// KB lanes per cell (MONO): the block is bs cells x KB lanes; a warp holds CW = 32 / KB
// cells, lane (k, cw) at k * CW + cw, and lane k takes slots k, k + KB, ... of every step, so
// a chain carried in registers stays in one lane. What crosses lanes goes through the cell's
// column (contributions summed in a parent's slot, x of a parent read by its children), so
// the lanes of a cell meet at a __syncwarp after every step; within a step no two of them
// touch the same slot (distinct nodes, distinct parents; each lane has its own scratch slot
// n + k). With KB lanes a few dozen cells per SM make KB times as many warps, which hide each
// other's latency. Lanes of cells past the end compute on dummy values and store nothing.
#include "hines_common.cuh"


#define HB_CARRY_IN 1
#define HB_ACC 2
#define HB_CARRY_OUT 4
#define HB_ACC_INIT 8
#define HB_ROOT 16
#define HB_FLAG_BITS 5

template <typename T> struct hb_factor_entry {
    int node, parent, flags;
    T l, u;
};

// Entry (s, v) of the schedule: the shared one (MONO, staged in shared memory: se = (node,
// parent << 5 | flags), slu = (l, u)) or this cell's node n - 1 - s.
template <typename T, bool MONO, int V>
__device__ __forceinline__ hb_factor_entry<T> hb_factor_at(
    int s, int v, const int2* se, const typename hb_pair<T>::type* slu,
    const int* __restrict__ pflags, const T* __restrict__ u, const T* __restrict__ l, int n,
    int size, long long base, int stride) {
    hb_factor_entry<T> e;
    int pf;
    if (MONO) {
        const int2 q = se[s * V + v];
        const typename hb_pair<T>::type w = slu[s * V + v];
        e.node = q.x;
        pf = q.y;
        e.l = w.x;
        e.u = w.y;
    } else {
        const int j = n - 1 - s;
        if (j >= size) {
            e.node = -1;
            e.parent = e.flags = 0;
            e.l = e.u = T(0);
            return e;
        }
        const long long k = base + j * stride;
        pf = pflags[k];
        e.node = j;
        e.l = l[k];
        e.u = u[k];
    }
    e.parent = pf >> HB_FLAG_BITS;
    e.flags = pf & ((1 << HB_FLAG_BITS) - 1);
    return e;
}

template <typename T, bool MONO, int V, int P, int KB>
__global__ void __launch_bounds__(KB == 1 ? 256 : 512)
hines_factors(T* __restrict__ d, T* __restrict__ rhs, const int2* __restrict__ sched,
              const T* __restrict__ sched_lu, const int* __restrict__ pflags,
              const T* __restrict__ u, const T* __restrict__ l, const int* __restrict__ sizes,
              int n_steps, int n_cells, int n, int bs, long long cell_base,
              unsigned long long* __restrict__ flag, T* __restrict__ bad_value) {
    using T2 = typename hb_pair<T>::type;
    extern __shared__ __align__(16) unsigned char hb_smem_fc[];
    // Shared memory: the schedule (MONO: (l, u)[NS] then (node, parent << 5 | flags)[NS],
    // NS = n_steps * V; read by every thread of the block at the same address, a broadcast),
    // then the columns. The schedule is not left to the L1 cache: d and rhs stream through it.
    constexpr int W = V * KB;  // slots per step
    constexpr int CW = 32 / KB;  // cells per warp
    static_assert(MONO || KB == 1, "lanes per cell: shared structures only");
    const int NS = MONO ? n_steps * W : 0;
    T2* slu = reinterpret_cast<T2*>(hb_smem_fc);
    int2* se = reinterpret_cast<int2*>(slu + NS);
    for (int k = threadIdx.x; k < NS; k += blockDim.x) {
        hb_cp_async(slu + k, reinterpret_cast<const T2*>(sched_lu) + k);
        hb_cp_async(se + k, sched + k);
    }
    hb_cp_async_wait_all();
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const int k = lane / CW;  // this thread's lane of its cell
    const int cb = (threadIdx.x >> 5) * CW + lane % CW;  // its cell within the block
    const int c = blockIdx.x * bs + cb;
    if (KB == 1 && c >= n_cells) return;
    const bool valid = c < n_cells;
    const int cols = bs;
    // The cell's column: slots 0..n-1 for the nodes, slot n + k lane k's scratch target for
    // what has nowhere to go (dummies; contributions carried in registers), so that every
    // entry loads and stores without a branch. m[j] (then x[j]) at sm[j * cols], y[j] at
    // sy[j * cols].
    T* sm = reinterpret_cast<T*>(se + NS) + cb;
    T* sy = sm + (n + KB) * cols;
    const int scratch = n + k;
    const int stride = bs;  // offsets within a block of cells fit in 32 bits
    const long long base = (static_cast<long long>(c / bs) * n) * bs + c % bs;
    const int size = (!MONO && sizes != nullptr) ? sizes[c] : n;
    const T* dc = d + base;
    T* rc = rhs + base;
    auto at = [&](int s, int v) {
        return hb_factor_at<T, MONO, W>(s, v * KB + k, se, slu, pflags, u, l, n, size, base,
                                        stride);
    };
    // Slot of the node (scratch for a dummy) and slot the contribution goes to (scratch when
    // carried).
    auto own_slot = [&](const hb_factor_entry<T>& e) { return e.node >= 0 ? e.node : scratch; };
    auto target_slot = [&](const hb_factor_entry<T>& e) {
        return (e.node < 0 || (e.flags & (HB_CARRY_OUT | HB_ROOT))) ? scratch : e.parent;
    };

    // Backward sweep. Ring slot q holds the values (and, per-cell structures, the entries)
    // of steps q, q + P, q + 2P, ...; a shared schedule is read at its step (a broadcast).
    constexpr int PE = MONO ? 1 : P, VE = MONO ? 1 : V;
    T vd[P][V], vr[P][V];
    hb_factor_entry<T> ve[PE][VE];
    auto fetch = [&](int q, int s) {
#pragma unroll
        for (int v = 0; v < V; ++v) {
            const hb_factor_entry<T> e = at(s, v);
            if (!MONO) ve[MONO ? 0 : q][MONO ? 0 : v] = e;
            vd[q][v] = (valid && e.node >= 0) ? dc[e.node * stride] : T(1);
            vr[q][v] = (valid && e.node >= 0) ? rc[e.node * stride] : T(0);
        }
    };
#pragma unroll
    for (int q = 0; q < P; ++q)
        if (q < n_steps) fetch(q, q);
    T cd[V], cr[V];
#pragma unroll
    for (int v = 0; v < V; ++v) cd[v] = cr[v] = T(0);
    int bad = -1;
    T bad_pivot = T(0);
    for (int s0 = 0; s0 < n_steps; s0 += P) {
#pragma unroll
        for (int q = 0; q < P; ++q) {
            const int s = s0 + q;
            if (s >= n_steps) break;
            // A step's nodes are independent and have distinct targets (schedule), so all
            // loads come first, then the arithmetic, then the stores: V chains overlap.
            hb_factor_entry<T> e[V];
            int js[V], ps[V];
            T acc_d[V], acc_r[V], old_d[V], old_r[V];
#pragma unroll
            for (int v = 0; v < V; ++v) {
                e[v] = MONO ? at(s, v) : ve[MONO ? 0 : q][MONO ? 0 : v];
                js[v] = own_slot(e[v]) * cols;
                ps[v] = target_slot(e[v]) * cols;
                acc_d[v] = sm[js[v]];
                acc_r[v] = sy[js[v]];
                old_d[v] = sm[ps[v]];
                old_r[v] = sy[ps[v]];
            }
            T m[V], y[V], new_d[V], new_r[V];
#pragma unroll
            for (int v = 0; v < V; ++v) {
                const int f = e[v].flags;
                const T D = vd[q][v] + ((f & HB_CARRY_IN) ? cd[v] : T(0)) +
                            ((f & HB_ACC) ? acc_d[v] : T(0));
                const T R = vr[q][v] + ((f & HB_CARRY_IN) ? cr[v] : T(0)) +
                            ((f & HB_ACC) ? acc_r[v] : T(0));
                const T r = hb_rcp(D);
                if (hb_bad_result(r) && e[v].node > bad) {
                    bad = e[v].node;
                    bad_pivot = D;
                }
                m[v] = e[v].l * r;
                y[v] = R * r;
                cd[v] = -e[v].u * m[v];
                cr[v] = -e[v].u * y[v];
                new_d[v] = ((f & HB_ACC_INIT) ? T(0) : old_d[v]) + cd[v];
                new_r[v] = ((f & HB_ACC_INIT) ? T(0) : old_r[v]) + cr[v];
            }
#pragma unroll
            for (int v = 0; v < V; ++v) {
                sm[js[v]] = m[v];
                sy[js[v]] = y[v];
                sm[ps[v]] = new_d[v];
                sy[ps[v]] = new_r[v];
            }
            if (KB > 1) __syncwarp();  // the other lanes' stores, before the next step's loads
            if (s + P < n_steps) fetch(q, s + P);  // refill this ring slot
        }
    }

    // Forward sweep, steps in reverse (a parent's step is later in the backward order); the
    // entries of per-cell structures again come through a ring, P steps ahead.
    hb_factor_entry<T> fe[PE][VE];
    auto fetch_entry = [&](int q, int s) {
#pragma unroll
        for (int v = 0; v < V; ++v)
            if (!MONO) fe[MONO ? 0 : q][MONO ? 0 : v] = at(s, v);
    };
    if (!MONO) {
#pragma unroll
        for (int q = 0; q < P; ++q)
            if (q < n_steps) fetch_entry(q, n_steps - 1 - q);
    }
    T xc[V];
#pragma unroll
    for (int v = 0; v < V; ++v) xc[v] = T(0);
    for (int s0 = 0; s0 < n_steps; s0 += P) {
#pragma unroll
        for (int q = 0; q < P; ++q) {
            const int s = n_steps - 1 - (s0 + q);
            if (s < 0) break;
            hb_factor_entry<T> e[V];
            int js[V];
            T mv[V], yv[V], xq[V];
#pragma unroll
            for (int v = 0; v < V; ++v) {
                e[v] = MONO ? at(s, v) : fe[MONO ? 0 : q][MONO ? 0 : v];
                js[v] = own_slot(e[v]) * cols;
                mv[v] = sm[js[v]];
                yv[v] = sy[js[v]];
                xq[v] = sm[target_slot(e[v]) * cols];
            }
#pragma unroll
            for (int v = 0; v < V; ++v) {
                const int f = e[v].flags;
                const T xp = (f & HB_ROOT) ? T(0) : ((f & HB_CARRY_OUT) ? xc[v] : xq[v]);
                xc[v] = yv[v] - mv[v] * xp;
            }
#pragma unroll
            for (int v = 0; v < V; ++v) {
                if (valid && e[v].node >= 0) rc[e[v].node * stride] = xc[v];
                sm[js[v]] = xc[v];  // read by the children that are not carried
            }
            if (KB > 1) __syncwarp();
            if (!MONO && s - P >= 0) fetch_entry(q, s - P);
        }
    }
#pragma unroll
    for (int off = KB / 2; off > 0; off >>= 1) {  // the cell's failure: largest node of its lanes
        const int other = __shfl_xor_sync(0xffffffffu, bad, off * CW);
        const T value = __shfl_xor_sync(0xffffffffu, bad_pivot, off * CW);
        if (other > bad) {
            bad = other;
            bad_pivot = value;
        }
    }
    if (valid && k == 0) hb_report(flag, bad_value + c, cell_base + c, bad, bad_pivot);
}
