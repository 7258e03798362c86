// Canonical order <-> (Block-)Interleaved layout, as tiled transposes through shared memory.
//
// Canonical: element i of cell c at offsets[c] + i (offsets == nullptr: c * n + i), cells of
// sizes[c] nodes (sizes == nullptr: n). Layout: ((c / bs) * n + i) * bs + c % bs with n the
// largest cell (hinesbatch.tree.layouts). Cell indices of the canonical side are shifted by
// cell_start (a chunk of a larger batch); the layout side counts from the chunk's first cell.
// A 32-cell x 32-node tile is read along nodes (contiguous in canonical order) and written
// along cells (contiguous in the layout when bs >= 32), so both sides are coalesced.
// Padding rows (i >= sizes[c]) are neither read nor written.
#include "hines_common.cuh"

#define HB_TILE 32
#define HB_ROWS 8

// Nodes of canonical cell cg, and where its element i lives on each side.
__device__ __forceinline__ int hb_cell_size(const int* sizes, long long cg, int n) {
    return sizes != nullptr ? sizes[cg] : n;
}
__device__ __forceinline__ long long hb_canonical_at(const long long* offsets, long long cg,
                                                     int n, int i) {
    return (offsets != nullptr ? offsets[cg] : cg * n) + i;
}
__device__ __forceinline__ long long hb_layout_at(int c, int i, int n, int bs) {
    return (static_cast<long long>(c / bs) * n + i) * bs + c % bs;
}

template <typename T>
__global__ void __launch_bounds__(HB_TILE * HB_ROWS)
canonical_to_layout(const T* __restrict__ src0, const T* __restrict__ src1, T* __restrict__ dst0,
                    T* __restrict__ dst1, const long long* __restrict__ offsets,
                    const int* __restrict__ sizes, long long cell_start, int n_cells, int n,
                    int bs) {
    __shared__ T tile[HB_TILE][HB_TILE + 1];
    const T* __restrict__ src = blockIdx.z == 0 ? src0 : src1;
    T* __restrict__ dst = blockIdx.z == 0 ? dst0 : dst1;
    const int c0 = blockIdx.x * HB_TILE, i0 = blockIdx.y * HB_TILE;
    const int tx = threadIdx.x;
    for (int r = threadIdx.y; r < HB_TILE; r += HB_ROWS) {
        const int c = c0 + r, i = i0 + tx;
        const long long cg = cell_start + c;
        if (c < n_cells && i < hb_cell_size(sizes, cg, n))
            tile[r][tx] = src[hb_canonical_at(offsets, cg, n, i)];
    }
    __syncthreads();
    for (int r = threadIdx.y; r < HB_TILE; r += HB_ROWS) {
        const int i = i0 + r, c = c0 + tx;
        if (c < n_cells && i < hb_cell_size(sizes, cell_start + c, n))
            dst[hb_layout_at(c, i, n, bs)] = tile[tx][r];
    }
}

template <typename T>
__global__ void __launch_bounds__(HB_TILE * HB_ROWS)
layout_to_canonical(const T* __restrict__ src, T* __restrict__ dst,
                    const long long* __restrict__ offsets, const int* __restrict__ sizes,
                    long long cell_start, int n_cells, int n, int bs) {
    __shared__ T tile[HB_TILE][HB_TILE + 1];
    const int c0 = blockIdx.x * HB_TILE, i0 = blockIdx.y * HB_TILE;
    const int tx = threadIdx.x;
    for (int r = threadIdx.y; r < HB_TILE; r += HB_ROWS) {
        const int i = i0 + r, c = c0 + tx;
        if (c < n_cells && i < hb_cell_size(sizes, cell_start + c, n))
            tile[tx][r] = src[hb_layout_at(c, i, n, bs)];
    }
    __syncthreads();
    for (int r = threadIdx.y; r < HB_TILE; r += HB_ROWS) {
        const int c = c0 + r, i = i0 + tx;
        const long long cg = cell_start + c;
        if (c < n_cells && i < hb_cell_size(sizes, cg, n))
            dst[hb_canonical_at(offsets, cg, n, i)] = tile[r][tx];
    }
}
