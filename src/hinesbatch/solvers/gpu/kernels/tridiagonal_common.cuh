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
#include "async_copy.cuh"
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
