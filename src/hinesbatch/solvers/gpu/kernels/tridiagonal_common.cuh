// Helpers shared by the batched tridiagonal kernels of hinesbatch (docs/tridiagonal.md).
//
// Conventions of every kernel:
//  * system k, row i:  dl[i] x[i-1] + d[i] x[i] + du[i] x[i+1] = rhs[i]  for i < m = lengths[k]
//    (lengths == nullptr: m = n); dl at row 0 and du at row m-1 are never read, nor is anything
//    at rows >= m, and nothing is written there;
//  * T is float or double; dl and du are only read;
//  * a pivot that is zero, not finite, below the smallest normal number, or within rounding of
//    zero (|p| <= eps * (|base| + |correction|) for p = base - correction) marks its system
//    singular: status[k] (uint32, reset to 0xFFFFFFFF by the host) takes the smallest such row
//    with atomicMin, and *flag (uint64, reset to ~0) the smallest key (k << 32 | row). The host
//    reads *flag (8 bytes) and, only after a failure, status. The solution of a flagged system
//    is not written.

#pragma once
#include "fast_math.cuh"

template <typename T> struct TriLimits;
template <> struct TriLimits<float> {
    static __device__ __forceinline__ float eps() { return 1.1920928955078125e-07f; }
    static __device__ __forceinline__ float tiny() { return 1.1754943508222875e-38f; }
    static __device__ __forceinline__ float huge() { return 3.4028234663852886e+38f; }
};
template <> struct TriLimits<double> {
    static __device__ __forceinline__ double eps() { return 2.220446049250313e-16; }
    static __device__ __forceinline__ double tiny() { return 2.2250738585072014e-308; }
    static __device__ __forceinline__ double huge() { return 1.7976931348623157e+308; }
};

// True when the pivot p (= base - correction, scale = |base| + |correction|) cannot be divided
// by: zero, NaN (every comparison fails), infinite, subnormal, or lost in rounding.
template <typename T> __device__ __forceinline__ bool tri_bad_pivot(T p, T scale) {
    const T a = fabs(p);
    return !(a > TriLimits<T>::eps() * scale && a >= TriLimits<T>::tiny() &&
             a <= TriLimits<T>::huge());
}

// Publish that system k met a bad pivot at `row`.
__device__ __forceinline__ void tri_record(unsigned int* status, unsigned long long* flag,
                                           long long k, int row) {
    atomicMin(status + k, static_cast<unsigned int>(row));
    atomicMin(flag, (static_cast<unsigned long long>(k) << 32) | static_cast<unsigned int>(row));
}

// Asynchronous global -> shared copy of one element of 4, 8 or 16 bytes (cp.async, sm_80+):
// loads stay in flight without holding registers; 16-byte elements bypass L1 (.cg).
// tri_cp_async_commit() closes a group; completion: tri_cp_async_wait_all() then a barrier.
template <typename T> __device__ __forceinline__ void tri_cp_async(T* smem_dst, const T* gmem_src) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16, "cp.async: 4, 8 or 16 bytes");
    const unsigned int dst = static_cast<unsigned int>(__cvta_generic_to_shared(smem_dst));
    if constexpr (sizeof(T) == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem_src));
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(gmem_src),
                     "n"(sizeof(T)));
}

__device__ __forceinline__ void tri_cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

__device__ __forceinline__ void tri_cp_async_wait_all() {
    asm volatile("cp.async.wait_all;\n" ::: "memory");
}
