// Arithmetic helpers shared by every kernel family of hinesbatch (Hines and tridiagonal).
#pragma once

// Reciprocal without branches: the hardware approximation refined by Newton steps
// (e = 1 - x r; r += r e), two in double and one in float, so that the result is within
// about one ulp of 1/x. IEEE division (x / y) branches to a slow path for rare operands,
// which keeps the compiler from overlapping independent divisions; the tiled and chunked
// kernels need several in flight. The caller deals with bad pivots: the tridiagonal kernels
// test them first (tri_bad_pivot); the Hines kernels test the result (hb_bad_result: a zero,
// infinite or NaN pivot, or one below the smallest normal number, flushed to zero by .ftz,
// gives a non-finite or zero reciprocal).
__device__ __forceinline__ double hb_rcp(double x) {
    double r;
    asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(x));
    double e = fma(-x, r, 1.0);
    r = fma(r, e, r);
    e = fma(-x, r, 1.0);
    return fma(r, e, r);
}
__device__ __forceinline__ float hb_rcp(float x) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    const float e = fmaf(-x, r, 1.0f);
    return fmaf(r, e, r);
}
