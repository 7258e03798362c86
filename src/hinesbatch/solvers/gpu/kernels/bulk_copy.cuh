// Bulk copies (sm_90, the tensor memory accelerator) for hinesbatch's Hines kernels: one
// thread moves a contiguous run of 16-byte multiples between global and shared memory (both
// addresses 16-byte aligned), with no load or store instruction per element. Loads complete
// on an mbarrier (hb_mbar_expect sets the bytes the phase waits for; every thread then waits
// with hb_mbar_wait); stores form bulk groups of the issuing thread (hb_bulk_store_wait_read:
// the shared source may be reused). Shared memory written by ordinary stores must be fenced
// (hb_fence_proxy_async) by its writers, and the fence ordered by a barrier, before a bulk
// copy reads or overwrites it.
#pragma once

__device__ __forceinline__ unsigned hb_smem_address(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void hb_mbar_init(unsigned long long* bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(hb_smem_address(bar)),
                 "r"(count) : "memory");
}
// After hb_mbar_init, before the barrier that publishes it: the copies see it initialised.
__device__ __forceinline__ void hb_fence_mbar_init() {
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void hb_fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Arrive on the barrier (count 1) and expect `bytes` more from the phase's copies.
__device__ __forceinline__ void hb_mbar_expect(unsigned long long* bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
                 ::"r"(hb_smem_address(bar)), "r"(bytes) : "memory");
}
// Wait until the barrier's phase of parity `parity` (0 for its first phase) has completed.
__device__ __forceinline__ void hb_mbar_wait(unsigned long long* bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{\n .reg .pred p;\n"
                     " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     " selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(hb_smem_address(bar)), "r"(parity) : "memory");
    } while (!done);
}
__device__ __forceinline__ void hb_bulk_load(void* smem_dst, const void* gmem_src, unsigned bytes,
                                             unsigned long long* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1], %2, [%3];\n"
                 ::"r"(hb_smem_address(smem_dst)), "l"(gmem_src), "r"(bytes),
                 "r"(hb_smem_address(bar)) : "memory");
}
__device__ __forceinline__ void hb_bulk_store(void* gmem_dst, const void* smem_src,
                                              unsigned bytes) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n"
                 ::"l"(gmem_dst), "r"(hb_smem_address(smem_src)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void hb_bulk_commit() {
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// This thread's bulk stores have read their shared-memory sources.
__device__ __forceinline__ void hb_bulk_store_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
// This thread's bulk stores are complete.
__device__ __forceinline__ void hb_bulk_store_wait() {
    asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}
__device__ __forceinline__ void hb_bulk_prefetch_l2(const void* gmem, unsigned bytes) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(gmem), "r"(bytes) : "memory");
}
