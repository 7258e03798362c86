// Helpers shared by the Hines kernels of hinesbatch (see ../STORAGE_GPU.md in docs/gpu.md).
//
// Conventions of every kernel:
//  * one thread solves one cell (one Hines system); T is float or double;
//  * row i of a cell: d[i] x[i] + l[i] x[parent[i]] + sum_{c: parent[c] == i} u[c] x[c] = rhs[i];
//  * d is destroyed, the solution x is written over rhs;
//  * a pivot (the diagonal after the node's children were eliminated) that is zero or not
//    finite is recorded: each thread keeps the largest such node index of its cell (the first
//    one met in descending-index elimination order, as the serial CPU solver reports it) and
//    its pivot, publishes (cell << 32 | node) with a 64-bit atomicMin on *flag and the pivot
//    in its cell's slot of bad_value; the host reads the lowest failing cell with one 8-byte
//    copy (and, only after a failure, that cell's pivot). The host resets *flag to ~0.
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

// Two values of one slot, loaded or stored together: (d, rhs), (m, y), (l, u).
template <typename T> struct hb_pair;
template <> struct hb_pair<float> { using type = float2; };
template <> struct hb_pair<double> { using type = double2; };

#include "async_copy.cuh"
#include "fast_math.cuh"

// True when a reciprocal from hb_rcp is zero, denormal, infinite or NaN, which is the case
// exactly when the pivot was zero, denormal, infinite, NaN or of magnitude >= 2^1022: one
// test on the exponent bits instead of several floating-point comparisons.
__device__ __forceinline__ bool hb_bad_result(double r) {
    const unsigned int e = (static_cast<unsigned int>(__double2hiint(r)) >> 20) & 0x7ffu;
    return e - 1u >= 0x7feu;
}
__device__ __forceinline__ bool hb_bad_result(float r) {
    const unsigned int e = (__float_as_uint(r) >> 23) & 0xffu;
    return e - 1u >= 0xfeu;
}

// Publish a cell's failure: the key (cell << 32 | node) to *flag (lowest wins) and the pivot
// to *value (this cell's own slot, read by the host for the lowest failing cell only).
template <typename T>
__device__ __forceinline__ void hb_report(unsigned long long* flag, T* value, long long cell,
                                          int node, T pivot) {
    if (node >= 0) {
        *value = pivot;
        const unsigned long long key =
            (static_cast<unsigned long long>(cell) << 32) | static_cast<unsigned int>(node);
        atomicMin(flag, key);
    }
}
