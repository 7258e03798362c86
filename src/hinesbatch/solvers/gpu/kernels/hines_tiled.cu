// Tiled Hines solves: the canonical (cell-contiguous) values are staged through shared memory.
//
// One warp per block. The block copies its tile of cells' d and rhs from global memory into
// shared memory with cp.async (consecutive lanes read consecutive addresses: coalesced, and
// many loads in flight), then one lane per cell runs both sweeps in shared memory, then the
// warp writes x back, coalesced, over rhs. Each value crosses device memory once each way
// (24 bytes per node in fp64 for a shared structure): the sweeps' intermediates stay on chip.
//
// The sweeps keep, per node j, m[j] = l[j] / D[j] and y[j] = R[j] / D[j] in the slots of d[j]
// and rhs[j] (D, R: pivot and rhs after j's children were eliminated), so that
//   backward:  D[p] -= u[j] m[j],  R[p] -= u[j] y[j]   for p = parent[j];
//   forward:   x[j] = y[j] - m[j] x[parent[j]].
#include "hines_common.cuh"

// Shared structure (MonoBatch). The elimination follows a schedule built on the host
// (hinesbatch.solvers.gpu.schedule): batches of KB independent nodes with distinct parents,
// children always in earlier batches. A thread loads all 4*KB values of a batch before it
// stores any, so the KB divisions overlap instead of forming one long dependency chain; the
// forward sweep runs the batches in reverse. Slot layout per cell (stride S >= n + KB + 1):
//   0..n-1 the nodes; n..n+KB-1 dummy slots of padding entries (d = 1, rhs = 0, which stay
//   so); n+KB the root's "parent" (0, 0). Schedule entry: jp = j | p << 16, l, u (0 for the
//   root and dummies).
template <typename T, int KB>
__global__ void __launch_bounds__(32)
hines_tiled_mono(T* __restrict__ d, T* __restrict__ rhs, const int* __restrict__ sched_jp,
                 const T* __restrict__ sched_l, const T* __restrict__ sched_u, int n_batches,
                 int n, int S, int tc, long long n_cells, long long cell_base,
                 unsigned long long* __restrict__ flag) {
    extern __shared__ __align__(16) unsigned char hb_smem_tm[];
    T* sd = reinterpret_cast<T*>(hb_smem_tm);
    T* sr = sd + tc * S;
    const int lane = threadIdx.x;
    const long long c0 = static_cast<long long>(blockIdx.x) * tc;
    const int nc = static_cast<int>(min(static_cast<long long>(tc), n_cells - c0));
    const long long g0 = c0 * n;
    const int total = nc * n;
    {  // 1. stage the tile (cell c, node i) -> slot c * S + i
        int c = 0, i = lane;
        while (i >= n) { i -= n; ++c; }
        for (int k = lane; k < total; k += 32) {
            hb_cp_async(sd + c * S + i, d + g0 + k);
            hb_cp_async(sr + c * S + i, rhs + g0 + k);
            i += 32;
            while (i >= n) { i -= n; ++c; }
        }
    }
    for (int k = lane; k < nc * (KB + 1); k += 32) {
        const int c = k / (KB + 1), s = k - c * (KB + 1);
        sd[c * S + n + s] = s < KB ? T(1) : T(0);
        sr[c * S + n + s] = T(0);
    }
    hb_cp_async_wait_all();
    __syncthreads();
    if (lane < nc) {  // 2. sweeps, one lane per cell
        T* cd = sd + lane * S;
        T* cr = sr + lane * S;
        int bad = -1;
        for (int b = 0; b < n_batches; ++b) {
            int jp[KB];
            T lv[KB], uv[KB], D[KB], R[KB], Dp[KB], Rp[KB];
#pragma unroll
            for (int k = 0; k < KB; ++k) {
                jp[k] = __ldg(sched_jp + b * KB + k);
                lv[k] = __ldg(sched_l + b * KB + k);
                uv[k] = __ldg(sched_u + b * KB + k);
            }
#pragma unroll
            for (int k = 0; k < KB; ++k) {
                const int j = jp[k] & 0xffff, p = jp[k] >> 16;
                D[k] = cd[j];
                R[k] = cr[j];
                Dp[k] = cd[p];
                Rp[k] = cr[p];
            }
#pragma unroll
            for (int k = 0; k < KB; ++k) {
                const int j = jp[k] & 0xffff, p = jp[k] >> 16;
                if (hb_bad_pivot(D[k])) bad = max(bad, j);
                const T r = T(1) / D[k];
                const T m = lv[k] * r, y = R[k] * r;
                cd[j] = m;
                cr[j] = y;
                cd[p] = Dp[k] - uv[k] * m;
                cr[p] = Rp[k] - uv[k] * y;
            }
        }
        for (int b = n_batches - 1; b >= 0; --b) {
            int jp[KB];
            T y[KB], m[KB], xp[KB];
#pragma unroll
            for (int k = 0; k < KB; ++k) jp[k] = __ldg(sched_jp + b * KB + k);
#pragma unroll
            for (int k = 0; k < KB; ++k) {
                const int j = jp[k] & 0xffff, p = jp[k] >> 16;
                y[k] = cr[j];
                m[k] = cd[j];
                xp[k] = cr[p];
            }
#pragma unroll
            for (int k = 0; k < KB; ++k) cr[jp[k] & 0xffff] = y[k] - m[k] * xp[k];
        }
        hb_report(flag, cell_base + c0 + lane, bad < n ? bad : -1);
    }
    __syncthreads();
    {  // 3. write x back over rhs
        int c = 0, i = lane;
        while (i >= n) { i -= n; ++c; }
        for (int k = lane; k < total; k += 32) {
            rhs[g0 + k] = sr[c * S + i];
            i += 32;
            while (i >= n) { i -= n; ++c; }
        }
    }
}

// Per-cell structure (HinesStructure, cells of any sizes). Tile t holds the consecutive cells
// tile_first[t] .. tile_first[t+1]-1, i.e. one contiguous node range, copied as it is. Each lane
// eliminates its cell in descending node order; parent (local), u and l are read from global
// memory (each lane walks its own cell's entries in order).
template <typename T>
__global__ void __launch_bounds__(32)
hines_tiled_multi(T* __restrict__ d, T* __restrict__ rhs, const int* __restrict__ parent,
                  const T* __restrict__ u, const T* __restrict__ l,
                  const long long* __restrict__ offsets, const int* __restrict__ tile_first,
                  long long cell_base, unsigned long long* __restrict__ flag) {
    extern __shared__ __align__(16) unsigned char hb_smem_tx[];
    const int lane = threadIdx.x;
    const int cs = tile_first[blockIdx.x], ce = tile_first[blockIdx.x + 1];
    const long long A = offsets[cs];
    const int total = static_cast<int>(offsets[ce] - A);
    T* sd = reinterpret_cast<T*>(hb_smem_tx);
    T* sr = sd + total;
    for (int k = lane; k < total; k += 32) {
        hb_cp_async(sd + k, d + A + k);
        hb_cp_async(sr + k, rhs + A + k);
    }
    hb_cp_async_wait_all();
    __syncthreads();
    if (lane < ce - cs) {
        const int c = cs + lane;
        const long long g = offsets[c];
        const int m = static_cast<int>(offsets[c + 1] - g);
        T* cd = sd + (g - A);
        T* cr = sr + (g - A);
        int bad = -1;
        for (int i = m - 1; i > 0; --i) {
            const int p = __ldg(parent + g + i);
            const T ui = __ldg(u + g + i), li = __ldg(l + g + i);
            const T pivot = cd[i];
            if (hb_bad_pivot(pivot)) bad = max(bad, i);
            const T r = T(1) / pivot;
            const T mm = li * r, y = cr[i] * r;
            cd[i] = mm;
            cr[i] = y;
            cd[p] -= ui * mm;
            cr[p] -= ui * y;
        }
        const T pivot0 = cd[0];
        if (hb_bad_pivot(pivot0)) bad = max(bad, 0);
        cr[0] /= pivot0;
        for (int i = 1; i < m; ++i) cr[i] -= cd[i] * cr[__ldg(parent + g + i)];
        hb_report(flag, cell_base + c, bad);
    }
    __syncthreads();
    for (int k = lane; k < total; k += 32) rhs[A + k] = sr[k];
}
