// Helpers shared by the Hines kernels of hinesbatch (see ../STORAGE_GPU.md in docs/gpu.md).
//
// Conventions of every kernel:
//  * one thread solves one cell (one Hines system); T is float or double;
//  * row i of a cell: d[i] x[i] + l[i] x[parent[i]] + sum_{c: parent[c] == i} u[c] x[c] = rhs[i];
//  * d is destroyed, the solution x is written over rhs;
//  * a pivot (the diagonal after the node's children were eliminated) that is zero or not
//    finite is recorded: each thread keeps the largest such node index of its cell (the first
//    one met in descending-index elimination order, as the serial CPU solver reports it) and
//    publishes (cell << 32 | node) with a 64-bit atomicMin on *flag, so the host reads the
//    lowest failing cell with one 8-byte copy. The host resets *flag to ~0 before a solve.
#pragma once

template <typename T> __device__ __forceinline__ T hb_inf();
template <> __device__ __forceinline__ float hb_inf<float>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double hb_inf<double>() {
    return __longlong_as_double(0x7ff0000000000000LL);
}

// True when `pivot` is zero, infinite or NaN (NaN fails every comparison).
template <typename T> __device__ __forceinline__ bool hb_bad_pivot(T pivot) {
    const T a = fabs(pivot);
    return !(a > T(0) && a < hb_inf<T>());
}

__device__ __forceinline__ void hb_report(unsigned long long* flag, long long cell, int node) {
    if (node >= 0) {
        const unsigned long long key =
            (static_cast<unsigned long long>(cell) << 32) | static_cast<unsigned int>(node);
        atomicMin(flag, key);
    }
}

// Asynchronous global -> shared copy of one element (cp.async, sm_80+): many loads stay in
// flight without holding registers. Completion: hb_cp_async_wait_all() then a barrier.
template <typename T> __device__ __forceinline__ void hb_cp_async(T* smem_dst, const T* gmem_src) {
    const unsigned int dst = static_cast<unsigned int>(__cvta_generic_to_shared(smem_dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(gmem_src),
                 "n"(sizeof(T)));
}

__device__ __forceinline__ void hb_cp_async_wait_all() {
    asm volatile("cp.async.wait_all;\n" ::: "memory");
}
