// Several threads per system: a partitioned Thomas / PCR hybrid with the system held in
// registers (docs/tridiagonal.md has the algebra).
//
// A group of G lanes of one warp takes one segment of Q = G * L rows of one system; lane t owns
// rows t*L .. t*L + L-1 in registers. Rows past the system's length m are identity rows (the
// "computing padding" of cuThomasVBatch, but in registers: never read, never written).
//  1. Load: the block stages each array through shared memory, so that global reads are
//     coalesced in either layout (flat (batch, n): runs of Q rows, 16 bytes per copy;
//     interleaved (n, batch): runs of SB systems), and each lane then reads its L rows.
//  2. Chunk elimination (per lane, no communication): a forward sweep expresses row j in
//     terms of the chunk's first unknown and x[j+1], a backward sweep in terms of the chunk's
//     first and last unknowns f and l; row 0 then couples l of the previous chunk to l.
//  3. Reduced system: eliminating the f's leaves a tridiagonal system of G rows in the l's,
//     one row per lane, solved by parallel cyclic reduction with warp shuffles (log2 G steps).
//  4. Every row from f, l: x[j] = y[j] - alpha[j] f - gamma[j] l, written back through shared
//     memory, coalesced (or, FLAT 2, by each lane straight to device memory).
// Bytes per row (fp64): 32 read, 8 written: the intermediates never leave the chip.
//
// Systems longer than 512 rows are cut into segments (blockIdx.y) and solved in three launches:
// REDUCE (this kernel with REDUCE = true) writes, per segment, its first and last unknowns as
// affine functions of the neighbouring segments' boundary unknowns XL (last row of the segment
// before) and XR (first row of the segment after); tri_segments solves those 2S-unknown systems
// (one thread per system); the SOLVE pass (REDUCE = false, bound != nullptr) then solves each
// segment with XL and XR known.
//
// Staging of the flat (batch, n) layout, template argument FLAT (docs/tridiagonal.md):
//  0  one value per cp.async into a tile padded by one value per lane (bank-conflict free for
//     scalar shared-memory reads); the solution goes back through a tile of the same layout;
//  1  16-byte cp.async copies into an unpadded tile whose 16-byte units are swizzled within
//     each run of 8 (u ^ ((u >> 3) & 7)), so that the lanes' 16-byte shared-memory reads and
//     writes are conflict free; the solution goes back through the x tile in 16-byte stores;
//  2  as 1, but each lane stores its own rows straight to device memory (16-byte stores, no x
//     tile, no barrier).
// 16-byte copies need n a multiple of 16 / sizeof(T) and every array 16-byte aligned; when
// not, the same tile is filled (and the solution stored) one value at a time. The interleaved
// layout always uses mode 0 (its tile rows are runs of systems). MINB: the blocks per
// multiprocessor asked of the compiler (__launch_bounds__), i.e. a register cap.
//
// Requirements (checked on the host): G a power of two <= 32, L a power of two >= 4,
// blockDim.x == TRI_THREADS.
#include "tridiagonal_common.cuh"

#define TRI_THREADS 128

// The defaults of FLAT and MINB, measured on the H200 (scripts/tune-tridiagonal-fp32,
// benchmarks/results/h200/tridiagonal_tune_fp32.md; 256000 x 512, ms): 16 rows per lane stage
// the solution through the x tile (FLAT 1; fp64 1.26 against 1.52 direct and 1.72 with FLAT 0),
// and fp32 there runs at 4 blocks per multiprocessor (MINB 4: 128 registers, no spills; 0.64
// against 0.69 at 3 blocks, 0.68 direct, 1.01 with FLAT 0; the REDUCE pass would spill at 128
// registers, so it keeps the compiler's choice); 8 rows per lane store directly (FLAT 2,
// 1.12-1.74x faster than FLAT 0 at 64-256 rows). 4 rows per lane (groups of 16 and 32 rows) keep
// FLAT 0: FLAT 2 measured 1.28-1.44x faster there, after the GPU tests had run with these defaults.
template <typename T, int L, bool INTERLEAVED, bool REDUCE> struct TriChunkedDefaults {
    static constexpr int flat = INTERLEAVED ? 0 : (L >= 16 ? 1 : (L == 8 ? 2 : 0));
    static constexpr int min_blocks = (sizeof(T) == 4 && L == 16 && !INTERLEAVED && !REDUCE) ? 4 : 0;
};

// One 16-byte unit of values (the unit of the vectorised copies).
template <typename T> struct alignas(16) TriVec {
    T v[16 / sizeof(T)];
};

// Where value (group g, row r) of one array lives in a tile: padded (SWZ false) or
// unpadded with swizzled 16-byte units (SWZ true). SS: one group's stride, P: one array's tile.
template <typename T, int G, int L, bool SWZ> struct TriTile {
    static constexpr int Q = G * L, SB = TRI_THREADS / G;
    static constexpr int V = 16 / static_cast<int>(sizeof(T));  // values per 16-byte unit
    static constexpr int SS = SWZ ? Q : G * (L + 1) + 1;
    static constexpr int P = SB * SS;
    static __device__ __forceinline__ int at(int g, int r) {
        if constexpr (SWZ) {
            const int e = g * Q + r, u = e / V;
            return (u ^ ((u >> 3) & 7)) * V + e % V;
        } else {
            return g * SS + (r / L) * (L + 1) + r % L;
        }
    }
};

// Lane values of the reduced system; shuffled as a unit.
template <typename T, bool REDUCE> struct TriRow {
    T al, be, ga, de, el, er;
};

template <typename T> __device__ __forceinline__ T tri_shfl_up(T v, int s, int width) {
    return __shfl_up_sync(0xffffffffu, v, s, width);
}
template <typename T> __device__ __forceinline__ T tri_shfl_down(T v, int s, int width) {
    return __shfl_down_sync(0xffffffffu, v, s, width);
}

// Issue the cp.async copies of one tile (SB groups x Q rows of the four arrays) into `buf`:
// element e of the tile is (group g, row r); consecutive threads take consecutive addresses
// (flat: runs of Q rows of one system; interleaved: runs of SB systems of one row). Rows past
// n and groups past the batch are not copied (their slots are never used). `vec`: 16-byte
// copies (swizzled tile only; n % V == 0, so a unit never straddles row n).
template <typename T, int G, int L, bool INTERLEAVED, bool SWZ>
__device__ __forceinline__ void tri_issue_tile(T* buf, const T* dl, const T* d, const T* du,
                                               const T* rhs, int n, long long batch,
                                               long long k0, int row0, bool vec) {
    using Tile = TriTile<T, G, L, SWZ>;
    constexpr int Q = Tile::Q, SB = Tile::SB, P = Tile::P, V = Tile::V;
    const int tid = threadIdx.x;
    if constexpr (SWZ) {
        if (vec) {
#pragma unroll
            for (int it = 0; it < L / V; ++it) {
                const int e = (tid + it * TRI_THREADS) * V;
                const int g = e / Q, r = e % Q;
                const long long k = k0 + g;
                const int i = row0 + r;
                if (k < batch && i < n) {
                    const long long at = k * n + i;
                    TriVec<T>* slot = reinterpret_cast<TriVec<T>*>(buf + Tile::at(g, r));
                    hb_cp_async(slot, reinterpret_cast<const TriVec<T>*>(dl + at));
                    hb_cp_async(slot + P / V, reinterpret_cast<const TriVec<T>*>(d + at));
                    hb_cp_async(slot + 2 * (P / V), reinterpret_cast<const TriVec<T>*>(du + at));
                    hb_cp_async(slot + 3 * (P / V), reinterpret_cast<const TriVec<T>*>(rhs + at));
                }
            }
        } else {  // the fallback: one value at a time, not unrolled (registers)
#pragma unroll 1
            for (int it = 0; it < L; ++it) {
                const int e = tid + it * TRI_THREADS;
                const int g = e / Q, r = e % Q;
                const long long k = k0 + g;
                const int i = row0 + r;
                if (k < batch && i < n) {
                    const long long at = k * n + i;
                    T* slot = buf + Tile::at(g, r);
                    hb_cp_async(slot, dl + at);
                    hb_cp_async(slot + P, d + at);
                    hb_cp_async(slot + 2 * P, du + at);
                    hb_cp_async(slot + 3 * P, rhs + at);
                }
            }
        }
    } else {
#pragma unroll
        for (int it = 0; it < L; ++it) {
            const int e = tid + it * TRI_THREADS;
            const int g = INTERLEAVED ? e % SB : e / Q;
            const int r = INTERLEAVED ? e / SB : e % Q;
            const long long k = k0 + g;
            const int i = row0 + r;
            if (k < batch && i < n) {
                const long long at = INTERLEAVED ? static_cast<long long>(i) * batch + k : k * n + i;
                T* slot = buf + Tile::at(g, r);
                hb_cp_async(slot, dl + at);
                hb_cp_async(slot + P, d + at);
                hb_cp_async(slot + 2 * P, du + at);
                hb_cp_async(slot + 3 * P, rhs + at);
            }
        }
    }
    hb_cp_async_commit();
}

// Store the unit u of rows i .. i+V-1 of one system (x + at) whose length is m: one 16-byte
// store when `vec` (x + at 16-byte aligned) and the unit lies below m, else value by value.
template <typename T>
__device__ __forceinline__ void tri_store_unit(T* x, long long at, int i, int m, const TriVec<T>& u,
                                               bool vec) {
    constexpr int V = 16 / static_cast<int>(sizeof(T));
    if (vec && i + V <= m) {
        *reinterpret_cast<TriVec<T>*>(x + at) = u;
    } else {
#pragma unroll
        for (int q = 0; q < V; ++q)
            if (i + q < m) x[at + q] = u.v[q];
    }
}

// Persistent blocks: block b takes tiles b, b + gridDim.x, ... (tile = system tile * segs +
// segment). The next tile's cp.async copies are issued as soon as the lanes hold the current
// one in registers, so they run during the solve: device memory stays busy even at the 2 blocks
// per multiprocessor that fp64 with L = 16 allows.
template <typename T, int G, int L, bool INTERLEAVED, bool REDUCE,
          int FLAT = TriChunkedDefaults<T, L, INTERLEAVED, REDUCE>::flat,
          int MINB = TriChunkedDefaults<T, L, INTERLEAVED, REDUCE>::min_blocks>
__global__ void __launch_bounds__(TRI_THREADS, MINB)
tri_chunked(const T* __restrict__ dl, const T* __restrict__ d, const T* __restrict__ du,
            const T* rhs, T* x, const int* __restrict__ lengths, int n, long long batch,
            int segs, const T* __restrict__ bound, T* __restrict__ red,
            unsigned int* __restrict__ status, unsigned long long* __restrict__ flag) {
    static_assert(G >= 2 && G <= 32 && (G & (G - 1)) == 0, "G: a power of two <= 32");
    static_assert(L >= 4 && (L & (L - 1)) == 0, "L: a power of two >= 4");
    static_assert(FLAT >= 0 && FLAT <= 2 && MINB >= 0, "FLAT: 0, 1 or 2; MINB >= 0");
    constexpr bool SWZ = !INTERLEAVED && FLAT > 0;  // swizzled tile, 16-byte units
    constexpr bool DIRECT = SWZ && FLAT == 2;        // lanes store their rows themselves
    using Tile = TriTile<T, G, L, SWZ>;
    constexpr int Q = Tile::Q, SB = Tile::SB, P = Tile::P, V = Tile::V;
    static_assert(L % V == 0, "L: a multiple of the values per 16-byte unit");
    extern __shared__ __align__(16) unsigned char tri_smem[];
    T* buf = reinterpret_cast<T*>(tri_smem);  // dl, d, du, rhs tiles (4 P), then x (P)
    T* xt = buf + 4 * P;
    int* s_len = reinterpret_cast<int*>(xt + P);
    int* s_skip = s_len + SB;

    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int grp = (tid >> 5) * (32 / G) + lane / G;  // this lane's group in the tile
    const int t = lane % G;                            // this lane's chunk in the group
    const unsigned int gshift = lane & ~(G - 1);
    const unsigned int gmask = G == 32 ? 0xffffffffu : ((1u << G) - 1u);
    // 16-byte copies and stores: every array 16-byte aligned and rows in whole units
    const bool vec = SWZ && n % V == 0 &&
                     ((reinterpret_cast<unsigned long long>(dl) | reinterpret_cast<unsigned long long>(d) |
                       reinterpret_cast<unsigned long long>(du) | reinterpret_cast<unsigned long long>(rhs) |
                       reinterpret_cast<unsigned long long>(x)) & 15u) == 0;
    const long long tiles = (batch + SB - 1) / SB * segs;
    long long tile = blockIdx.x;
    if (tile < tiles)
        tri_issue_tile<T, G, L, INTERLEAVED, SWZ>(buf, dl, d, du, rhs, n, batch, tile / segs * SB,
                                                  static_cast<int>(tile % segs) * Q, vec);
    for (; tile < tiles; tile += gridDim.x) {
        const long long k0 = tile / segs * SB;
        const int seg = static_cast<int>(tile % segs);
        const int row0 = seg * Q;  // rows are int: the host keeps n < 2^31
        const long long k = k0 + grp;
        const bool real = k < batch;
        const int m = real ? (lengths ? lengths[k] : n) : 0;
        const int first = row0 + t * L;  // global row of this lane's j = 0
        // couplings to neighbouring segments (SOLVE after REDUCE): known values, or none
        T xl = T(0), xr = T(0);
        bool skip = false;
        if (!REDUCE && real) {
            skip = status[k] != 0xFFFFFFFFu;  // flagged by REDUCE or tri_segments
            if (bound != nullptr) {
                if (t == 0 && seg > 0) xl = bound[static_cast<long long>(seg) * batch + k];
                if (t == G - 1 && seg + 1 < segs) xr = bound[static_cast<long long>(segs + seg) * batch + k];
            }
        }
        hb_cp_async_wait_all();
        __syncthreads();

        // -- rows into registers; rows past m are identity rows, dl at row 0 and du at row
        //    m-1 are not read; a known XL / XR moves into y and its coupling to zero
        T a[L], b[L], c[L], y[L];
        if constexpr (SWZ) {
#pragma unroll
            for (int v = 0; v < L / V; ++v) {
                const TriVec<T>* u = reinterpret_cast<const TriVec<T>*>(buf + Tile::at(grp, t * L + v * V));
                const TriVec<T> ua = u[0], ub = u[P / V], uc = u[2 * (P / V)], uy = u[3 * (P / V)];
#pragma unroll
                for (int q = 0; q < V; ++q) {
                    a[v * V + q] = ua.v[q];
                    b[v * V + q] = ub.v[q];
                    c[v * V + q] = uc.v[q];
                    y[v * V + q] = uy.v[q];
                }
            }
        } else {
            const T* own = buf + Tile::at(grp, t * L);
#pragma unroll
            for (int j = 0; j < L; ++j) {
                a[j] = own[j];
                b[j] = own[P + j];
                c[j] = own[2 * P + j];
                y[j] = own[3 * P + j];
            }
        }
#pragma unroll
        for (int j = 0; j < L; ++j) {
            const int i = first + j;
            const bool in = i < m;
            a[j] = (in && i > 0) ? a[j] : T(0);
            b[j] = in ? b[j] : T(1);
            c[j] = (i + 1 < m) ? c[j] : T(0);
            y[j] = in ? y[j] : T(0);
        }
        if (!REDUCE) {
            if (t == 0) { y[0] -= a[0] * xl; a[0] = T(0); }
            if (t == G - 1) { y[L - 1] -= c[L - 1] * xr; c[L - 1] = T(0); }
        }
        // fp64, swizzled tile: the group's length for the store loop is written now, so that m
        // need not stay in a register through the solve (the barrier above ordered the last
        // tile's reads of it). ptxas spills 4 bytes without it; in fp32 at 128 registers, 8 with it.
        constexpr bool EARLY_LEN = SWZ && sizeof(T) == 8;
        if (EARLY_LEN && t == 0) s_len[grp] = m;
        __syncthreads();  // the tiles are free: fetch the next tile during this solve
        {
            const long long next = tile + gridDim.x;
            if (next < tiles)
                tri_issue_tile<T, G, L, INTERLEAVED, SWZ>(buf, dl, d, du, rhs, n, batch,
                                                          next / segs * SB,
                                                          static_cast<int>(next % segs) * Q, vec);
        }

        // -- chunk elimination: forward, row j becomes alpha[j] f + x[j] + c[j] x[j+1] = y[j]
        //    (a[] holds alpha); backward, c[] becomes gamma, the coefficient of l
        int bad_chunk = -1;  // first row of this chunk whose pivot failed
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            if (bad_chunk < 0 && tri_bad_pivot(b[j], fabs(b[j]))) bad_chunk = first + j;
            const T r = hb_rcp(b[j]);
            a[j] *= r;
            c[j] *= r;
            y[j] *= r;
        }
#pragma unroll
        for (int j = 2; j < L; ++j) {
            const T ac = a[j] * c[j - 1];
            const T piv = b[j] - ac;
            if (bad_chunk < 0 && tri_bad_pivot(piv, fabs(b[j]) + fabs(ac))) bad_chunk = first + j;
            const T r = hb_rcp(piv);
            y[j] = r * (y[j] - a[j] * y[j - 1]);
            a[j] = -r * a[j] * a[j - 1];
            c[j] = r * c[j];
        }
#pragma unroll
        for (int j = L - 3; j >= 1; --j) {
            y[j] -= c[j] * y[j + 1];
            a[j] -= c[j] * a[j + 1];
            c[j] = -c[j] * c[j + 1];
        }
        // row 0: f + aF l_prev + cF l = yF;  row L-1: l + aL f + cL f_next = yL
        T aF, cF, yF;
        {
            const T ca = c[0] * a[1];
            const T piv = T(1) - ca;
            if (bad_chunk < 0 && tri_bad_pivot(piv, T(1) + fabs(ca))) bad_chunk = first;
            const T r = hb_rcp(piv);
            aF = r * a[0];
            cF = -r * c[0] * c[1];
            yF = r * (y[0] - c[0] * y[1]);
        }
        const T aL = a[L - 1], cL = c[L - 1], yL = y[L - 1];

        // -- reduced system in the l's, one row per lane:
        //    al l[t-1] + be l[t] + ga l[t+1] (+ el XL + er XR in REDUCE) = de
        int bad_reduced = -1;
        const int last = first + L - 1;
        T al, be, ga, de, el = T(0), er = T(0);
        {
            const bool has_next = t + 1 < G;
            const T aFn = tri_shfl_down(aF, 1, G), cFn = tri_shfl_down(cF, 1, G),
                    yFn = tri_shfl_down(yF, 1, G);
            const T an = has_next ? aFn : T(0), cn = has_next ? cFn : T(0),
                    yn = has_next ? yFn : T(0);
            const T s1 = aL * cF, s2 = cL * an;
            al = -aL * aF;
            be = T(1) - s1 - s2;
            ga = -cL * cn;
            de = yL - aL * yF - cL * yn;
            if (tri_bad_pivot(be, T(1) + fabs(s1) + fabs(s2))) bad_reduced = last;
            if (REDUCE && t == 0) el = al;       // l[-1] is XL
            if (REDUCE && t == G - 1) er = cL;   // f[G] is XR
            if (t == 0) al = T(0);
        }
#pragma unroll
        for (int s = 1; s < G; s <<= 1) {
            const bool up = t >= s, down = t + s < G;
            T alm = tri_shfl_up(al, s, G), bem = tri_shfl_up(be, s, G),
              gam = tri_shfl_up(ga, s, G), dem = tri_shfl_up(de, s, G);
            T alp = tri_shfl_down(al, s, G), bep = tri_shfl_down(be, s, G),
              gap = tri_shfl_down(ga, s, G), dep = tri_shfl_down(de, s, G);
            T elm = T(0), erm = T(0), elp = T(0), erp = T(0);
            if (REDUCE) {
                elm = tri_shfl_up(el, s, G);
                erm = tri_shfl_up(er, s, G);
                elp = tri_shfl_down(el, s, G);
                erp = tri_shfl_down(er, s, G);
            }
            if (!up) { alm = T(0); bem = T(1); gam = T(0); dem = T(0); elm = T(0); erm = T(0); }
            if (!down) { alp = T(0); bep = T(1); gap = T(0); dep = T(0); elp = T(0); erp = T(0); }
            const T k1 = al * hb_rcp(bem), k2 = ga * hb_rcp(bep);
            const T s1 = k1 * gam, s2 = k2 * alp;
            const T bn = be - s1 - s2;
            if (bad_reduced < 0 && tri_bad_pivot(bn, fabs(be) + fabs(s1) + fabs(s2))) bad_reduced = last;
            al = -k1 * alm;
            ga = -k2 * gap;
            be = bn;
            de = de - k1 * dem - k2 * dep;
            if (REDUCE) {
                el = el - k1 * elm - k2 * elp;
                er = er - k1 * erm - k2 * erp;
            }
        }
        const T rb = hb_rcp(be);

        // -- failures: a chunk-level pivot outranks the reduced system's (whose values it spoiled)
        const unsigned int chunk_bits = (__ballot_sync(0xffffffffu, bad_chunk >= 0) >> gshift) & gmask;
        const unsigned int red_bits = (__ballot_sync(0xffffffffu, bad_reduced >= 0) >> gshift) & gmask;
        const int bad_row = chunk_bits ? bad_chunk : bad_reduced;
        if (real && bad_row >= 0) tri_record(status, flag, k, bad_row);
        const bool failed = (chunk_bits | red_bits) != 0u;

        if (REDUCE) {
            // segment boundaries: first = u - v XL - w XR (lane 0), last = p - q XL - r XR (lane G-1)
            const T pp = de * rb, qq = el * rb, rr = er * rb;
            if (real && !failed) {
                const long long plane = static_cast<long long>(segs) * batch;
                T* out = red + static_cast<long long>(seg) * batch + k;
                if (t == 0) {
                    out[0] = yF - cF * pp;
                    out[plane] = aF - cF * qq;
                    out[2 * plane] = -cF * rr;
                }
                if (t == G - 1) {
                    out[3 * plane] = pp;
                    out[4 * plane] = qq;
                    out[5 * plane] = rr;
                }
            }
            continue;
        }

        // -- every row from f and l
        const T l = de * rb;
        const T lp = tri_shfl_up(l, 1, G);
        const T f = yF - aF * (t > 0 ? lp : T(0)) - cF * l;
        T xs[L];
        xs[0] = f;
        xs[L - 1] = l;
#pragma unroll
        for (int j = 1; j < L - 1; ++j) xs[j] = y[j] - a[j] * f - c[j] * l;
        if (DIRECT && vec) {  // this lane's rows, straight to device memory
            if (real && !skip && !failed) {
#pragma unroll
                for (int v = 0; v < L / V; ++v) {
                    TriVec<T> u;
#pragma unroll
                    for (int q = 0; q < V; ++q) u.v[q] = xs[v * V + q];
                    tri_store_unit(x, k * n + first + v * V, first + v * V, m, u, true);
                }
            }
            continue;
        }
        // through the x tile, coalesced
        if constexpr (SWZ) {
#pragma unroll
            for (int v = 0; v < L / V; ++v) {
                TriVec<T> u;
#pragma unroll
                for (int q = 0; q < V; ++q) u.v[q] = xs[v * V + q];
                *reinterpret_cast<TriVec<T>*>(xt + Tile::at(grp, t * L + v * V)) = u;
            }
        } else {
            T* row = xt + Tile::at(grp, t * L);
#pragma unroll
            for (int j = 0; j < L; ++j) row[j] = xs[j];
        }
        if (t == 0) {
            if (!EARLY_LEN) s_len[grp] = m;
            s_skip[grp] = (skip || failed) ? 1 : 0;
        }
        __syncthreads();
        if constexpr (SWZ) {  // unit by unit (a unit never spans two systems: Q % V == 0)
#pragma unroll 1
            for (int it = 0; it < L / V; ++it) {
                const int e = (tid + it * TRI_THREADS) * V;
                const int g = e / Q, r = e % Q;
                const int i = row0 + r, mg = s_len[g];
                if (i < mg && !s_skip[g])
                    tri_store_unit(x, (k0 + g) * n + i, i, mg,
                                   *reinterpret_cast<const TriVec<T>*>(xt + Tile::at(g, r)), vec);
            }
            continue;
        }
        // not unrolled: unrolled, the compiler hoists every iteration's reads and addresses
#pragma unroll 1
        for (int it = 0; it < L; ++it) {
            const int e = tid + it * TRI_THREADS;
            const int g = INTERLEAVED ? e % SB : e / Q;
            const int r = INTERLEAVED ? e / SB : e % Q;
            const long long kk = k0 + g;
            const int i = row0 + r;
            if (i < s_len[g] && !s_skip[g]) {
                const long long at = INTERLEAVED ? static_cast<long long>(i) * batch + kk : kk * n + i;
                x[at] = xt[Tile::at(g, r)];
            }
        }
    }
}

// The systems of segment boundaries (one thread per system). Segment s of system k gave, from
// REDUCE, first_s = u - v last_{s-1} - w first_{s+1} and last_s = p - q last_{s-1} - r first_{s+1}
// in red[(j * segs + s) * batch + k], j = 0..5 (u, v, w, p, q, r). Forward elimination keeps
// first_s = U - W first_{s+1}, last_s = P - R first_{s+1} (over u, v, w, p in red); backward
// substitution writes bound[s * batch + k] = last_{s-1} (XL of segment s) and
// bound[(segs + s) * batch + k] = first_{s+1} (XR of segment s).
template <typename T>
__global__ void __launch_bounds__(256)
tri_segments(T* __restrict__ red, T* __restrict__ bound, int segs, int rows_per_segment,
             long long batch, unsigned int* __restrict__ status,
             unsigned long long* __restrict__ flag) {
    const long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (k >= batch || status[k] != 0xFFFFFFFFu) return;
    const long long plane = static_cast<long long>(segs) * batch;
    T Pp = T(0), Rp = T(0);
    for (int s = 0; s < segs; ++s) {
        T* at = red + static_cast<long long>(s) * batch + k;
        const T u = at[0], v = at[plane], w = at[2 * plane];
        const T p = at[3 * plane], q = at[4 * plane], r = at[5 * plane];
        const T vr = v * Rp;
        const T piv = T(1) - vr;
        if (tri_bad_pivot(piv, T(1) + fabs(vr))) {
            tri_record(status, flag, k, s * rows_per_segment);
            return;
        }
        const T rm = hb_rcp(piv);
        const T U = (u - v * Pp) * rm, W = w * rm;
        const T qR = q * Rp;
        const T P = p - q * Pp + qR * U, R = r + qR * W;
        at[0] = U;
        at[plane] = W;
        at[2 * plane] = P;
        at[3 * plane] = R;
        Pp = P;
        Rp = R;
    }
    T fn = T(0);  // first_{s+1}
    for (int s = segs - 1; s >= 0; --s) {
        const T* at = red + static_cast<long long>(s) * batch + k;
        const T U = at[0], W = at[plane], P = at[2 * plane], R = at[3 * plane];
        bound[static_cast<long long>(segs + s) * batch + k] = fn;
        if (s + 1 < segs) bound[static_cast<long long>(s + 1) * batch + k] = P - R * fn;
        fn = U - W * fn;
    }
    bound[k] = T(0);
}
