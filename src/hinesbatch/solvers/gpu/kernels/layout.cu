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
        if (c < n_cells) {
            const long long cg = cell_start + c;
            const int size = sizes != nullptr ? sizes[cg] : n;
            const long long off = offsets != nullptr ? offsets[cg] : cg * n;
            if (i < size) tile[r][tx] = src[off + i];
        }
    }
    __syncthreads();
    for (int r = threadIdx.y; r < HB_TILE; r += HB_ROWS) {
        const int i = i0 + r, c = c0 + tx;
        if (c < n_cells) {
            const int size = sizes != nullptr ? sizes[cell_start + c] : n;
            if (i < size)
                dst[(static_cast<long long>(c / bs) * n + i) * bs + c % bs] = tile[tx][r];
        }
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
        if (c < n_cells) {
            const int size = sizes != nullptr ? sizes[cell_start + c] : n;
            if (i < size)
                tile[tx][r] = src[(static_cast<long long>(c / bs) * n + i) * bs + c % bs];
        }
    }
    __syncthreads();
    for (int r = threadIdx.y; r < HB_TILE; r += HB_ROWS) {
        const int c = c0 + r, i = i0 + tx;
        if (c < n_cells) {
            const long long cg = cell_start + c;
            const int size = sizes != nullptr ? sizes[cg] : n;
            const long long off = offsets != nullptr ? offsets[cg] : cg * n;
            if (i < size) dst[off + i] = tile[r][tx];
        }
    }
}
