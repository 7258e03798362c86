"""A vectorizable copy of NEURON's ``hoc_Exp`` and the C library's ``exp`` (glibc >= 2.28,
its FMA build).

NEURON's ``hoc_Exp`` (0 below -700, ``exp(700)`` above 700, else the C library's ``exp``)
is the ``exp`` of every mechanism; bit-exact agreement with NEURON needs the same bits. A
call to ``exp`` cannot be vectorized, and in the hh state update the calls are about a
third of a step. This module evaluates glibc's algorithm (sysdeps/ieee754/dbl-64/e_exp.c
with its 128-entry table, as compiled for CPUs with FMA: the fused operations are the ones
that build's machine code performs) with Numba operations that LLVM can vectorize.
:func:`hoc_exp` covers every argument without a branch or a call: glibc's special cases
(``|x| < 2**-54``, ``512 <= |x| <= 700``) are computed beside the common one and chosen by
selects, so that a loop of rate functions vectorizes whole.

The copy equals the C library only where the C library is that build. :func:`matches_libm`
compares the two on a fixed sample; the engine uses the copy only when it matches
(``HINESBATCH_VECTOR_EXP=0`` turns it off).
"""
from __future__ import annotations

import math
import os

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["exp_fast", "exp_in_range", "hoc_exp", "matches_libm", "vector_exp_enabled"]


@intrinsic
def _fma(typingctx, x, y, z):
    """x*y + z with one rounding (LLVM's ``llvm.fma.f64``)."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        dbl = ir.DoubleType()
        fn = builder.module.declare_intrinsic("llvm.fma", [dbl],
                                              ir.FunctionType(dbl, [dbl, dbl, dbl]))
        return builder.call(fn, args)

    return sig, codegen


@intrinsic
def _bits(typingctx, x):
    """The bits of a float64 as uint64."""
    sig = types.uint64(types.float64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return sig, codegen


@intrinsic
def _double(typingctx, x):
    """The float64 with the bits of a uint64."""
    sig = types.float64(types.uint64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return sig, codegen


# glibc's __exp_data (EXP_TABLE_BITS = 7): 2^(i/128) as (tail, bits - (i << 45)) pairs.
_TAB = np.array([
    0x0000000000000000, 0x3ff0000000000000, 0x3c9b3b4f1a88bf6e, 0x3feff63da9fb3335,
    0xbc7160139cd8dc5d, 0x3fefec9a3e778061, 0xbc905e7a108766d1, 0x3fefe315e86e7f85,
    0x3c8cd2523567f613, 0x3fefd9b0d3158574, 0xbc8bce8023f98efa, 0x3fefd06b29ddf6de,
    0x3c60f74e61e6c861, 0x3fefc74518759bc8, 0x3c90a3e45b33d399, 0x3fefbe3ecac6f383,
    0x3c979aa65d837b6d, 0x3fefb5586cf9890f, 0x3c8eb51a92fdeffc, 0x3fefac922b7247f7,
    0x3c3ebe3d702f9cd1, 0x3fefa3ec32d3d1a2, 0xbc6a033489906e0b, 0x3fef9b66affed31b,
    0xbc9556522a2fbd0e, 0x3fef9301d0125b51, 0xbc5080ef8c4eea55, 0x3fef8abdc06c31cc,
    0xbc91c923b9d5f416, 0x3fef829aaea92de0, 0x3c80d3e3e95c55af, 0x3fef7a98c8a58e51,
    0xbc801b15eaa59348, 0x3fef72b83c7d517b, 0xbc8f1ff055de323d, 0x3fef6af9388c8dea,
    0x3c8b898c3f1353bf, 0x3fef635beb6fcb75, 0xbc96d99c7611eb26, 0x3fef5be084045cd4,
    0x3c9aecf73e3a2f60, 0x3fef54873168b9aa, 0xbc8fe782cb86389d, 0x3fef4d5022fcd91d,
    0x3c8a6f4144a6c38d, 0x3fef463b88628cd6, 0x3c807a05b0e4047d, 0x3fef3f49917ddc96,
    0x3c968efde3a8a894, 0x3fef387a6e756238, 0x3c875e18f274487d, 0x3fef31ce4fb2a63f,
    0x3c80472b981fe7f2, 0x3fef2b4565e27cdd, 0xbc96b87b3f71085e, 0x3fef24dfe1f56381,
    0x3c82f7e16d09ab31, 0x3fef1e9df51fdee1, 0xbc3d219b1a6fbffa, 0x3fef187fd0dad990,
    0x3c8b3782720c0ab4, 0x3fef1285a6e4030b, 0x3c6e149289cecb8f, 0x3fef0cafa93e2f56,
    0x3c834d754db0abb6, 0x3fef06fe0a31b715, 0x3c864201e2ac744c, 0x3fef0170fc4cd831,
    0x3c8fdd395dd3f84a, 0x3feefc08b26416ff, 0xbc86a3803b8e5b04, 0x3feef6c55f929ff1,
    0xbc924aedcc4b5068, 0x3feef1a7373aa9cb, 0xbc9907f81b512d8e, 0x3feeecae6d05d866,
    0xbc71d1e83e9436d2, 0x3feee7db34e59ff7, 0xbc991919b3ce1b15, 0x3feee32dc313a8e5,
    0x3c859f48a72a4c6d, 0x3feedea64c123422, 0xbc9312607a28698a, 0x3feeda4504ac801c,
    0xbc58a78f4817895b, 0x3feed60a21f72e2a, 0xbc7c2c9b67499a1b, 0x3feed1f5d950a897,
    0x3c4363ed60c2ac11, 0x3feece086061892d, 0x3c9666093b0664ef, 0x3feeca41ed1d0057,
    0x3c6ecce1daa10379, 0x3feec6a2b5c13cd0, 0x3c93ff8e3f0f1230, 0x3feec32af0d7d3de,
    0x3c7690cebb7aafb0, 0x3feebfdad5362a27, 0x3c931dbdeb54e077, 0x3feebcb299fddd0d,
    0xbc8f94340071a38e, 0x3feeb9b2769d2ca7, 0xbc87deccdc93a349, 0x3feeb6daa2cf6642,
    0xbc78dec6bd0f385f, 0x3feeb42b569d4f82, 0xbc861246ec7b5cf6, 0x3feeb1a4ca5d920f,
    0x3c93350518fdd78e, 0x3feeaf4736b527da, 0x3c7b98b72f8a9b05, 0x3feead12d497c7fd,
    0x3c9063e1e21c5409, 0x3feeab07dd485429, 0x3c34c7855019c6ea, 0x3feea9268a5946b7,
    0x3c9432e62b64c035, 0x3feea76f15ad2148, 0xbc8ce44a6199769f, 0x3feea5e1b976dc09,
    0xbc8c33c53bef4da8, 0x3feea47eb03a5585, 0xbc845378892be9ae, 0x3feea34634ccc320,
    0xbc93cedd78565858, 0x3feea23882552225, 0x3c5710aa807e1964, 0x3feea155d44ca973,
    0xbc93b3efbf5e2228, 0x3feea09e667f3bcd, 0xbc6a12ad8734b982, 0x3feea012750bdabf,
    0xbc6367efb86da9ee, 0x3fee9fb23c651a2f, 0xbc80dc3d54e08851, 0x3fee9f7df9519484,
    0xbc781f647e5a3ecf, 0x3fee9f75e8ec5f74, 0xbc86ee4ac08b7db0, 0x3fee9f9a48a58174,
    0xbc8619321e55e68a, 0x3fee9feb564267c9, 0x3c909ccb5e09d4d3, 0x3feea0694fde5d3f,
    0xbc7b32dcb94da51d, 0x3feea11473eb0187, 0x3c94ecfd5467c06b, 0x3feea1ed0130c132,
    0x3c65ebe1abd66c55, 0x3feea2f336cf4e62, 0xbc88a1c52fb3cf42, 0x3feea427543e1a12,
    0xbc9369b6f13b3734, 0x3feea589994cce13, 0xbc805e843a19ff1e, 0x3feea71a4623c7ad,
    0xbc94d450d872576e, 0x3feea8d99b4492ed, 0x3c90ad675b0e8a00, 0x3feeaac7d98a6699,
    0x3c8db72fc1f0eab4, 0x3feeace5422aa0db, 0xbc65b6609cc5e7ff, 0x3feeaf3216b5448c,
    0x3c7bf68359f35f44, 0x3feeb1ae99157736, 0xbc93091fa71e3d83, 0x3feeb45b0b91ffc6,
    0xbc5da9b88b6c1e29, 0x3feeb737b0cdc5e5, 0xbc6c23f97c90b959, 0x3feeba44cbc8520f,
    0xbc92434322f4f9aa, 0x3feebd829fde4e50, 0xbc85ca6cd7668e4b, 0x3feec0f170ca07ba,
    0x3c71affc2b91ce27, 0x3feec49182a3f090, 0x3c6dd235e10a73bb, 0x3feec86319e32323,
    0xbc87c50422622263, 0x3feecc667b5de565, 0x3c8b1c86e3e231d5, 0x3feed09bec4a2d33,
    0xbc91bbd1d3bcbb15, 0x3feed503b23e255d, 0x3c90cc319cee31d2, 0x3feed99e1330b358,
    0x3c8469846e735ab3, 0x3feede6b5579fdbf, 0xbc82dfcd978e9db4, 0x3feee36bbfd3f37a,
    0x3c8c1a7792cb3387, 0x3feee89f995ad3ad, 0xbc907b8f4ad1d9fa, 0x3feeee07298db666,
    0xbc55c3d956dcaeba, 0x3feef3a2b84f15fb, 0xbc90a40e3da6f640, 0x3feef9728de5593a,
    0xbc68d6f438ad9334, 0x3feeff76f2fb5e47, 0xbc91eee26b588a35, 0x3fef05b030a1064a,
    0x3c74ffd70a5fddcd, 0x3fef0c1e904bc1d2, 0xbc91bdfbfa9298ac, 0x3fef12c25bd71e09,
    0x3c736eae30af0cb3, 0x3fef199bdd85529c, 0x3c8ee3325c9ffd94, 0x3fef20ab5fffd07a,
    0x3c84e08fd10959ac, 0x3fef27f12e57d14b, 0x3c63cdaf384e1a67, 0x3fef2f6d9406e7b5,
    0x3c676b2c6c921968, 0x3fef3720dcef9069, 0xbc808a1883ccb5d2, 0x3fef3f0b555dc3fa,
    0xbc8fad5d3ffffa6f, 0x3fef472d4a07897c, 0xbc900dae3875a949, 0x3fef4f87080d89f2,
    0x3c74a385a63d07a7, 0x3fef5818dcfba487, 0xbc82919e2040220f, 0x3fef60e316c98398,
    0x3c8e5a50d5c192ac, 0x3fef69e603db3285, 0x3c843a59ac016b4b, 0x3fef7321f301b460,
    0xbc82d52107b43e1f, 0x3fef7c97337b9b5f, 0xbc892ab93b470dc9, 0x3fef864614f5a129,
    0x3c74b604603a88d3, 0x3fef902ee78b3ff6, 0x3c83c5ec519d7271, 0x3fef9a51fbc74c83,
    0xbc8ff7128fd391f0, 0x3fefa4afa2a490da, 0xbc8dae98e223747d, 0x3fefaf482d8e67f1,
    0x3c8ec3bc41aa2008, 0x3fefba1bee615a27, 0x3c842b94c3a9eb32, 0x3fefc52b376bba97,
    0x3c8a64a931d185ee, 0x3fefd0765b6e4540, 0xbc8e37bae43be3ed, 0x3fefdbfdad9cbe14,
    0x3c77893b4d91cd9d, 0x3fefe7c1819e90d8, 0x3c5305c14160cc89, 0x3feff3c22b8f71f1,
], dtype=np.uint64)
_INVLN2N = float.fromhex("0x1.71547652b82fep+7")
_NEGLN2HIN = float.fromhex("-0x1.62e42fefa0000p-8")
_NEGLN2LON = float.fromhex("-0x1.cf79abc9e3b3ap-47")
_C2 = float.fromhex("0x1.ffffffffffdbdp-2")
_C3 = float.fromhex("0x1.555555555543cp-3")
_C4 = float.fromhex("0x1.55555cf172b91p-5")
_C5 = float.fromhex("0x1.1111167a4d017p-7")
_SHIFT = float.fromhex("0x1.8p52")


@njit(cache=True, inline="always")
def _reduced(x):
    """glibc's reduction and polynomial: (bits of the scale 2**(k/128), tmp), with
    exp(x) = scale + scale*tmp for 2**-54 <= |x| < 512."""
    kd = _fma(x, _INVLN2N, _SHIFT)
    ki = _bits(kd)
    kd = kd - _SHIFT
    r = _fma(kd, _NEGLN2HIN, x)
    r = _fma(kd, _NEGLN2LON, r)
    idx = np.uint64(2)*(ki & np.uint64(127))
    top = ki << np.uint64(45)
    tail = _double(_TAB[idx])
    sbits = _TAB[idx + np.uint64(1)] + top
    r2 = r*r
    p23 = _fma(r, _C3, _C2)
    p45 = _fma(r, _C5, _C4)
    tmp = _fma(p23, r2, tail + r)
    tmp = _fma(r2*r2, p45, tmp)
    return sbits, tmp


@njit(cache=True, inline="always")
def exp_in_range(x):
    """True where :func:`exp_fast` gives the C library's bits: 2**-54 <= |x| < 512."""
    top = (_bits(x) >> np.uint64(52)) & np.uint64(0x7FF)
    return top - np.uint64(969) <= np.uint64(62)


@njit(cache=True, inline="always")
def exp_fast(x):
    """glibc's exp for ``exp_in_range(x)`` (no check: other x give garbage)."""
    sbits, tmp = _reduced(x)
    scale = _double(sbits)
    return _fma(scale, tmp, scale)


_EXP700 = math.exp(700.0)           # hoc_Exp's value above 700: the C library's bits
_TWO_1009 = 2.0**1009
_TWO_M1022 = 2.0**-1022
_HI_SHIFT = np.uint64(1009 << 52)                  # glibc's specialcase, k > 0
_LO_SHIFT = np.uint64((1 << 64) - (1022 << 52))    # and k < 0 (added: subtracted mod 2**64)


@njit(cache=True, inline="always")
def hoc_exp(x):
    """NEURON's ``hoc_Exp(x)`` with glibc's bits for every x, NaN to NaN.

    The common path is glibc's for ``2**-54 <= |x| < 512``; for ``512 <= |x| <= 700`` the
    table's scale is moved into range by 2**-1009 (x > 0) or 2**1022 (x < 0) and the result
    multiplied back, as glibc's ``specialcase`` does (its k < 0 sum is not fused there);
    ``|x| < 2**-54`` gives ``1 + x``. Every value is computed on finite, normal operands
    (a discarded subnormal would cost a microcode assist) and the result picked by
    comparisons LLVM turns into selects (the order matters: with ``low`` computed before
    the scale, LLVM kept a branch, the loop stayed scalar and ran three times slower).
    """
    sbits, tmp = _reduced(x)
    abstop = (_bits(x) >> np.uint64(52)) & np.uint64(0x7FF)
    big = abstop >= np.uint64(1032)                 # |x| >= 512
    shift = _HI_SHIFT if x > 0.0 else _LO_SHIFT
    shift = shift if big else np.uint64(0)
    scale = _double(sbits - shift)
    low = big and x < 0.0
    y = (scale + scale*tmp) if low else _fma(scale, tmp, scale)
    factor = (_TWO_1009 if x > 0.0 else _TWO_M1022) if big else 1.0
    y = factor * y
    y = (1.0 + x) if abstop < np.uint64(969) else y    # |x| < 2**-54, and NaN to NaN
    y = 0.0 if x < -700.0 else y
    y = _EXP700 if x > 700.0 else y
    return y


def hoc_exp_reference(x: float) -> float:
    """``hoc_Exp`` by the C library (Python's ``math.exp``), for checks."""
    if x < -700.0:
        return 0.0
    if x > 700.0:
        return _EXP700
    return math.exp(x)


@njit(cache=True)
def hoc_exp_all(x, out):
    """:func:`hoc_exp` of every element of ``x`` into ``out`` (a vectorized loop)."""
    for i in range(x.size):
        out[i] = hoc_exp(x[i])


def matches_libm(n: int = 200_000) -> bool:
    """Whether :func:`hoc_exp` gives this C library's ``hoc_Exp`` bits on a fixed sample.

    The sample (seeded) covers every magnitude from 2**-80 to 800 on a log scale, both
    signs, the range of the hh rates and gates, glibc's special-case ranges up to and past
    hoc_Exp's limits of +-700, the table's interval edges, and the edge values themselves.
    """
    rng = np.random.default_rng(12345)
    mag = np.exp(rng.uniform(math.log(2.0**-80), math.log(800.0), n))
    edges = [0.0, -0.0, 2.0**-54, -2.0**-54, math.nextafter(2.0**-54, 0.0), 512.0, -512.0,
             math.nextafter(512.0, 0.0), 700.0, -700.0, math.nextafter(700.0, 0.0),
             math.nextafter(-700.0, 0.0), 5e-324, -5e-324, math.inf, -math.inf, math.nan]
    x = np.concatenate([mag, -mag, rng.uniform(-20.0, 20.0, n), rng.uniform(-1.0, 1.0, n),
                        rng.uniform(500.0, 720.0, n // 4), rng.uniform(-720.0, -500.0, n // 4),
                        np.arange(-512 * 128 + 1, 512 * 128) * (math.log(2.0) / 128.0), edges])
    out = np.empty_like(x)
    hoc_exp_all(x, out)
    ref = np.array([hoc_exp_reference(v) for v in x.tolist()])
    same = (out.view(np.uint64) == ref.view(np.uint64)) | (np.isnan(out) & np.isnan(ref))
    return bool(same.all())


_ENABLED = None


def _libm_key() -> str:
    """What decides the answer of :func:`matches_libm` here: the loaded libm file (path,
    size, mtime), the CPU's FMA/AVX flags (glibc picks its build by them) and this
    module's source (its copy and its check)."""
    import hashlib
    import platform
    from pathlib import Path

    parts = [platform.machine(), platform.libc_ver()[1],
             hashlib.sha256(Path(__file__).read_bytes()).hexdigest()]
    try:
        with open("/proc/self/maps") as maps:
            libm = sorted({line.split()[-1] for line in maps if "/libm." in line})
        for path in libm:
            st = os.stat(path)
            parts += [path, str(st.st_size), str(st.st_mtime_ns)]
        with open("/proc/cpuinfo") as info:
            flags = next((line for line in info if line.startswith("flags")), "").split()
        parts += sorted(f for f in flags if f in ("fma", "fma4", "avx", "avx2", "avx512f"))
    except OSError:
        parts.append("unknown")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:20]


def _cached_check(folder) -> bool:
    """:func:`matches_libm`, remembered per :func:`_libm_key` in ``folder`` (a
    :class:`pathlib.Path`; the check takes about 0.2 s, start-up should not pay it every
    time)."""
    path = folder / f"libm_exp_{_libm_key()}.txt"
    try:
        return {"1": True, "0": False}[path.read_text().strip()]
    except (OSError, KeyError):
        pass
    result = matches_libm()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text("1\n" if result else "0\n")
        os.replace(tmp, path)
    except OSError:
        pass
    return result


def vector_exp_enabled(folder=None) -> bool:
    """Use the vectorized copy: not turned off by ``HINESBATCH_VECTOR_EXP=0`` and
    :func:`matches_libm` (checked once per process, or once per machine and C library
    with the answer kept in ``folder``, a :class:`pathlib.Path`)."""
    global _ENABLED
    if os.environ.get("HINESBATCH_VECTOR_EXP", "1").strip() in ("0", "false", "no", "off"):
        return False
    if _ENABLED is None:
        _ENABLED = matches_libm() if folder is None else _cached_check(folder)
    return _ENABLED
