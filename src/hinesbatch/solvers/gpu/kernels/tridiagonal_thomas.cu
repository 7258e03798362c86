// cuThomasBatch / cuThomasVBatch (Valero-Lara et al. 2018, section 4.1): one thread solves
// one system with the Thomas algorithm, and the layout transposes around it.
//
// Element (row i, system k) lives at k * s_sys + i * s_row: the interleaved layout (n, batch)
// has s_row = batch, s_sys = 1, so consecutive threads read consecutive addresses; the flat
// layout (batch, n) has s_row = 1, s_sys = n (kept for tiny systems and for comparison).
//
// Forward sweep: c'[i] = du[i] / p[i], d'[i] = (rhs[i] - dl[i] d'[i-1]) / p[i] with the pivot
// p[i] = d[i] - dl[i] c'[i-1]; c' goes to cbuf, d' to x; backward: x[i] = d'[i] - c'[i] x[i+1].
// cbuf may be d and x may be rhs (each row is read before it is written, by the same thread).
// Bytes per row (fp64): 4 x 8 read, 2 x 8 written, 2 x 8 read back, 8 written = 72.
//
// Variable sizes: CP ("computing padding") walks all n rows in every thread, rows >= m being
// identity rows held in registers (never read or written), so a warp never diverges; NCP
// ("no computing padding") stops each thread at its own m.
#include "tridiagonal_common.cuh"

template <typename T, bool CP>
__global__ void __launch_bounds__(256)
tri_thomas(const T* __restrict__ dl, const T* d, const T* __restrict__ du, const T* rhs, T* cbuf,
           T* x, const int* __restrict__ lengths, int n, long long batch, long long s_row,
           long long s_sys, unsigned int* __restrict__ status,
           unsigned long long* __restrict__ flag) {
    const long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (k >= batch) return;
    const int m = lengths ? lengths[k] : n;
    const int rows = CP ? n : m;
    const long long base = k * s_sys;
    T cp = T(0), dp = T(0);
    for (int i = 0; i < rows; ++i) {
        const long long at = base + i * s_row;
        const bool in = !CP || i < m;
        T a = T(0), b = T(1), c = T(0), y = T(0);
        if (in) {
            b = d[at];
            y = rhs[at];
            if (i > 0) a = dl[at];
            if (i < m - 1) c = du[at];
        }
        const T ac = a * cp;
        const T p = b - ac;
        if (tri_bad_pivot(p, fabs(b) + fabs(ac))) {
            tri_record(status, flag, k, i);
            return;  // x keeps the forward sweep's d' values; the host does not use them
        }
        const T r = hb_rcp(p);
        cp = c * r;
        dp = (y - a * dp) * r;
        if (in) {
            cbuf[at] = cp;
            x[at] = dp;  // x[rows - 1] = d'[rows - 1] is final
        }
    }
    T next = dp;  // x[i + 1]; a padding row's value is 0 (its rhs is taken as 0)
    for (int i = rows - 2; i >= 0; --i) {
        const long long at = base + i * s_row;
        if (!CP || i < m) {
            next = x[at] - cbuf[at] * next;
            x[at] = next;
        } else {
            next = T(0);
        }
    }
}

// (batch, n) -> (n, batch) for four arrays at once (blockIdx.z picks the array): 32 x 32
// tiles through shared memory, both sides coalesced. Block (32, 8).
template <typename T>
__global__ void __launch_bounds__(256)
tri_interleave4(const T* __restrict__ s0, const T* __restrict__ s1, const T* __restrict__ s2,
                const T* __restrict__ s3, T* __restrict__ t0, T* __restrict__ t1,
                T* __restrict__ t2, T* __restrict__ t3, int n, long long batch) {
    __shared__ T tile[32][33];
    const int z = blockIdx.z;
    const T* src = z == 0 ? s0 : z == 1 ? s1 : z == 2 ? s2 : s3;
    T* dst = z == 0 ? t0 : z == 1 ? t1 : z == 2 ? t2 : t3;
    const long long k0 = static_cast<long long>(blockIdx.x) * 32;
    const int row_tiles = (n + 31) / 32;
    for (int rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {
        const int i0 = rt * 32;
        for (int j = threadIdx.y; j < 32; j += 8) {
            const long long k = k0 + j;
            const int i = i0 + threadIdx.x;
            if (k < batch && i < n) tile[j][threadIdx.x] = src[k * n + i];
        }
        __syncthreads();
        for (int j = threadIdx.y; j < 32; j += 8) {
            const long long i = i0 + j;
            const long long k = k0 + threadIdx.x;
            if (k < batch && i < n) dst[i * batch + k] = tile[threadIdx.x][j];
        }
        __syncthreads();
    }
}

// (n, batch) -> (batch, n), writing only rows i < lengths[k] of systems whose status is clear
// (a flagged system's row of dst keeps what it held). Block (32, 8).
template <typename T>
__global__ void __launch_bounds__(256)
tri_deinterleave(const T* __restrict__ src, T* __restrict__ dst, int n, long long batch,
                 const int* __restrict__ lengths, const unsigned int* __restrict__ status) {
    __shared__ T tile[32][33];
    const long long k0 = static_cast<long long>(blockIdx.x) * 32;
    const int row_tiles = (n + 31) / 32;
    for (int rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {
        const int i0 = rt * 32;
        for (int j = threadIdx.y; j < 32; j += 8) {
            const long long i = i0 + j;
            const long long k = k0 + threadIdx.x;
            if (k < batch && i < n) tile[j][threadIdx.x] = src[i * batch + k];
        }
        __syncthreads();
        for (int j = threadIdx.y; j < 32; j += 8) {
            const long long k = k0 + j;
            const int i = i0 + threadIdx.x;
            if (k < batch && i < n) {
                const int m = lengths ? lengths[k] : n;
                if (i < m && status[k] == 0xFFFFFFFFu) dst[k * n + i] = tile[threadIdx.x][j];
            }
        }
        __syncthreads();
    }
}
