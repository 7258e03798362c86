// Tiled Hines solves: the canonical (cell-contiguous) values are staged through shared memory.
//
// The block copies its tile of cells' d and rhs from global memory into shared memory with
// cp.async (consecutive threads read consecutive addresses: coalesced, and many loads in
// flight), runs both sweeps in shared memory, then writes x back, coalesced, over rhs. Each
// value crosses device memory once each way (24 bytes per node in fp64 for a shared
// structure): the sweeps' intermediates stay on chip.
//
// The sweeps keep, per node j, m[j] = l[j] / D[j] and y[j] = R[j] / D[j] in the slots of d[j]
// and rhs[j] (D, R: pivot and rhs after j's children were eliminated), so that
//   backward:  D[p] -= u[j] m[j],  R[p] -= u[j] y[j]   for p = parent[j];
//   forward:   x[j] = y[j] - m[j] x[parent[j]].
#include "hines_common.cuh"
#include "bulk_copy.cuh"

// Shared structure (MonoBatch). The elimination follows a schedule built on the host
// (hinesbatch.tree.schedules.tiled): steps of W = KB * V independent nodes with distinct
// parents, children always in earlier steps. KB lanes of a warp share one cell and eliminate
// the W nodes of a step together, V each (no two of them touch the same slot, so a step
// needs no barrier inside; __syncwarp orders the steps); a warp holds CW = 32 / KB cells.
// One lane per cell (KB = 1) cannot keep an SM busy: shared memory holds only ~40 fp64 cells
// of 300 nodes per SM, about one warp's worth of lanes, each running a long dependency chain.
// The forward sweep runs the steps in reverse.
//
// Cells: position q of the launch is cell q of the part with its values at q*n (a MonoBatch),
// or, with `members` and `starts` (the `grouped` strategy: one launch per class of cells
// sharing one matrix), cell members[q] with its values at starts[q] (canonical order of a
// per-cell structure; the host's offsets[members[q]], so that one load, not two dependent
// ones, finds a cell). Tiles: tile t holds positions t*tc .. t*tc+tc-1. A group keeps its
// tile's starts in shared memory, and loads the next tile's (cp.async) during the sweeps, so
// that staging and writing back a tile wait on no load from global memory (with
// offsets[members[q]] read there, Nsight Compute counted 0.35 long-scoreboard stall cycles
// per instruction against tiled's 0.06).
// Groups: a block of G * tc * KB threads holds G groups of tc * KB threads (whole warps), each
// with its own tile buffer(s) and its own barrier (named barrier 1 + g; the GROUPS = false
// instantiation, for one group per block, uses __syncthreads only), so the groups stage,
// solve and write back independently while the schedule is staged once for all of them: a
// large cell's schedule (tens of KB) is then not repeated in every tile's block, and more
// cells fit on an SM. Group g of block b solves tiles b*G + g, then + gridDim.x * G, ...
// With nbuf = 1 and one group the host launches one block per tile (stage, solve, write
// back). With several groups it launches only the blocks that stay resident (a persistent
// grid: the schedule is staged once per block, not per G tiles), and the groups start out of
// phase (below), so that one group's loads and stores overlap the others' sweeps. With
// nbuf = 2 the host launches only as many blocks as stay resident and each group keeps two
// tile buffers: the next tile's loads are in flight (cp.async group) while the current tile
// is solved, so the SM's memory traffic no longer stops during the sweeps, and the schedule
// is staged once per block instead of once per tile. With `prefetch` (set by the host only
// with nbuf = 1 and several groups), a group asks L2 for its next tile between its two sweeps
// (hb_tile_prefetch), so that staging it reads L2: the tile's memory time overlaps the
// forward sweep without a second buffer.
//
// Shared memory: lu[L] (T2) | with a member list, cell starts [G][2][tc] (int64) | tile
// buffers [G*nbuf] | jp[NS] (int2) stage[n] started[G], NS = n_batches*W, L = n + 1 rounded
// up to even (hb_lu_len: what follows then starts on 16 bytes). (l, u) is kept per slot, not
// per entry: a step's dummies all read slot n's zeros (one broadcast), and the schedule takes
// less shared memory, so that an SM holds more large cells (1,569 nodes: 7 instead of 6).
// A tile buffer holds two planes of tc*S words:
// plane A (d, then m) and plane B (rhs, then y, then x), cell c's slot s at c*S + s of each,
// so every access is one word per lane (an 8-byte access serves 16 lanes per wavefront, a
// 16-byte one only 8).
// Nodes live in slots in schedule order, so a step's nodes are adjacent; slots n..n+W-1 are
// the dummies' (d = 1, rhs = 0, which stay so), slot n+W the root's "parent" (0, 0); S >=
// n + W + 1 is chosen by the host so that the CW cells of a warp fall on distinct banks
// (S = phase mod 128/sizeof(T), hinesbatch.tree.schedules.tiled.bank_geometry): the lanes
// of a step then reach their own slots without bank conflicts. Parents are scattered: the
// host orders each step's nodes so that the lanes one wavefront serves have parents in
// distinct banks where it can. Staging, a warp loads a run of consecutive nodes of 1 or CW
// cells (coalesced reads of d, of rhs; writes of x), in the host's order within the run,
// which spreads their slots over the banks. Schedule entry: jp = (slot, parent slot), node
// (for error reports: rank << 16 | node, rank its index in the tree eliminated, which the
// host may hang from the cell's centre); per slot lu = (l, u) (0 for the root and row n). Block:
// G * tc * KB <= 512 threads, G <= 15. Registers: at most 64 per thread with one node per
// lane and step (V = 1), 128 with more (the V = 2 variants spilled at 64). Shared memory, not
// registers, bounds the blocks resident on an SM, except for the smallest cells.

// Barrier of group g's gt threads. With several groups (GROUPS): named barrier 1 + g (0 is
// __syncthreads's); it orders the group's shared-memory accesses as __syncthreads does the
// block's. A barrier id held in a register makes ptxas reserve all 16 of a block's barriers,
// and an SM holds only so many barriers: on the H200 that capped one-group blocks of small
// cells at a few per SM, so one-group blocks are a
// separate instantiation that uses __syncthreads only (1 barrier).
template <bool GROUPS>
__device__ __forceinline__ void hb_group_sync(int g, int gt) {
    if constexpr (GROUPS) {
        asm volatile("bar.sync %0, %1;\n" ::"r"(g + 1), "r"(gt) : "memory");
    } else {
        __syncthreads();
    }
}

// The part's cell at launch position q, and where its values start.
__device__ __forceinline__ long long hb_member(const int* members, long long q) {
    return members ? static_cast<long long>(members[q]) : q;
}
__device__ __forceinline__ long long hb_member_start(const long long* starts, long long q,
                                                     int n) {
    return starts ? starts[q] : q * n;
}

// Call f(c, g, node, slot) for each node of the tile's nc cells (first position q0) that
// this thread stages and writes back (tid: its index among the group's nthreads threads,
// whole warps; g: where cell c's values start, tile_starts[c] in shared memory, or
// (q0 + c) * n without a member list). A warp takes SC = 1 << sc_shift cells at a
// time (lanes vary fastest over them: the host gives a group at least as many such cell
// groups as warps) and runs of 32 / SC consecutive nodes of each; sstage[i] = node | slot
// << 16: the nodes in staging order (a permutation within each run that spreads their slots
// over the shared-memory banks). Integer work per node is kept to a minimum: it is issued by
// the same warps as the sweeps.
template <typename F>
__device__ __forceinline__ void hb_tile_nodes(const int* sstage, const long long* tile_starts,
                                              long long q0, int nc, int n, int sc_shift,
                                              int tid, int nthreads, F f) {
    const int lane = tid & 31, run = 32 >> sc_shift;
    for (int c = ((tid >> 5) << sc_shift) + (lane & ((1 << sc_shift) - 1)); c < nc;
         c += nthreads >> (5 - sc_shift)) {
        long long g = (q0 + c) * n;
        if (tile_starts) {  // read opaquely: ptxas then still issues the sweeps' loads early
            const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(tile_starts + c));
            asm volatile("ld.shared.s64 %0, [%1];" : "=l"(g) : "r"(a));
        }
        for (int i = lane >> sc_shift; i < n; i += run) {
            const unsigned e = static_cast<unsigned>(sstage[i]);
            f(c, g, e & 0xFFFFu, static_cast<int>(e >> 16));
        }
    }
}

// Set the tile's nc cells' dummy slots (d = 1, rhs = 0) and root-parent slot (0, 0): when
// staging, or in slot order once the bulk copies, which fill slots n .. P - 1 with padding,
// are done.
template <typename T>
__device__ __forceinline__ void hb_tile_dummies(T* sa, T* sb, int nc, int n, int S, int W,
                                                int tid, int nthreads) {
    for (int k = tid; k < nc * (W + 1); k += nthreads) {
        const int c = k / (W + 1), s = n + k - c * (W + 1);
        sa[c * S + s] = s < n + W ? T(1) : T(0);
        sb[c * S + s] = T(0);
    }
}

// Start copying the tile's cells into planes `sa` (d) and `sb` (rhs), cell c's slot s at
// c * S + s, and set the dummy / root-parent slots (hb_tile_nodes says who copies what).
template <typename T>
__device__ __forceinline__ void hb_tile_stage(T* sa, T* sb, const T* d, const T* rhs,
                                              const int* sstage,
                                              const long long* tile_starts, long long q0,
                                              int nc, int n, int S, int W, int sc_shift,
                                              int tid, int nthreads) {
    hb_tile_nodes(sstage, tile_starts, q0, nc, n, sc_shift, tid, nthreads,
                  [&](int c, long long g, unsigned node, int s) {
                      hb_cp_async(sa + c * S + s, d + g + node);
                      hb_cp_async(sb + c * S + s, rhs + g + node);
                  });
    hb_tile_dummies(sa, sb, nc, n, S, W, tid, nthreads);
}

// Write x (plane B) of the tile's nc cells back over rhs, as staged.
template <typename T>
__device__ __forceinline__ void hb_tile_store(const T* sb, T* rhs, const int* sstage,
                                              const long long* tile_starts, long long q0,
                                              int nc, int n, int S, int sc_shift, int tid,
                                              int nthreads) {
    hb_tile_nodes(sstage, tile_starts, q0, nc, n, sc_shift, tid, nthreads,
                  [&](int c, long long g, unsigned node, int s) {
                      rhs[g + node] = sb[c * S + s];
                  });
}

// Ask L2 for the tile's d and rhs (one prefetch per 128-byte line; no registers held, no
// wait), so that staging the tile later reads L2 instead of waiting on device memory.
template <typename T>
__device__ __forceinline__ void hb_tile_prefetch(const T* d, const T* rhs,
                                                 const long long* starts, long long q0, int nc,
                                                 int n, int tid, int nthreads) {
    constexpr int LW = 128 / sizeof(T);       // words per line
    const int lines = (n + LW - 1) / LW + 1;  // lines a cell's values can touch
    for (int k = tid; k < nc * lines; k += nthreads) {
        const int c = k / lines, i = (k - c * lines) * LW;
        const long long g = hb_member_start(starts, q0 + c, n);
        const long long a = i == 0 ? g : ((g + i) & ~static_cast<long long>(LW - 1));
        if (a < g + n) {
            asm volatile("prefetch.global.L2 [%0];" ::"l"(d + a));
            asm volatile("prefetch.global.L2 [%0];" ::"l"(rhs + a));
        }
    }
}

// Slot order (hines_tiled_slots, the native layout of `tiled`): cell q's values at q * P + s
// for its node in slot s (s < n; P: n rounded up to 16 bytes, the rest padding), so that a
// tile's cells are copied in and out whole by bulk copies (bulk_copy.cuh) instead of one
// load and one store per node and lane, which on the H200 took a third of the shared-memory
// pipe's wavefronts of the canonical kernel.
// Lanes 0 .. 2 nc - 1 of the group's first warp each copy one plane of one cell.
template <typename T>
__device__ __forceinline__ void hb_tile_bulk_load(T* sa, T* sb, const T* d, const T* rhs,
                                                  unsigned long long* bar, long long q0, int nc,
                                                  int P, int S, int tid) {
    if (tid < 32) {
        if (tid == 0) hb_mbar_expect(bar, 2u * nc * P * sizeof(T));
        for (int k = tid; k < 2 * nc; k += 32) {
            const int c = k >> 1;
            const long long at = (q0 + c) * P;
            hb_bulk_load((k & 1 ? sb : sa) + c * S, (k & 1 ? rhs : d) + at, P * sizeof(T), bar);
        }
    }
}

// Write x (plane B) of the tile's nc cells back over rhs, one bulk store per cell, and wait
// until the stores have read the tile (the caller's barrier then frees the buffer).
template <typename T>
__device__ __forceinline__ void hb_tile_bulk_store(const T* sb, T* rhs, long long q0, int nc,
                                                   int P, int S, int tid) {
    if (tid < 32) {
        for (int c = tid; c < nc; c += 32)
            hb_bulk_store(rhs + (q0 + c) * P, sb + c * S, P * sizeof(T));
        hb_bulk_commit();
        hb_bulk_store_wait_read();
    }
}

// (l, u) pairs in shared memory for a cell of n nodes: one per slot 0 .. n (slot n: zeros for
// every dummy), rounded up to even so that what follows starts on 16 bytes
// (hinesbatch.tree.schedules.tiled.lu_len).
__host__ __device__ __forceinline__ int hb_lu_len(int n) { return (n + 2) & ~1; }

// Both sweeps of this lane's cell (slot s at ca[s], cb[s]); KB lanes per cell, lane k takes
// entries k, k + KB, ... of every step (V independent nodes, which overlap their latencies).
// Cells vary fastest across lanes, so a wavefront's accesses to the step's own (adjacent)
// slots fall on distinct banks. Lanes of cells past the tile's end compute on unused slots
// and report nothing, so the loop has no branch; the next step's schedule entries and their
// (l, u) (by slot, a dummy's at row n) are loaded one step ahead, after the step's own
// values: the (l, u) load waits for its entry's, and issued before the values it delayed
// them. `between()` runs between the two sweeps.
// Returns the failing entry's key (largest sched_node value, -1 if none: rank << 16 | node,
// hinesbatch.tree.schedules.tiled.kernel_arrays) and its pivot in *bad_pivot.
template <typename T, int KB, int V, typename F>
__device__ __forceinline__ int hb_tile_sweeps(T* ca, T* cb, const int2* sjp,
                                              const typename hb_pair<T>::type* slu, int n,
                                              const int* __restrict__ sched_node, int n_batches,
                                              int k, T* bad_pivot_out, F between) {
    using T2 = typename hb_pair<T>::type;
    constexpr int W = KB * V;
    int bad = -1;
    T bad_pivot = T(0);
    int2 e[V];
    T2 lu[V];
#pragma unroll
    for (int v = 0; v < V; ++v) {
        e[v] = sjp[v * KB + k];
        lu[v] = slu[min(e[v].x, n)];
    }
    for (int b = 0; b < n_batches; ++b) {
        const int nxt = (b + 1 < n_batches ? b + 1 : b) * W + k;
        int2 en[V];
        T2 lun[V];
        T od[V], orr[V], pd[V], pr[V], r[V];
#pragma unroll
        for (int v = 0; v < V; ++v) {
            od[v] = ca[e[v].x];
            orr[v] = cb[e[v].x];
            pd[v] = ca[e[v].y];
            pr[v] = cb[e[v].y];
            en[v] = sjp[nxt + v * KB];  // after the step's own loads (above)
            lun[v] = slu[min(en[v].x, n)];
        }
#pragma unroll
        for (int v = 0; v < V; ++v) {
            r[v] = hb_rcp(od[v]);
            if (hb_bad_result(r[v])) {  // zero, non-finite (or out-of-range) pivot: rare
                const int node = __ldg(sched_node + b * W + v * KB + k);
                if (node > bad) {
                    bad = node;
                    bad_pivot = od[v];
                }
            }
        }
#pragma unroll
        for (int v = 0; v < V; ++v) {  // own slot first: a dummy is its own parent
            const T m = lu[v].x * r[v], y = orr[v] * r[v];
            ca[e[v].x] = m;
            cb[e[v].x] = y;
            ca[e[v].y] = pd[v] - lu[v].y * m;
            cb[e[v].y] = pr[v] - lu[v].y * y;
            e[v] = en[v];
            lu[v] = lun[v];
        }
        __syncwarp();
    }
    between();
#pragma unroll
    for (int v = 0; v < V; ++v) e[v] = sjp[(n_batches - 1) * W + v * KB + k];
    for (int b = n_batches - 1; b >= 0; --b) {
        int2 en[V];
        T m[V], y[V], xp[V];
#pragma unroll
        for (int v = 0; v < V; ++v) {
            en[v] = sjp[(b > 0 ? b - 1 : 0) * W + v * KB + k];
            m[v] = ca[e[v].x];
            y[v] = cb[e[v].x];
            xp[v] = cb[e[v].y];
        }
#pragma unroll
        for (int v = 0; v < V; ++v) {  // x over y
            cb[e[v].x] = y[v] - m[v] * xp[v];
            e[v] = en[v];
        }
        __syncwarp();
    }
    *bad_pivot_out = bad_pivot;
    return bad;
}

// One class of cells that share a schedule, as hb_tiled_groups solves it: the schedule
// (entries jp and node, lu per slot; the staging table), the cells (positions 0 .. n_cells - 1 of
// `members`, with their values at `starts`, or of a MonoBatch when both are null) and the
// block's arrangement (tc cells per tile, `groups` groups, nbuf tile buffers per group, one
// with a member list; prefetch: the host's SharedTiles.prefetches).
template <typename T>
struct hb_tiles {
    const int2* jp;
    const typename hb_pair<T>::type* lu;
    const int* node;
    const int* stage;
    const int* members;
    const long long* starts;
    long long n_cells;
    int n_batches, n, S, sc_shift, tc, groups, nbuf, prefetch;
    int pitch;  // slot order (SLOTS): words per cell in global memory
};

// A block solves tiles of class `c` (layout and groups: above). Every thread of the block
// calls it; threads past groups * tc * KB (the fused kernel's block is sized for its largest
// class) only stage the schedule. Tiles: with `counter` null, group g of block b solves tiles
// b*G + g, then + gridDim.x * G, ...; otherwise the block takes its first G tiles with one
// atomicAdd on *counter (so that a group with a tile has a group before it with one: the
// staggered start below relies on it) and each group takes its next tile with its own (nbuf
// = 1 only), so that groups that finish early take more tiles. Returns once the group's
// tiles are done; the caller synchronises the block before it reuses the shared memory.
// SLOTS: values in slot order (hb_tile_bulk_load; a MonoBatch, nbuf = 1, no counter), each
// group's tiles copied in by bulk copies that complete on the group's mbarrier (after the
// start flags), and out by bulk stores. LISTED: cells from `members` and `starts` (`grouped`),
// each group with its tile's cell starts and the next tile's in shared memory; a compile-time
// choice, since its code in `tiled`'s kernel made ptxas issue the sweeps' loads later.
template <typename T, int KB, int V, bool GROUPS, bool SLOTS, bool LISTED>
__device__ __forceinline__ void hb_tiled_groups(const hb_tiles<T>& c, T* __restrict__ d,
                                                T* __restrict__ rhs, unsigned char* smem,
                                                int* counter,
                                                long long cell_base,
                                                unsigned long long* __restrict__ flag,
                                                T* __restrict__ bad_value) {
    using T2 = typename hb_pair<T>::type;
    constexpr int CW = 32 / KB;  // cells per warp
    constexpr int W = KB * V;    // nodes per step: V per lane
    const int NS = c.n_batches * W, n = c.n, S = c.S, tc = c.tc, nbuf = c.nbuf;
    const int tile_words = 2 * tc * S;  // planes A and B of a tile
    const int tid = threadIdx.x;
    const int gt = tc * KB, groups = GROUPS ? c.groups : 1;  // a group: gt threads
    constexpr bool listed = LISTED;  // cells from a member list (then nbuf = 1)
    T2* slu = reinterpret_cast<T2*>(smem);
    // listed: each group's two rows of tc cell starts (its tile's, and the next tile's)
    long long* sst = reinterpret_cast<long long*>(slu + hb_lu_len(n));
    T* sv = reinterpret_cast<T*>(sst + (listed ? groups * 2 * tc : 0));  // tile buffers
    int2* sjp = reinterpret_cast<int2*>(sv + groups * nbuf * tile_words);
    int* sstage = reinterpret_cast<int*>(sjp + NS);  // node | slot << 16, staging order
    int* started = sstage + n;  // GROUPS: started[g] = 1 once group g has its first tile staged
    int* taken = started + groups;  // counter: taken[g] group g's next tile, taken[G] the first
    unsigned long long* bars = reinterpret_cast<unsigned long long*>(  // SLOTS: one per group
        (reinterpret_cast<unsigned long long>(started + groups) + 7) & ~7ull);
    const int n_tiles = static_cast<int>((c.n_cells + tc - 1) / tc);
    for (int k = tid; k < NS; k += blockDim.x) hb_cp_async(sjp + k, c.jp + k);  // 1. schedule
    for (int k = tid; k < hb_lu_len(n); k += blockDim.x) hb_cp_async(slu + k, c.lu + k);
    if (!SLOTS)
        for (int k = tid; k < n; k += blockDim.x) hb_cp_async(sstage + k, c.stage + k);
    if (GROUPS && tid < groups) started[tid] = 0;
    if (counter && tid == 0) taken[groups] = atomicAdd(counter, groups);
    if (SLOTS && tid < groups) {
        hb_mbar_init(bars + tid, 1);
        hb_fence_mbar_init();
    }
    hb_cp_async_wait_all();
    __syncthreads();
    if (tid >= groups * gt) return;
    const int g = GROUPS ? tid / gt : 0, gtid = tid - g * gt;  // the thread's group, index
    sv += g * nbuf * tile_words;                  // the group's tile buffer(s)
    sst += g * 2 * tc;                            // the group's rows of cell starts
    const int stride = gridDim.x * groups;
    int tile = counter ? taken[groups] + g : blockIdx.x * groups + g;
    if (GROUPS && g > 0 && tile < n_tiles) {
        // Staggered start: group g stages its first tile once group g - 1 has its own, so the
        // groups, whose tiles take equal times, stay out of phase, and the block's loads and
        // stores overlap other groups' sweeps instead of all groups waiting on memory at once
        // (the host launches a persistent grid of such blocks). Group g - 1 has a tile too.
        if (gtid == 0) {
            while (atomicOr(started + g - 1, 0) == 0) __nanosleep(200);
        }
        hb_group_sync<GROUPS>(g, gt);
    }
    auto cells_of = [&](int t) {
        return static_cast<int>(
            min(static_cast<long long>(tc), c.n_cells - static_cast<long long>(t) * tc));
    };
    auto starts_of = [&](long long* row, int t) {  // listed: tile t's cell starts into row
        if (listed && t < n_tiles)
            for (int i = gtid; i < cells_of(t); i += gt)
                hb_cp_async(row + i, c.starts + static_cast<long long>(t) * tc + i);
    };
    auto stage = [&](T* buf, int t, const long long* row) {
        if constexpr (SLOTS)
            hb_tile_bulk_load<T>(buf, buf + tc * S, d, rhs, bars + g,
                                 static_cast<long long>(t) * tc, cells_of(t), c.pitch, S, gtid);
        else
            hb_tile_stage<T>(buf, buf + tc * S, d, rhs, sstage, listed ? row : nullptr,
                             static_cast<long long>(t) * tc, cells_of(t), n, S, W, c.sc_shift,
                             gtid, gt);
    };
    if (listed && tile < n_tiles) {  // the first tile's cell starts (row 0)
        starts_of(sst, tile);
        hb_cp_async_wait_all();
        hb_group_sync<GROUPS>(g, gt);
    }
    if (tile < n_tiles) stage(sv, tile, sst);  // 2. the first tile (a cp.async group: a tile)
    hb_cp_async_commit();
    const int lane = tid & 31;
    const int cw = lane % CW, k = lane / CW;
    const int cell = (gtid >> 5) * CW + cw;
    for (int it = 0; tile < n_tiles; ++it) {
        T* buf = sv + (nbuf == 2 ? (it & 1) : 0) * tile_words;
        long long* row = sst + (it & 1) * tc;             // listed: this tile's cell starts
        long long* row_next = sst + ((it + 1) & 1) * tc;  // and the next tile's
        const long long c0 = static_cast<long long>(tile) * tc;
        const int nc = cells_of(tile);
        int next = tile + stride;
        if (counter && gtid == 0) taken[g] = atomicAdd(counter, 1);  // read after the barrier
        if constexpr (SLOTS) {  // the tile is in: set its dummy slots
            hb_mbar_wait(bars + g, it & 1);
            hb_tile_dummies(buf, buf + tc * S, nc, n, S, W, gtid, gt);
        } else if (nbuf == 2) {  // the next tile's loads go out now and land during the sweeps
            if (next < n_tiles) stage(sv + ((it + 1) & 1) * tile_words, next, nullptr);
            hb_cp_async_commit();
            hb_cp_async_wait_prior();
        } else {
            hb_cp_async_wait_all();
        }
        hb_group_sync<GROUPS>(g, gt);
        if (counter) next = taken[g];
        if (GROUPS && it == 0 && gtid == 0) atomicExch(started + g, 1);
        // 3. sweeps, 4. the cell's failure: largest node of its lanes
        T bad_pivot;
        int bad = hb_tile_sweeps<T, KB, V>(
            buf + cell * S, buf + tc * S + cell * S, sjp, slu, n, c.node, c.n_batches, k,
            &bad_pivot, [&]() {
                if (listed) {  // the next tile's cell starts land during the forward sweep
                    starts_of(row_next, next);
                    hb_cp_async_commit();
                }
                // the next tile's loads, asked of L2 during the forward sweep
                if (!c.prefetch || next >= n_tiles) return;
                if constexpr (SLOTS) {
                    const long long at = static_cast<long long>(next) * tc * c.pitch;
                    const int bytes = cells_of(next) * c.pitch * static_cast<int>(sizeof(T));
                    if (gtid == 0) {  // the tile's cells are adjacent: one run per plane
                        hb_bulk_prefetch_l2(d + at, bytes);
                        hb_bulk_prefetch_l2(rhs + at, bytes);
                    }
                } else {
                    hb_tile_prefetch<T>(d, rhs, c.starts, static_cast<long long>(next) * tc,
                                        cells_of(next), n, gtid, gt);
                }
            });
        if constexpr (SLOTS) hb_fence_proxy_async();  // the tile's writes, before bulk copies
#pragma unroll
        for (int off = KB / 2; off > 0; off >>= 1) {
            const int other = __shfl_xor_sync(0xffffffffu, bad, off * CW);
            const T value = __shfl_xor_sync(0xffffffffu, bad_pivot, off * CW);
            if (other > bad) {
                bad = other;
                bad_pivot = value;
            }
        }
        if (cell < nc && k == 0) {
            const long long cc = hb_member(c.members, c0 + cell);
            hb_report(flag, bad_value + cc, cell_base + cc, bad < 0 ? -1 : bad & 0xFFFF,
                      bad_pivot);  // the node of highest rank in the tree eliminated
        }
        if (listed) hb_cp_async_wait_all();  // the next tile's starts (the barrier shows them)
        hb_group_sync<GROUPS>(g, gt);
        if constexpr (SLOTS)
            hb_tile_bulk_store<T>(buf + tc * S, rhs, c0, nc, c.pitch, S, gtid);  // 5.
        else
            hb_tile_store<T>(buf + tc * S, rhs, sstage, listed ? row : nullptr, c0, nc, n, S,
                             c.sc_shift, gtid, gt);  // 5.
        hb_group_sync<GROUPS>(g, gt);  // the buffer is staged again next (nbuf 1) or after next
        if (nbuf == 1) {
            if (next < n_tiles) stage(sv, next, row_next);
            hb_cp_async_commit();
        }
        tile = next;
    }
    if constexpr (SLOTS) hb_bulk_store_wait();  // the last stores are complete
}

// One shared structure: a MonoBatch (`tiled`) or, LISTED, one class of `grouped` (one launch
// each; cells from members and starts). Two instantiations, not a test at run time: with the
// member-list code present, ptxas issued the sweeps' loads later in `tiled`'s kernel and its
// large cells took up to 5% longer.
template <typename T, int KB, int V, bool GROUPS, bool LISTED>
__global__ void __launch_bounds__(512, V > 1 ? 1 : 2)
hines_tiled_mono(T* __restrict__ d, T* __restrict__ rhs, const int2* __restrict__ sched_jp,
                 const typename hb_pair<T>::type* __restrict__ sched_lu,
                 const int* __restrict__ sched_node, const int* __restrict__ node_stage,
                 const int* __restrict__ members, const long long* __restrict__ starts,
                 int n_batches, int n, int S, int sc_shift, int tc, int nbuf, int prefetch,
                 long long n_cells, long long cell_base, unsigned long long* __restrict__ flag,
                 T* __restrict__ bad_value) {
    extern __shared__ __align__(16) unsigned char hb_smem_tm[];
    const hb_tiles<T> c{sched_jp, sched_lu, sched_node, node_stage, members, starts, n_cells,
                        n_batches, n, S, sc_shift, tc,
                        GROUPS ? static_cast<int>(blockDim.x) / (tc * KB) : 1, nbuf, prefetch};
    hb_tiled_groups<T, KB, V, GROUPS, false, LISTED>(c, d, rhs, hb_smem_tm, nullptr, cell_base,
                                                     flag, bad_value);
}

// A MonoBatch in slot order (the native layout of `tiled`; hb_tile_bulk_load): cell q's values
// at q * pitch, node in slot s at q * pitch + s.
template <typename T, int KB, int V, bool GROUPS>
__global__ void __launch_bounds__(512, V > 1 ? 1 : 2)
hines_tiled_slots(T* __restrict__ d, T* __restrict__ rhs, const int2* __restrict__ sched_jp,
                  const typename hb_pair<T>::type* __restrict__ sched_lu,
                  const int* __restrict__ sched_node, int n_batches, int n, int S, int pitch,
                  int tc, int prefetch, long long n_cells, long long cell_base,
                  unsigned long long* __restrict__ flag, T* __restrict__ bad_value) {
    extern __shared__ __align__(16) unsigned char hb_smem_ts[];
    const hb_tiles<T> c{sched_jp, sched_lu, sched_node, nullptr, nullptr, nullptr, n_cells,
                        n_batches, n, S, 0, tc,
                        GROUPS ? static_cast<int>(blockDim.x) / (tc * KB) : 1, 1, prefetch,
                        pitch};
    hb_tiled_groups<T, KB, V, GROUPS, true, false>(c, d, rhs, hb_smem_ts, nullptr, cell_base,
                                                   flag, bad_value);
}

// Every class of `grouped` in one launch (its classes all with one node per lane and step):
// one persistent block per SM, sized for the largest of the classes' arrangements, solves
// class after class. Block b starts on class home[b] (the host spreads the blocks over the
// classes in proportion to their work); the groups take the class's tiles from its counter
// (counters[k], zeroed by the host before each solve) until none are left; the block then
// moves on to the class with the most work left (its tiles left times work[k]), or ends when
// no class has tiles left. So a class's last partial round of tiles no longer leaves SMs idle
// until the next launch, and the schedule is staged only when a block changes class.
// Class k: classes[k * HB_CLASS_FIELDS ...] (FIELDS in solvers/gpu/strategies/classes_launch.py):
// where its entries start in jp / node, where its staging table starts in stage, where its
// cells start in members and starts, cells, steps, nodes, slot stride, staging shift, cells
// per tile, groups, lanes, prefetch, work per tile, where its (l, u) start in lu.
// Blocks of at most 768 threads: ptxas then has 80 registers, against 64 at 1024 threads,
// where it issued each step's loads of the parents' values after the pivot's reciprocal
// instead of before it (the classes of 881-1,681 nodes 12-15% slower than one launch per
// class).
constexpr int HB_CLASS_FIELDS = 14;
template <int N> struct hb_int { static constexpr int value = N; };

template <typename T>
__global__ void __launch_bounds__(768, 1)
hines_tiled_classes(T* __restrict__ d, T* __restrict__ rhs, const int2* __restrict__ jp,
                    const typename hb_pair<T>::type* __restrict__ lu,
                    const int* __restrict__ node, const int* __restrict__ stage,
                    const int* __restrict__ members, const long long* __restrict__ starts,
                    const long long* __restrict__ classes, int n_classes,
                    const int* __restrict__ home, int* __restrict__ counters,
                    long long cell_base, unsigned long long* __restrict__ flag,
                    T* __restrict__ bad_value) {
    extern __shared__ __align__(16) unsigned char hb_smem_tc[];
    __shared__ int next_class, lanes;
    __shared__ hb_tiles<T> c;  // the class (read from shared memory: registers are scarce)
    for (int k = home[blockIdx.x]; k >= 0; k = next_class) {
        if (threadIdx.x == 0) {
            const long long* f = classes + static_cast<long long>(k) * HB_CLASS_FIELDS;
            c = hb_tiles<T>{jp + f[0], lu + f[13], node + f[0], stage + f[1], members + f[2],
                            starts + f[2], f[3], static_cast<int>(f[4]), static_cast<int>(f[5]),
                            static_cast<int>(f[6]), static_cast<int>(f[7]),
                            static_cast<int>(f[8]), static_cast<int>(f[9]), 1,
                            static_cast<int>(f[11])};
            lanes = static_cast<int>(f[10]);
        }
        __syncthreads();
        auto run = [&](auto kb) {
            constexpr int kb_ = decltype(kb)::value;  // a member list, known here
            hb_tiled_groups<T, kb_, 1, true, false, true>(c, d, rhs, hb_smem_tc, counters + k,
                                                          cell_base, flag, bad_value);
        };
        switch (lanes) {  // lanes per cell: the host sends only these (others spilled at 64)
            case 8: run(hb_int<8>{}); break;
            case 16: run(hb_int<16>{}); break;
            case 32: run(hb_int<32>{}); break;
            default: __trap();
        }
        __syncthreads();  // every group is done with the class: its shared memory is free
        if (threadIdx.x < 32) {  // warp 0: the class with the most work left, -1 if none
            long long most = 0;
            int best = -1;
            for (int j = threadIdx.x; j < n_classes; j += 32) {
                const long long* fj = classes + static_cast<long long>(j) * HB_CLASS_FIELDS;
                const long long left = (fj[3] + fj[8] - 1) / fj[8] - atomicOr(counters + j, 0);
                if (left > 0 && left * fj[12] > most) {
                    most = left * fj[12];
                    best = j;
                }
            }
#pragma unroll
            for (int off = 16; off > 0; off >>= 1) {
                const long long om = __shfl_xor_sync(0xffffffffu, most, off);
                const int ob = __shfl_xor_sync(0xffffffffu, best, off);
                if (om > most || (om == most && ob > best)) {
                    most = om;
                    best = ob;
                }
            }
            if (threadIdx.x == 0) next_class = best;
        }
        __syncthreads();
    }
}

// Per-cell structure (HinesStructure, cells of any sizes). Tile t holds the consecutive cells
// tile_first[t] .. tile_first[t+1]-1, i.e. one contiguous node range, staged as it is with its
// structure (local parents, u, and l unless symmetric). Each lane eliminates its cell in
// descending node order. In an unbranched run (parent == i - 1) the contribution to the
// parent stays in registers ("carry") instead of a shared-memory read-modify-write, and the
// next node's values are loaded one step ahead (this step never stores into slot i - 1), so
// the dependency chain per node is one reciprocal and two multiply-adds.
// Shared memory: d | rhs | u | l (absent when symmetric) | parent, each `total` entries.
template <typename T>
__global__ void __launch_bounds__(32)
hines_tiled_multi(T* __restrict__ d, T* __restrict__ rhs, const int* __restrict__ parent,
                  const T* __restrict__ u, const T* __restrict__ l,
                  const long long* __restrict__ offsets, const int* __restrict__ tile_first,
                  int max_nodes, long long cell_base, unsigned long long* __restrict__ flag,
                  T* __restrict__ bad_value) {
    extern __shared__ __align__(16) unsigned char hb_smem_tx[];
    const bool symmetric = (l == u);
    const int lane = threadIdx.x;
    const int cs = tile_first[blockIdx.x], ce = tile_first[blockIdx.x + 1];
    const long long A = offsets[cs];
    const int total = static_cast<int>(offsets[ce] - A);
    T* sd = reinterpret_cast<T*>(hb_smem_tx);
    T* sr = sd + max_nodes;
    T* su = sr + max_nodes;
    T* sl = symmetric ? su : su + max_nodes;
    int* sp = reinterpret_cast<int*>((symmetric ? su : sl) + max_nodes);
    for (int k = lane; k < total; k += 32) {
        hb_cp_async(sd + k, d + A + k);
        hb_cp_async(sr + k, rhs + A + k);
        hb_cp_async(su + k, u + A + k);
        if (!symmetric) hb_cp_async(sl + k, l + A + k);
        hb_cp_async(sp + k, parent + A + k);
    }
    hb_cp_async_wait_all();
    __syncthreads();
    if (lane < ce - cs) {
        const int c = cs + lane;
        const int a = static_cast<int>(offsets[c] - A);
        const int m = static_cast<int>(offsets[c + 1] - offsets[c]);
        T* cd = sd + a;
        T* cr = sr + a;
        const T* cu = su + a;
        const T* cl = sl + a;
        const int* cp = sp + a;
        int bad = -1;
        T bad_pivot = T(0);
        T carry_d = T(0), carry_r = T(0);
        T dn = cd[m - 1], rn = cr[m - 1];
        for (int i = m - 1; i > 0; --i) {
            const int p = cp[i];
            const T ui = cu[i], li = cl[i];
            const T pivot = dn + carry_d, ri = rn + carry_r;
            dn = cd[i - 1];
            rn = cr[i - 1];
            const T r = hb_rcp(pivot);
            if ((hb_bad_pivot(pivot) || hb_bad_result(r)) && i > bad) {
                bad = i;
                bad_pivot = pivot;
            }
            const T mm = li * r, y = ri * r;
            cd[i] = mm;
            cr[i] = y;
            const T cd_p = -(ui * li) * r, cr_p = -ui * y;
            if (p == i - 1) {
                carry_d = cd_p;
                carry_r = cr_p;
            } else {
                carry_d = T(0);
                carry_r = T(0);
                cd[p] += cd_p;
                cr[p] += cr_p;
            }
        }
        const T pivot0 = dn + carry_d;
        if (hb_bad_pivot(pivot0) && bad < 0) {
            bad = 0;
            bad_pivot = pivot0;
        }
        T x = (rn + carry_r) / pivot0;
        cr[0] = x;
        for (int i = 1; i < m; ++i) {
            const int p = cp[i];
            const T xp = p == i - 1 ? x : cr[p];
            x = cr[i] - cd[i] * xp;
            cr[i] = x;
        }
        hb_report(flag, bad_value + c, cell_base + c, bad, bad_pivot);
    }
    __syncthreads();
    for (int k = lane; k < total; k += 32) rhs[A + k] = sr[k];
}
