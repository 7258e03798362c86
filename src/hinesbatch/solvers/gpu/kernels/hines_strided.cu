// Flat, Full-Interleaved and Block-Interleaved Hines solves (Valero-Lara et al. 2017, §3):
// one thread per cell, every value read and written in global memory, Algorithm 1 exactly.
//
// Where element i of cell c lives (c counted from the start of the launch):
//   offsets != nullptr : offsets[c] + i                           (Flat, concatenated cells)
//   offsets == nullptr : ((c / bs) * n + i) * bs + c % bs         (bs = 1: Flat of a mono batch,
//                                                                  bs = n_cells: Full-Interleaved,
//                                                                  else Block-Interleaved)
// MONO: the structure (parent, u, l) is one cell's, shared by every thread (uniform loads);
// otherwise it is stored per cell at the same positions as the values, parents local.
// sizes (nullable): nodes of each cell; rows past a cell's size are padding and are never
// touched, so layouts padded to the largest cell need no fill values.
#include "hines_common.cuh"

template <typename T, bool MONO>
__global__ void hines_strided(T* __restrict__ d, T* __restrict__ rhs,
                              const int* __restrict__ parent, const T* __restrict__ u,
                              const T* __restrict__ l, const long long* __restrict__ offsets,
                              const int* __restrict__ sizes, int n_cells, int n, int bs,
                              long long cell_base, unsigned long long* __restrict__ flag,
                              T* __restrict__ bad_value) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cells) return;
    long long base, stride;
    if (offsets != nullptr) {
        base = offsets[c];
        stride = 1;
    } else {
        base = (static_cast<long long>(c / bs) * n) * bs + c % bs;
        stride = bs;
    }
    const int size = sizes != nullptr ? sizes[c] : n;
    // Flat cells of different sizes run their own length; layouts run the padded length with
    // a uniform row index so that a warp's accesses stay coalesced.
    const int rows = offsets != nullptr ? size : n;
    int bad = -1;
    T bad_pivot = T(0);
    for (int i = rows - 1; i > 0; --i) {  // backward sweep, leaves to root
        if (i >= size) continue;
        const long long k = base + i * stride;
        const int p = MONO ? __ldg(parent + i) : parent[k];
        const T ui = MONO ? __ldg(u + i) : u[k];
        const T li = MONO ? __ldg(l + i) : l[k];
        const T pivot = d[k];
        if (hb_bad_pivot(pivot) && i > bad) { bad = i; bad_pivot = pivot; }
        const T factor = ui / pivot;
        const long long kp = base + p * stride;
        d[kp] -= factor * li;
        rhs[kp] -= factor * rhs[k];
    }
    const T pivot0 = d[base];
    if (hb_bad_pivot(pivot0) && bad < 0) { bad = 0; bad_pivot = pivot0; }
    rhs[base] /= pivot0;
    for (int i = 1; i < rows; ++i) {  // forward sweep, root to leaves
        if (i >= size) continue;
        const long long k = base + i * stride;
        const int p = MONO ? __ldg(parent + i) : parent[k];
        const T li = MONO ? __ldg(l + i) : l[k];
        rhs[k] = (rhs[k] - li * rhs[base + p * stride]) / d[k];
    }
    hb_report(flag, bad_value + c, cell_base + c, bad, bad_pivot);
}

// Block-Shared (the paper's §3.1): Block-Interleaved with bs = blockDim.x cells per block; the
// block's rhs (n * bs values) is staged in shared memory, d stays in global memory.
template <typename T, bool MONO>
__global__ void hines_block_shared(T* __restrict__ d, T* __restrict__ rhs,
                                   const int* __restrict__ parent, const T* __restrict__ u,
                                   const T* __restrict__ l, const int* __restrict__ sizes,
                                   int n_cells, int n, long long cell_base,
                                   unsigned long long* __restrict__ flag,
                                   T* __restrict__ bad_value) {
    extern __shared__ __align__(16) unsigned char hb_smem_bs[];
    T* sr = reinterpret_cast<T*>(hb_smem_bs);
    const int bs = blockDim.x;
    const int lane = threadIdx.x;
    const int c = blockIdx.x * bs + lane;
    const long long block = static_cast<long long>(blockIdx.x) * n * bs;
    for (int k = lane; k < n * bs; k += bs) sr[k] = rhs[block + k];
    __syncthreads();
    if (c < n_cells) {
        const int size = sizes != nullptr ? sizes[c] : n;
        T* dd = d + block + lane;
        T* rr = sr + lane;
        int bad = -1;
        T bad_pivot = T(0);
        for (int i = n - 1; i > 0; --i) {
            if (i >= size) continue;
            const long long k = static_cast<long long>(i) * bs;
            const int p = MONO ? __ldg(parent + i) : parent[block + k + lane];
            const T ui = MONO ? __ldg(u + i) : u[block + k + lane];
            const T li = MONO ? __ldg(l + i) : l[block + k + lane];
            const T pivot = dd[k];
            if (hb_bad_pivot(pivot) && i > bad) { bad = i; bad_pivot = pivot; }
            const T factor = ui / pivot;
            const long long kp = static_cast<long long>(p) * bs;
            dd[kp] -= factor * li;
            rr[kp] -= factor * rr[k];
        }
        const T pivot0 = dd[0];
        if (hb_bad_pivot(pivot0) && bad < 0) { bad = 0; bad_pivot = pivot0; }
        rr[0] /= pivot0;
        for (int i = 1; i < n; ++i) {
            if (i >= size) continue;
            const long long k = static_cast<long long>(i) * bs;
            const int p = MONO ? __ldg(parent + i) : parent[block + k + lane];
            const T li = MONO ? __ldg(l + i) : l[block + k + lane];
            rr[k] = (rr[k] - li * rr[static_cast<long long>(p) * bs]) / dd[k];
        }
        hb_report(flag, bad_value + c, cell_base + c, bad, bad_pivot);
    }
    __syncthreads();
    for (int k = lane; k < n * bs; k += bs) rhs[block + k] = sr[k];
}
