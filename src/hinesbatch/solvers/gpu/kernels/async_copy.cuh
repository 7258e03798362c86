// Asynchronous global -> shared copies (cp.async, sm_80+) for every kernel family of
// hinesbatch: loads stay in flight without holding registers. Elements of 4, 8 or 16 bytes;
// 16-byte elements bypass L1 (.cg). hb_cp_async_commit() closes a group of copies;
// completion: hb_cp_async_wait_all() (or hb_cp_async_wait_prior(): all but the latest group)
// then a barrier.
#pragma once

template <typename T> __device__ __forceinline__ void hb_cp_async(T* smem_dst, const T* gmem_src) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16, "cp.async: 4, 8 or 16 bytes");
    const unsigned int dst = static_cast<unsigned int>(__cvta_generic_to_shared(smem_dst));
    if constexpr (sizeof(T) == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem_src));
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(gmem_src),
                     "n"(sizeof(T)));
}

__device__ __forceinline__ void hb_cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

__device__ __forceinline__ void hb_cp_async_wait_all() {
    asm volatile("cp.async.wait_all;\n" ::: "memory");
}

// Wait until at most one committed group (the latest) is still in flight.
__device__ __forceinline__ void hb_cp_async_wait_prior() {
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");
}

