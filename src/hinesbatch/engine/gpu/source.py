"""The CUDA C++ source of the GPU engine's epoch kernel, generated per model.

One kernel, ``hb_epoch``, runs ``n_steps`` whole fixed steps of a set of cells in one launch:
one thread block per cell (or, for small cells, one block per ``HB_CELLS`` cells, a group of
``HB_CELL_THREADS`` lanes of a warp each, whose barriers are the group's), its membrane potential,
diagonal and right-hand side in shared memory for the whole launch, each thread owning the
nodes ``tid, tid + T, ...`` (and the mechanism instances on them). Slot ``s`` (block ``s``,
or group ``s % HB_CELLS`` of block ``s / HB_CELLS``) steps cell ``cell_order[s]``: the cells
with the most chain levels and nodes start first, so that the launch does not end waiting on
a large cell that started last. A step, in NEURON's order (docs/simulator.md):

1. threshold detection at ``t`` (spike times kept per source on the device);
2. the events that act at this step (``te <= t + dt/2``; collected by the host for the
   epoch, applied in its order by the cell's first thread);
3. assembly at ``t + dt/2``: every mechanism's current at ``v + 0.001`` and ``v`` (the
   finite-difference conductance), in NEURON's mechanism order, then ``cm/dt`` and the axial
   terms, gathered per node in the order NEURON's loop adds them;
4. the Hines solve by chains of nodes (runs without branch points), one thread per chain,
   a barrier per chain level: every parent takes its children's terms in NEURON's order,
   so each node sees the same operations as on the CPU. A cell with a long trunk (its
   longest root-to-leaf path, ``runner.TRUNK_MIN`` nodes or more), in a block of more than
   one warp (``runner.TRUNK_MIN_THREADS``), has the chains cover
   only the subtrees hanging from it, and one warp eliminates and substitutes along the
   trunk by scans (``hb_trunk_eliminate``, ``hb_trunk_substitute``), the same system
   solved in another order;
5. ``v += rhs``; states at ``t + dt`` (cnexp, NEURON's form); recordings.

The mechanism code comes from the same descriptions as the CPU's (:mod:`..mechanisms`),
printed by :mod:`hinesbatch.mechanisms.c_emitter`: each expression in the description's order
and parentheses. Compiled without FMA contraction (``--fmad=false``, the float64 default) the
arithmetic is the CPU's, except ``exp``/``log``/``pow``, which come from CUDA's library
(within an ulp or two of the C library's), the solve's pivots and the mechanisms' divisions:
the device multiplies by reciprocals (``hb_pivot``, ``hb_over``, ``hb_div``; within about an
ulp of the division). float32 divides with ``--prec-div=false`` and takes ``exp`` from
``__expf``. A chain's records keep the node they update in registers (``hb_eliminate``,
``hb_substitute``).

Per instance fields are loaded from device memory into locals at the start of each phase and
stored at its end. A parameter with one value in every instance becomes a literal. A field
that every runtime block writes before it reads it (hh's ``gna``, ``minf``, ...; see
:func:`field_roles`) is stored only when it can be observed: at a step that records a
mechanism's field of the cell, and at the last step of a launch.

The same text compiles as host C++ (``-DHB_HOST``, one thread per cell, the barriers
no-ops), which is how the engine's logic is tested without a GPU.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from ...mechanisms.c_emitter import _CEmitter, _CScope, emit_helpers, weight_vector_code
from ...mechanisms.codegen import _name, _parse_expr, ion_io
from ...mechanisms.ions import FARADAY, GAS_CONSTANT, kept_per_node

__all__ = ["META", "REAL_TYPES", "KernelArg", "field_roles", "kernel_args", "kernel_source"]

REAL_TYPES = {"float64": "double", "float32": "float"}

#: Per-structure entries of ``s_meta`` (the kernel reads them by position): where the
#: structure's arrays start in the device's arrays, and how many levels and trunk nodes.
META = ("node0", "n", "range0", "el_lev0", "n_el", "bs_lev0", "n_bs", "tr0", "n_tr")

_PRELUDE = r"""
#ifdef HB_HOST
#include <cmath>
#include <cstddef>
#include <vector>
using namespace std;
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
#define __launch_bounds__(...)
static int hb_block_index, hb_group_index;
static std::vector<double> hb_host_shared;
#define HB_TID 0
#define HB_NT 1
#define HB_BID hb_block_index
#define HB_GROUP hb_group_index
#define HB_BAR()
#define HB_BAR_OR(x) (x)
#elif HB_CELLS > 1
/* HB_CELLS groups of HB_CELL_THREADS lanes (a divisor of 32), a cell each: a group's
   barrier is its lanes' (the warp's other groups may be elsewhere in the step). */
#define HB_GROUP ((int)threadIdx.x / HB_CELL_THREADS)
#define HB_TID ((int)threadIdx.x % HB_CELL_THREADS)
#define HB_NT HB_CELL_THREADS
#define HB_BID ((int)blockIdx.x)
#define HB_GROUP_MASK (((1u << HB_CELL_THREADS) - 1u) << (threadIdx.x & 31u & ~(HB_CELL_THREADS - 1u)))
#define HB_BAR() __syncwarp(HB_GROUP_MASK)
#define HB_BAR_OR(x) __any_sync(HB_GROUP_MASK, (x))
#else
#define HB_GROUP 0
#define HB_TID ((int)threadIdx.x)
#define HB_NT ((int)blockDim.x)
#define HB_BID ((int)blockIdx.x)
#define HB_BAR() __syncthreads()
#define HB_BAR_OR(x) __syncthreads_or(x)
#endif
typedef REAL real;
#ifdef HB_HOST
struct int2 { int x, y; };
struct int4 { int x, y, z, w; };
struct double2 { double x, y; };
struct float2 { float x, y; };
#endif
#define real2 REAL2
#define R(x) ((real)(x))
/* The solve's pivots. The host build divides as the CPU does. On the device the elimination
   multiplies by the pivot's reciprocal and keeps it in the pivot's place, so that back
   substitution multiplies too: a division fewer per record on the critical path. The
   reciprocal is the solvers' hb_rcp (fast_math.cuh): the hardware's approximation refined
   by Newton steps, within about an ulp. */
#ifdef HB_HOST
static inline real hb_pivot(real a, real& d) { return a/d; }
static inline real hb_over(real x, real d) { return x/d; }
static inline real hb_inv(real x) { return R(1.0)/x; }
/* A 2 x 2 product scaled to a sum of magnitudes 1 (only its ratios count). */
static inline void hb_scale(real& m00, real& m01, real& m10, real& m11) {
    const real k = hb_inv(fabs(m00) + fabs(m01) + fabs(m10) + fabs(m11));
    m00 *= k; m01 *= k; m10 *= k; m11 *= k;
}
#define hb_div(a, b) ((a) / (b))
#define hb_exp exp
#else
@FAST_MATH@
__device__ __forceinline__ real hb_pivot(real a, real& d) {
    const real r = hb_rcp(d);
    d = r;
    return a*r;
}
__device__ __forceinline__ real hb_over(real x, real d_reciprocal) { return x*d_reciprocal; }
__device__ __forceinline__ real hb_inv(real x) { return hb_rcp(x); }
/* A 2 x 2 product scaled by the power of two that brings its largest magnitude into
   [1, 2): exact, so that the scaling adds no rounding (only the product's ratios count). */
__device__ __forceinline__ double hb_pow2_scale(double x) {
    const long long e = __double_as_longlong(x) & 0x7ff0000000000000LL;
    return __longlong_as_double(0x7fe0000000000000LL - e);
}
__device__ __forceinline__ float hb_pow2_scale(float x) {
    const int e = __float_as_int(x) & 0x7f800000;
    return __int_as_float(0x7f000000 - e);
}
__device__ __forceinline__ void hb_scale(real& m00, real& m01, real& m10, real& m11) {
    const real k = hb_pow2_scale(fmax(fmax(fabs(m00), fabs(m01)), fmax(fabs(m10), fabs(m11))));
    m00 *= k; m01 *= k; m10 *= k; m11 *= k;
}
/* The mechanisms' divisions (c_emitter prints a / b as hb_div(a, b)). float32 divides
   (--prec-div=false makes that fast); float64 multiplies by hb_rcp's reciprocal, within
   about an ulp of the quotient and without IEEE division's slow path, which keeps the
   compiler from overlapping divisions. A zero, infinite or denormal divisor makes hb_rcp's
   Newton steps NaN; the hardware's approximation alone then gives what division gives (an
   infinity, a zero, NaN for 0/0), the denormal taken as zero. */
__device__ __forceinline__ float hb_div(float a, float b) { return a/b; }
__device__ __forceinline__ double hb_div(double a, double b) {
    const double q = a*hb_rcp(b);
    if (q == q) return q;
    double r;
    asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(b));
    return a*r;
}
__device__ __forceinline__ double hb_exp(double x) { return exp(x); }
__device__ __forceinline__ float hb_exp(float x) { return __expf(x); }   /* float32: fast */
#endif
/* The trunk (the longest path from the root, TN[0] its leaf ... TN[L-1] the root; TA[i]
   the a and b of TN[i]) by one warp, after the subtrees hanging from it have given their
   terms. Lane l takes the run of E = ceil(L/32) nodes from l*E. Elimination from the leaf
   up makes each pivot d'_i = d_i - c_i/d'_(i-1) (c_i = a*b of the node below), a ratio of
   the first column of the product of [[d_i, -c_i], [1, 0]]: each lane multiplies its run's
   matrices (scaled by hb_scale every fourth node and at the end: only ratios count),
   applies the products of the lanes before it to (1, 0) to find the pivot it starts from
   (hb_products_before), then walks its run, keeping each pivot's reciprocal in Dg (the
   trunk's Dg is read by the scan only). The right-hand sides
   b'_i = b_i - (a/d')_(i-1) b'_(i-1) and back substitution, x_i = (b'_i - b x_(i+1))/d'_i
   from the root down, are affine maps joined the same way (hb_maps_before). The host build
   runs the lanes one after another, phase by phase. */
#ifdef HB_HOST
#define HB_LANES for (int lane = 0; lane < 32; ++lane)
#define HB_SYNCWARP()
#else
#define HB_LANES for (int lane = tid; lane < 32; lane += 32)
#define HB_SYNCWARP() __syncwarp()
#endif
/* What the lanes before `lane` give the run of `lane`. hb_products_before: the products
   P[4m..4m+3] (2 x 2, row-major) of the lanes before, applied in lane order to (1, 0),
   as (px, py); hb_maps_before: the affine maps x -> F[2m]*x + F[2m+1] of the lanes before,
   applied in lane order to 0. The host build walks the lanes one after another; the
   device scans the warp by shuffles, five steps instead of up to 31 dependent ones (the
   lanes' own entries read back from P and F, every lane of the warp taking part), the
   products scaled after each step (hb_scale). */
#ifdef HB_HOST
static inline void hb_products_before(const real* P, int lane, real& px, real& py) {
    px = R(1.0);
    py = R(0.0);
    for (int m = 0; m < lane; ++m) {
        const real nx = P[4*m]*px + P[4*m + 1]*py, ny = P[4*m + 2]*px + P[4*m + 3]*py;
        px = nx;
        py = ny;
        if ((m & 7) == 7) {
            const real k = hb_inv(fabs(px) + fabs(py));
            px *= k;
            py *= k;
        }
    }
}
static inline real hb_maps_before(const real* F, int lane) {
    real x = R(0.0);
    for (int m = 0; m < lane; ++m) x = F[2*m]*x + F[2*m + 1];
    return x;
}
#else
#define HB_UP(x, k) __shfl_up_sync(0xffffffffu, (x), (k))
__device__ __forceinline__ void hb_products_before(const real* P, int lane, real& px,
                                                   real& py) {
    real m00 = P[4*lane], m01 = P[4*lane + 1], m10 = P[4*lane + 2], m11 = P[4*lane + 3];
    for (int k = 1; k < 32; k <<= 1) {       /* own product times the ones before it */
        const real g00 = HB_UP(m00, k), g01 = HB_UP(m01, k), g10 = HB_UP(m10, k),
                   g11 = HB_UP(m11, k);
        if (lane >= k) {
            const real n00 = m00*g00 + m01*g10, n01 = m00*g01 + m01*g11,
                       n10 = m10*g00 + m11*g10, n11 = m10*g01 + m11*g11;
            m00 = n00; m01 = n01; m10 = n10; m11 = n11;
            hb_scale(m00, m01, m10, m11);
        }
    }
    px = HB_UP(m00, 1);        /* the first column of the lanes before: (1, 0) applied */
    py = HB_UP(m10, 1);
    if (lane == 0) {
        px = R(1.0);
        py = R(0.0);
    }
}
__device__ __forceinline__ real hb_maps_before(const real* F, int lane) {
    real fa = F[2*lane], fb = F[2*lane + 1];
    for (int k = 1; k < 32; k <<= 1) {       /* own map after the ones before it */
        const real ga = HB_UP(fa, k), gb = HB_UP(fb, k);
        if (lane >= k) {
            fb = fa*gb + fb;
            fa = fa*ga;
        }
    }
    const real x = HB_UP(fb, 1);
    return lane == 0 ? R(0.0) : x;
}
#undef HB_UP
#endif
__device__ __forceinline__ void hb_trunk_eliminate(real* Dg, real* B, const int* TN,
                                                   const real2* TA, int L, real* S, int tid)
{
    const int E = (L + 31)/32;
    real* P = S;            /* 32 products, 4 reals each */
    real* F = S + 128;      /* 32 affine maps, 2 reals each */
    HB_LANES {
        real m00 = R(1.0), m01 = R(0.0), m10 = R(0.0), m11 = R(1.0);
        for (int i = lane*E; i < L && i < (lane + 1)*E; ++i) {
            const real d = Dg[TN[i]], c = i > 0 ? TA[i - 1].x*TA[i - 1].y : R(0.0);
            const real n00 = d*m00 - c*m10, n01 = d*m01 - c*m11;
            m10 = m00;
            m11 = m01;
            m00 = n00;
            m01 = n01;
            if ((i & 3) == 3 || i + 1 == L || i + 1 == (lane + 1)*E)      /* every 4th */
                hb_scale(m00, m01, m10, m11);
        }
        P[4*lane] = m00; P[4*lane + 1] = m01; P[4*lane + 2] = m10; P[4*lane + 3] = m11;
    }
    HB_SYNCWARP();
    HB_LANES {
        real px, py;                          /* the pivot before the run: px/py */
        hb_products_before(P, lane, px, py);
        real r = py*hb_inv(px), fa = R(1.0), fb = R(0.0);   /* 1/pivot before the run */
        for (int i = lane*E; i < L && i < (lane + 1)*E; ++i) {
            real d = Dg[TN[i]], al = R(0.0);
            if (i > 0) {
                d -= TA[i - 1].x*TA[i - 1].y*r;
                al = -TA[i - 1].x*r;
            }
            r = hb_inv(d);
            Dg[TN[i]] = r;
            fa = al*fa;
            fb = al*fb + B[TN[i]];
        }
        F[2*lane] = fa; F[2*lane + 1] = fb;
    }
    HB_SYNCWARP();
    HB_LANES {
        real x = hb_maps_before(F, lane);
        for (int i = lane*E; i < L && i < (lane + 1)*E; ++i) {
            const real al = i > 0 ? -TA[i - 1].x*Dg[TN[i - 1]] : R(0.0);
            x = al*x + B[TN[i]];
            B[TN[i]] = x;
        }
    }
}
__device__ __forceinline__ void hb_trunk_substitute(real* Dg, real* B, const int* TN,
                                                    const real2* TA, int L, real* S, int tid)
{
    const int E = (L + 31)/32;
    real* F = S + 128;
    HB_LANES {              /* position k from the root: node TN[L-1-k]; Dg: 1/pivot */
        real fa = R(1.0), fb = R(0.0);
        for (int k = lane*E; k < L && k < (lane + 1)*E; ++k) {
            const int i = L - 1 - k;
            const real r = Dg[TN[i]];
            const real ga = k > 0 ? -TA[i].y*r : R(0.0);
            fa = ga*fa;
            fb = ga*fb + B[TN[i]]*r;
        }
        F[2*lane] = fa; F[2*lane + 1] = fb;
    }
    HB_SYNCWARP();
    HB_LANES {
        real x = hb_maps_before(F, lane);
        for (int k = lane*E; k < L && k < (lane + 1)*E; ++k) {
            const int i = L - 1 - k;
            const real r = Dg[TN[i]];
            x = (k > 0 ? -TA[i].y*r : R(0.0))*x + B[TN[i]]*r;
            B[TN[i]] = x;
        }
    }
}
/* One elimination record (parent p = pc.x, child c = pc.y, the child's a and b). A chain's
   records go up a path, so the node they last updated is the next one's child, or its parent
   again (another child of the same node): that node's d and rhs stay in registers (cur,
   dcur, bcur), and the chain's dependent operations do not wait on shared memory. The
   arithmetic is Dg[p] -= (a/Dg[c])*b, B[p] -= (a/Dg[c])*B[c], operation for operation. */
__device__ __forceinline__ void hb_eliminate(const int2 pc, const real2 ab, int& cur,
                                             real& dcur, real& bcur, real* Dg, real* B) {
    const bool child_held = pc.y == cur, parent_held = pc.x == cur;
    if (cur >= 0 && !child_held && !parent_held) {
        Dg[cur] = dcur;
        B[cur] = bcur;
    }
    real dc = child_held ? dcur : Dg[pc.y];
    const real bc = child_held ? bcur : B[pc.y];
    const real dp = parent_held ? dcur : Dg[pc.x], bp = parent_held ? bcur : B[pc.x];
    const real pp = hb_pivot(ab.x, dc);
    Dg[pc.y] = dc;                 /* the device keeps the pivot's reciprocal */
    if (child_held) B[pc.y] = bc;
    dcur = dp - pp*ab.y;
    bcur = bp - pp*bc;
    cur = pc.x;
}
/* One back-substitution record (node i = ip.x, its parent ip.y, b): down a chain, the
   parent is the node of the record before, whose value stays in a register. */
__device__ __forceinline__ void hb_substitute(const int2 ip, const real b, int& cur,
                                              real& xcur, const real* Dg, real* B) {
    const real x = ip.y < 0 ? B[ip.x]/Dg[ip.x]
        : hb_over(B[ip.x] - b*(ip.y == cur ? xcur : B[ip.y]), Dg[ip.x]);
    B[ip.x] = x;
    xcur = x;
    cur = ip.x;
}
/* NEURON's hoc_Exp: 0 below -700, exp(700) above 700, else exp. */
__device__ __forceinline__ real hoc_Exp(real x) {
    if (x < R(-700.0)) return R(0.0);
    if (x > R(700.0)) return hb_exp(R(700.0));
    return hb_exp(x);
}
"""


def _fast_math() -> str:
    """The solvers' arithmetic helpers (``hb_rcp``), shared with the Hines and tridiagonal
    kernels (``solvers/gpu/kernels/fast_math.cuh``), for the device build."""
    from ...solvers.gpu.kernel_build import source_text

    return source_text("fast_math.cuh").replace("#pragma once\n", "")


@dataclass(frozen=True)
class KernelArg:
    """One argument of ``hb_epoch``: its name and kind (``ptr``, ``i32``, ``i64``, ``f64``)."""

    name: str
    kind: str
    ctype: str


# ---- which fields are read, written, kept -----------------------------------------------
def _reads(node, shadow: set) -> set:
    out = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
            n = _name(sub.id)
            if n not in shadow:
                out.add(n)
    return out


class _Access:
    """Fields read before they are surely written (``early``), written (``written``) and
    surely written (``sure``) by a sequence of statements."""

    def __init__(self, mech, tables: bool):
        self.mech, self.tables = mech, tables
        self.procs = {p.name: p for p in mech.procedures}
        self.funcs = {f.name for f in mech.functions}
        self.early: set = set()
        self.written: set = set()

    def run(self, text: str, sure: set, shadow: frozenset = frozenset()) -> set:
        return self.statements(ast.parse(text.strip() or "pass").body, set(sure), shadow)

    def statements(self, body, sure: set, shadow) -> set:
        for st in body:
            if isinstance(st, ast.Assign):
                self.early |= _reads(st.value, shadow) - sure - self.funcs
                target = _name(st.targets[0].id)
                if target not in shadow:
                    sure.add(target)
                    self.written.add(target)
            elif isinstance(st, ast.If):
                self.early |= _reads(st.test, shadow) - sure - self.funcs
                a = self.statements(st.body, set(sure), shadow)
                b = self.statements(st.orelse, set(sure), shadow)
                sure = a & b
            elif isinstance(st, ast.While):      # its body may run no time
                self.early |= _reads(st.test, shadow) - sure - self.funcs
                self.statements(st.body, set(sure), shadow)
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
                p = self.procs[st.value.func.id]
                for arg in st.value.args:
                    self.early |= _reads(arg, shadow) - sure - self.funcs
                if p.table is not None and self.tables:
                    sure |= set(p.table.outputs)
                    self.written |= set(p.table.outputs)
                else:
                    sure = self.statements(ast.parse(p.body.strip() or "pass").body, sure,
                                           shadow | frozenset(p.args))
        return sure


def _cnexp_text(mech) -> str:
    """The cnexp updates as statements (for the access analysis only)."""
    return "\n".join(f"{eq.state} = {eq.state} + ({eq.b}) + ({eq.a})" for eq in mech.cnexp)


def runtime_blocks(mech) -> dict:
    """The code run during the time loop: breakpoint, states (state, cnexp, after_solve) and
    net_receive."""
    blocks = {}
    if mech.currents:
        blocks["current"] = [mech.breakpoint]
    if mech.state or mech.cnexp or mech.after_solve:
        blocks["state"] = [mech.state, _cnexp_text(mech), mech.after_solve]
    if mech.net_receive:
        blocks["net_receive"] = [mech.net_receive]
    return blocks


def block_access(mech, texts, tables: bool) -> _Access:
    acc = _Access(mech, tables)
    sure: set = set()
    for text in texts:
        sure = acc.run(text, sure)
    acc.sure = sure
    return acc


def field_roles(mech, data, tables: bool, kept: dict | None = None) -> tuple[dict, set]:
    """``(constants, transient)`` of a mechanism whose instance data is ``data`` (fields x
    instances); ``kept``: the ions kept per node (:func:`.ions.kept_per_node`), whose
    variables the mechanism loads from the nodes.

    ``constants``: field -> value, for the fields no runtime block writes that have one value
    in every instance and that are not loaded from a node (compiled in as literals). ``transient``: the fields that every runtime
    block that writes them writes surely and before any read, and that no block reads before
    writing: their value after a step depends on that step only, so storing them only where
    they are observed gives the same numbers.
    """
    fields = set(mech.field_names)
    access = {k: block_access(mech, v, tables) for k, v in runtime_blocks(mech).items()}
    written = set().union(*(a.written for a in access.values())) & fields
    early = set().union(*(a.early for a in access.values())) & fields
    constants = {}
    loaded = {k for _, k, _ in ion_io(mech, kept or {}).loads}
    for k, f in enumerate(mech.field_names):
        if f in written or k in loaded or data.shape[1] == 0:
            continue
        row = data[k]
        if (row == row[0]).all():
            constants[f] = float(row[0])
    transient = set()
    states = {s.name for s in mech.states}
    for f in written - early - states:
        if "net_receive" in access and f in access["net_receive"].written:
            continue
        if all(f in a.sure for a in access.values() if f in a.written):
            transient.add(f)
    return constants, transient


# ---- mechanism device functions ---------------------------------------------------------
class _KernelScope(_CScope):
    """Fields as locals ``f_<name>`` (or literals for constants); ``v`` as ``v_name``."""

    def __init__(self, mech, constants: dict, literal, *, v_name="v", weight=False):
        super().__init__(mech, fields=True, weight=weight, table=not weight)
        self.zero = "R(0.0)"
        self.constants, self.literal = constants, literal
        self.v_name = v_name
        self.used: set = set()     # shared with the scopes of inlined procedures

    @property
    def v_name(self) -> str:
        return self.special["v"]

    @v_name.setter
    def v_name(self, value: str) -> None:
        self.special = {"v": value, "t": "t", "dt": "dt", "celsius": "celsius"}

    def field(self, name: str) -> str:
        if name in self.constants:
            return self.literal(self.constants[name])
        self.used.add(name)
        return f"f_{name}"


def _loads_stores(mech, used: set, access: _Access, transient: set,
                  from_node: frozenset = frozenset()) -> tuple:
    """Declarations of the fields a function uses (loaded where read before surely
    written; ``from_node`` ones from their parameter ``in_<field>``, the node's ion value)
    and the stores of those it writes (transient ones under ``flush``)."""
    index = {f: k for k, f in enumerate(mech.field_names)}
    load = [f for f in mech.field_names if f in used and
            (f in access.early or f not in access.sure)]

    def decl_of(f):
        if f in from_node:
            return f"    real f_{f} = in_{f};\n"
        return f"    real f_{f} = D[{index[f]}*n + j];\n" if f in load \
            else f"    real f_{f} = R(0.0);\n"

    decl = "".join(decl_of(f) for f in mech.field_names if f in used)
    # a node's value as loaded is the instance's copy: stored where it can be observed
    keep = [f for f in mech.field_names if (f in access.written or f in from_node)
            and f in used]
    late = lambda f: f in transient or (f in from_node and f not in access.written)
    always = "".join(f"    D[{index[f]}*n + j] = f_{f};\n" for f in keep if not late(f))
    later = "".join(f"        D[{index[f]}*n + j] = f_{f};\n" for f in keep if late(f))
    if later:
        always += f"    if (flush) {{\n{later}    }}\n"
    return decl, always


def _locals_decl(scope) -> str:
    return "".join(f"    real l_{n} = R(0.0);\n" for n in sorted(scope.locals))


def ion_parameters(mech, kept: dict, phase: str) -> tuple:
    """The extra parameters of ``<m>_cur`` (``phase`` "cur") or ``<m>_state`` ("state") for
    the ions kept per node: ``(declarations, loaded fields, (field, output) pairs)``. The
    node's values come in as ``in_<field>``; the currents the mechanism writes (cur) and
    the concentrations (state) go out through ``out_<field>``."""
    io = ion_io(mech, kept)
    names = mech.field_names
    loaded = [names[k] for _, k, _ in io.loads]
    outs = [names[k] for _, k, _ in (io.adds if phase == "cur" else io.stores)]
    decl = "".join(f", const real in_{f}" for f in loaded) \
        + "".join(f", real& out_{f}" for f in outs)
    return decl, frozenset(loaded), outs


def mechanism_functions(mech, constants: dict, transient: set, tables: bool,
                        kept: dict | None = None) -> str:
    """``<m>_cur``, ``<m>_state`` and ``<m>_net_receive`` device functions (those the
    mechanism has) over one instance ``j`` of ``n`` in the field block ``D``; with ions
    kept per node, their variables pass as parameters (:func:`ion_parameters`)."""
    em = _CEmitter(mech, tables, real="real")
    out = emit_helpers(em, qualifier="__device__ __forceinline__")
    m = mech.name
    kept = kept or {}
    args = ("real* __restrict__ D, const int n, const int j, const real v, const real t, "
            "const real dt, const real celsius, const real* __restrict__ table, "
            "const bool flush")
    blocks = runtime_blocks(mech)
    if "current" in blocks:
        acc = block_access(mech, blocks["current"], tables)
        scope = _KernelScope(mech, constants, em.literal, v_name="v1")
        first = em.block(mech.breakpoint, scope, 1)
        g = "R(0.0)"
        for c in mech.currents:
            g = f"({g} + {scope.name(c)})"
        scope.v_name = "v"
        second = em.block(mech.breakpoint, scope, 1)
        c_sum = "R(0.0)"
        for c in mech.currents:
            c_sum = f"({c_sum} + {scope.name(c)})"
        ion_decl, from_node, outs = ion_parameters(mech, kept, "cur")
        scope.used |= set(from_node) | set(outs)
        decl, store = _loads_stores(mech, scope.used, acc, transient, from_node)
        store += "".join(f"    out_{f} = f_{f};\n" for f in outs)
        out.append(
            f"__device__ __forceinline__ void {m}_cur({args}, real& g, real& c{ion_decl}) "
            f"{{\n{decl}{_locals_decl(scope)}    const real v1 = v + R(0.001);\n{first}"
            f"    g = {g};\n{second}    c = {c_sum};\n{store}"
            f"    g = hb_div(g - c, R(0.001));\n}}\n")
    if "state" in blocks:
        acc = block_access(mech, blocks["state"], tables)
        scope = _KernelScope(mech, constants, em.literal)
        body = em.block(mech.state, scope, 1)
        for eq in mech.cnexp:
            y = scope.name(eq.state)
            a = em.expr(_parse_expr(eq.a, mech, "cnexp"), scope)
            b = em.expr(_parse_expr(eq.b, mech, "cnexp"), scope)
            body += f"    {y} = {y} + (R(1.0) - hoc_Exp(dt*{a}))*(hb_div(-{b}, {a}) - {y});\n"
        body += em.block(mech.after_solve, scope, 1)
        ion_decl, from_node, outs = ion_parameters(mech, kept, "state")
        scope.used |= set(from_node) | set(outs)
        decl, store = _loads_stores(mech, scope.used, acc, transient, from_node)
        store += "".join(f"    out_{f} = f_{f};\n" for f in outs)
        out.append(f"__device__ __forceinline__ void {m}_state({args}{ion_decl}) {{\n"
                   f"{decl}{_locals_decl(scope)}{body}{store}}}\n")
    if "net_receive" in blocks:
        acc = block_access(mech, blocks["net_receive"], tables)
        scope = _KernelScope(mech, constants, em.literal, weight=True)
        body = em.block(mech.net_receive, scope, 1)
        decl, store = _loads_stores(mech, scope.used, acc, set())
        w_load, w_store = weight_vector_code(mech, "real")
        out.append(f"__device__ __forceinline__ void {m}_net_receive(real* __restrict__ D, "
                   f"const int n, const int j, const real weight, double* __restrict__ W, "
                   f"const real t, const real dt, const real celsius) {{\n"
                   f"{decl}{w_load}{_locals_decl(scope)}{body}{store}{w_store}}}\n")
    return "\n".join(out)


# ---- the kernel -------------------------------------------------------------------------
_COMMON = (
    ("n_steps", "i32"), ("n_cells", "i32"), ("step0", "i64"), ("t0", "f64"), ("dt_d", "f64"),
    ("detect_first", "i32"), ("use_shared", "i32"), ("n_max", "i32"),
    ("cell_order", "ptr:int"), ("cell_struct", "ptr:int"), ("cell_node0", "ptr:int"),
    ("s_meta", "ptr:int"),
    ("info", "ptr:int4"), ("cb", "ptr:real"), ("capd", "ptr:real"),
    ("child_idx", "ptr:int"), ("child_a", "ptr:real"),
    ("el_pc", "ptr:int2"), ("el_ab", "ptr:real2"), ("el_range", "ptr:int2"),
    ("el_lev", "ptr:int"), ("bs_ip", "ptr:int2"), ("bs_b", "ptr:real"),
    ("bs_range", "ptr:int2"), ("bs_lev", "ptr:int"), ("tr_node", "ptr:int"),
    ("tr_ab", "ptr:real2"),
    ("v_glob", "ptr:real"), ("scratch", "ptr:real"),
    ("src_off", "ptr:int"), ("src_node", "ptr:int"), ("src_thr", "ptr:real"),
    ("src_flag", "ptr:int"), ("spike_n", "ptr:int"), ("spike_t", "ptr:double"),
    ("spike_cap", "i32"),
    ("ev_off", "ptr:int"), ("ev_step", "ptr:long long"), ("ev_mech", "ptr:int"),
    ("ev_inst", "ptr:int"), ("ev_w", "ptr:double"), ("ev_te", "ptr:double"),
    ("ev_wo", "ptr:int"), ("nc_w", "ptr:double"),
    ("rec_off", "ptr:int"), ("rec_mech", "ptr:int"), ("rec_field", "ptr:int"),
    ("rec_idx", "ptr:int"), ("rec_every", "ptr:int"), ("rec_pos", "ptr:long long"),
    ("rec_buf", "ptr:double"), ("bad_step", "ptr:long long"),
)


def _mech_arg_spec(mech, has_table: bool) -> tuple:
    m = mech.name
    spec = [(f"D_{m}", "ptr:real"), (f"n_{m}", "i32")]
    if mech.kind == "density":
        spec.append((f"I_{m}", "ptr:int"))
    else:
        spec += [(f"O_{m}", "ptr:int"), (f"N_{m}", "ptr:int"), (f"S_{m}", "ptr:real")]
    if has_table:
        spec.append((f"T_{m}", "ptr:real"))
    return tuple(spec)


def _has_table(mech, tables: bool) -> bool:
    """Whether ``mech`` takes ``T_<m>``: its tables one after another
    (:func:`~hinesbatch.mechanisms.c_emitter.table_offsets`)."""
    return tables and any(c.table is not None for c in mech.procedures + mech.functions)


def kernel_args(mechs, tables: bool) -> list[KernelArg]:
    """The arguments of ``hb_epoch`` for ``mechs`` (in NEURON's type order); with ions kept
    per node, ``n_ion`` (the nodes of the launch's cells) and ``Ion_<ion>``
    (:data:`.ions.ION_ROWS` × ``n_ion``) last."""
    spec = list(_COMMON)
    for mech in mechs:
        spec += _mech_arg_spec(mech, _has_table(mech, tables))
    kept = kept_per_node(mechs)
    if kept:
        spec += [("n_ion", "i32")] + [(f"Ion_{ion}", "ptr:real") for ion in kept]
    out = []
    for name, kind in spec:
        if kind.startswith("ptr:"):
            base = kind[4:]
            const = "" if name in _WRITTEN or name.startswith(("D_", "Ion_")) else "const "
            out.append(KernelArg(name, "ptr", f"{const}{base}* __restrict__"))
        else:
            out.append(KernelArg(name, kind, {"i32": "const int", "i64": "const long long",
                                              "f64": "const double"}[kind]))
    return out


_WRITTEN = {"v_glob", "scratch", "src_flag", "spike_n", "spike_t", "rec_buf", "bad_step",
            "nc_w"}


def kernel_source(mechs, roles: dict, *, precision: str, tables: bool, dt: float,
                  celsius: float, block_threads: int = 1024, min_blocks: int = 0,
                  scan_reals: int = 0, cell_threads: int | None = None) -> str:
    """The full source of ``hb_epoch`` for ``mechs`` (NEURON's type order) with the field
    roles ``{name: (constants, transient)}`` (:func:`field_roles`). ``dt`` and ``celsius``
    are compiled in as literals, so that what depends on them only (hh's q10) is computed
    once by the compiler instead of at every node and step; ``block_threads`` is the
    kernel's launch bound and ``min_blocks`` (when > 0) the blocks a multiprocessor must be
    able to hold at once (the registers a thread may use follow from both); ``scan_reals``
    the reals of a cell's scratch after v, d and rhs (the trunk's scan); ``cell_threads``
    the threads that step one cell (``block_threads`` by default; a divisor of 32 below it
    and the block steps ``block_threads // cell_threads`` cells, a group of lanes each)."""
    real = REAL_TYPES[precision]
    cell_threads = block_threads if cell_threads is None else int(cell_threads)
    if block_threads % cell_threads or (cell_threads < block_threads and 32 % cell_threads):
        raise ValueError(f"{cell_threads} threads a cell: a block of {block_threads} steps "
                         "one cell, or several whose threads divide a warp")
    parts = [(f"#define REAL {real}\n#define REAL2 {real}2\n"
              f"#define HB_CELLS {block_threads // cell_threads}\n"
              f"#define HB_CELL_THREADS {cell_threads}\n"),
             _PRELUDE.replace("@FAST_MATH@", _fast_math())]
    kept = kept_per_node(mechs)
    if kept:
        parts.append(_NERNST)
    for mech in mechs:
        constants, transient = roles[mech.name]
        parts.append(f"\n/* ---- {mech.name} ---- */\n")
        parts.append(mechanism_functions(mech, constants, transient, tables, kept))
    args = kernel_args(mechs, tables)
    signature = ",\n    ".join(f"{a.ctype} {a.name}" for a in args)
    parts.append(_kernel_body(mechs, tables, signature)
                 .replace("@DT@", repr(float(dt))).replace("@CELSIUS@", repr(float(celsius)))
                 .replace("@TRUNK@", _TRUNK_STEP if scan_reals else "")
                 .replace("@SCAN@", str(int(scan_reals)))
                 .replace("@META@", str(len(META)))
                 .replace("@THREADS@", str(int(block_threads)) +
                          (f", {int(min_blocks)}" if min_blocks > 0 else "")))
    parts.append(_host_launcher(args))
    return "".join(parts)


#: Step 4b, compiled in only where a structure has a trunk (``scan_reals`` > 0): without it
#: the kernel is the chains' alone, registers and stack included.
_TRUNK_STEP = """\
        /* 4b. the trunk, when the cell's structure has one: one warp, from the leaf up */
        if (n_tr > 0) {
            hb_trunk_eliminate(Dg, B, TN, TA, n_tr, S, tid);
            HB_BAR();
            hb_trunk_substitute(Dg, B, TN, TA, n_tr, S, tid);
            HB_BAR();
        }
"""

_NERNST = f"""
/* NEURON's nrn_nernst [mV], in its order of operations. */
__device__ __forceinline__ real hb_nernst(real ci, real co, real z, real celsius) {{
    if (z == R(0.0)) return R(0.0);
    if (ci <= R(0.0)) return R(1e6);
    if (co <= R(0.0)) return R(-1e6);
    const real ktf = R(1000.0) * R({GAS_CONSTANT!r}) * (celsius + R(273.15)) / R({FARADAY!r});
    return ktf / z * log(co / ci);
}}
"""

_ION_ROW = {"e": 0, "ci": 1, "co": 2, "cur": 3, "eadvance": 4, "area": 6}


def _ion_at(ion: str, row: str) -> str:
    return f"Ion_{ion}[{_ION_ROW[row]}*n_ion + node0 + i]"


def _ion_locals(kept: dict, cur: bool) -> str:
    """The node's values of the kept ions as locals ``ion_<ion>_<e|ci|co|cur>``; for the
    currents (``cur``) as NEURON's ion_cur leaves them: the current zero, the reversal
    potential recomputed where a concentration is written."""
    src = ""
    for ion, z in kept.items():
        src += "".join(f"            real ion_{ion}_{r} = {_ion_at(ion, r)};\n"
                       for r in ("e", "ci", "co"))
        if cur:
            src += (f"            real ion_{ion}_cur = R(0.0);\n"
                    f"            if ({_ion_at(ion, 'eadvance')} != R(0.0)) ion_{ion}_e = "
                    f"hb_nernst(ion_{ion}_ci, ion_{ion}_co, R({z!r}), celsius);\n")
        else:
            src += f"            const real ion_{ion}_cur = {_ion_at(ion, 'cur')};\n"
    return src


def _ion_call_args(mech, kept: dict, phase: str) -> tuple:
    """(arguments, declarations of the outputs, what the outputs do after the call)."""
    io = ion_io(mech, kept)
    names = mech.field_names
    rows = {0: "e", 1: "ci", 2: "co", 3: "cur"}
    args = "".join(f", ion_{ion}_{rows[row]}" for ion, _, row in io.loads)
    pairs = io.adds if phase == "cur" else io.stores
    outs = [(ion, names[k], rows[row]) for ion, k, row in pairs]
    args += "".join(f", o_{f}" for _, f, _ in outs)
    decl = "".join(f"real o_{f}; " for _, f, _ in outs)
    after = ""
    for ion, f, row in outs:
        if phase == "cur" and mech.kind == "point":   # nocmodl: ica * 1.e2/(_nd_area)
            after += f" ion_{ion}_cur += (o_{f}*R(100.0))/{_ion_at(ion, 'area')};"
        elif phase == "cur":
            after += f" ion_{ion}_cur += o_{f};"
        else:
            after += f" ion_{ion}_{row} = o_{f};"
    return args, decl, after


def _table(mech, tables):
    return f"T_{mech.name}" if _has_table(mech, tables) else "nullptr"


def _assembly(mechs, tables) -> str:
    kept = kept_per_node(mechs)
    src = _ion_locals(kept, cur=True)
    for mech in mechs:
        if not mech.currents:
            continue
        m = mech.name
        args, decl, after = _ion_call_args(mech, kept, "cur")
        call = (f"{decl}{m}_cur(D_{m}, n_{m}, j, vi, t_mid, dt, celsius, "
                f"{_table(mech, tables)}, flush, g, c{args});{after}")
        sign = ("rhs += c; d -= g;" if mech.electrode else "rhs -= c; d += g;")
        if mech.kind == "density":
            src += (f"            {{ const int j = I_{m}[node0 + i];\n"
                    f"              if (j >= 0) {{ real g, c; {call} {sign} }} }}\n")
        else:
            src += (f"            for (int j = O_{m}[cell]; j < O_{m}[cell + 1]; ++j)\n"
                    f"                if (N_{m}[j] == i) {{ real g, c; {call}\n"
                    f"                    g = g*S_{m}[j]; c = c*S_{m}[j]; {sign} }}\n")
    for ion in kept:   # e changes only where a concentration is written (eadvance)
        src += (f"            if ({_ion_at(ion, 'eadvance')} != R(0.0)) "
                f"{_ion_at(ion, 'e')} = ion_{ion}_e;\n"
                f"            {_ion_at(ion, 'cur')} = ion_{ion}_cur;\n")
    return src


def _states(mechs, tables) -> str:
    kept = kept_per_node(mechs)
    src = _ion_locals(kept, cur=False)
    for mech in mechs:
        if not (mech.state or mech.cnexp or mech.after_solve):
            continue
        m = mech.name
        args, decl, after = _ion_call_args(mech, kept, "state")
        call = (f"{decl}{m}_state(D_{m}, n_{m}, j, vi, t_new, dt, celsius, "
                f"{_table(mech, tables)}, flush{args});{after}")
        if mech.kind == "density":
            src += (f"            {{ const int j = I_{m}[node0 + i]; if (j >= 0) {{ {call} }} }}\n")
        else:
            src += (f"            for (int j = O_{m}[cell]; j < O_{m}[cell + 1]; ++j)\n"
                    f"                if (N_{m}[j] == i) {{ {call} }}\n")
    rows = {0: "e", 1: "ci", 2: "co", 3: "cur"}
    written = {(ion, rows[row]) for mech in mechs for ion, _, row in ion_io(mech, kept).stores}
    for ion, r in sorted(written):     # the concentrations some state update writes
        src += f"            {_ion_at(ion, r)} = ion_{ion}_{r};\n"
    return src


def _net_receive(mechs) -> str:
    cases = ""
    for k, mech in enumerate(mechs):
        if mech.net_receive:
            m = mech.name
            cases += (f"                    case {k}: {m}_net_receive(D_{m}, n_{m}, ev_inst[e], "
                      f"(real)ev_w[e], ev_wo[e] >= 0 ? nc_w + ev_wo[e] : nullptr, "
                      f"(real)ev_te[e], dt, celsius); break;\n")
    return cases


def _recorded_value(mechs) -> str:
    cases = ""
    for k, mech in enumerate(mechs):
        m = mech.name
        cases += (f"                    case {k}: x = D_{m}[rec_field[r]*n_{m} + rec_idx[r]]; "
                  f"break;\n")
    return cases


def _kernel_body(mechs, tables, signature) -> str:
    return f"""
extern "C" __global__ void __launch_bounds__(@THREADS@) hb_epoch(
    {signature})
{{
#ifdef HB_HOST
    real* smem = (real*)hb_host_shared.data();
#else
    extern __shared__ __align__(16) unsigned char hb_smem_raw[];
    real* smem = (real*)hb_smem_raw;
#endif
    const int slot = HB_BID*HB_CELLS + HB_GROUP;
    if (slot >= n_cells) return;
    const int cell = cell_order[slot], tid = HB_TID, nt = HB_NT;
    const int* __restrict__ meta = s_meta + @META@*cell_struct[cell];
    const int sn0 = meta[0], n = meta[1];
    const int2* __restrict__ ER = el_range + meta[2];
    const int2* __restrict__ BR = bs_range + meta[2];
    const int* __restrict__ EL = el_lev + meta[3];
    const int n_elim = meta[4];
    const int* __restrict__ BL = bs_lev + meta[5];
    const int n_back = meta[6];
    const int* __restrict__ TN = tr_node + meta[7];
    const real2* __restrict__ TA = tr_ab + meta[7];
    const int n_tr = meta[8];
    const int node0 = cell_node0[cell];
    real* __restrict__ V = use_shared ? smem + HB_GROUP*(3*n_max + @SCAN@)
                                      : scratch + (size_t)cell*(3*n_max + @SCAN@);
    real* __restrict__ Dg = V + n_max;
    real* __restrict__ B = Dg + n_max;
    real* __restrict__ S = B + n_max;       /* the trunk's scan: @SCAN@ reals */
    const real dt = R(@DT@), celsius = R(@CELSIUS@);
    for (int i = tid; i < n; i += nt) V[i] = v_glob[node0 + i];
    HB_BAR();
    int ev = ev_off[cell];
    const int ev_end = ev_off[cell + 1];
    double t = t0;
    for (int k = 0; k < n_steps; ++k) {{
        const long long st = step0 + k;
        /* 1. threshold detection at t */
        if (k > 0 || detect_first) {{
            for (int q = src_off[cell] + tid; q < src_off[cell + 1]; q += nt) {{
                if (V[src_node[q]] - src_thr[q] > R(0.0)) {{
                    if (src_flag[q] == 0) {{
                        src_flag[q] = 1;
                        spike_t[(size_t)q*spike_cap + spike_n[q]] = t + 1e-10;
                        spike_n[q] += 1;
                    }}
                }} else {{
                    src_flag[q] = 0;
                }}
            }}
        }}
        if (detect_first == 2) break;   /* detection only */
        /* 2. events acting at this step, in the host queue's order */
        if (ev < ev_end && ev_step[ev] == st) {{
            HB_BAR();
            if (tid == 0) {{
                for (int e = ev; e < ev_end && ev_step[e] == st; ++e) {{
                    switch (ev_mech[e]) {{
{_net_receive(mechs)}                    default: break;
                    }}
                }}
            }}
            while (ev < ev_end && ev_step[ev] == st) ++ev;
            HB_BAR();
        }}
        /* a recording at this step's end; of a mechanism's field: store every field */
        bool rec_due = false, flush = k == n_steps - 1;
        for (int r = rec_off[cell]; r < rec_off[cell + 1]; ++r) {{
            const bool due = ((st + 1) % rec_every[r]) == 0;
            rec_due |= due;
            flush |= due && rec_mech[r] >= 0;
        }}
        const double t_mid_d = t + 0.5*dt_d;
        const double t_new_d = t_mid_d + 0.5*dt_d;
        const real t_mid = (real)t_mid_d, t_new = (real)t_new_d;
        /* 3. assembly */
        for (int i = tid; i < n; i += nt) {{
            const real vi = V[i];
            real rhs = R(0.0), d = R(0.0);
{_assembly(mechs, tables)}            d += capd[sn0 + i];
            const int4 nd = info[sn0 + i];          /* parent, first child, children */
            if (nd.x >= 0) {{
                const real dv = V[nd.x] - vi;
                rhs -= cb[sn0 + i]*dv;
                d -= cb[sn0 + i];
            }}
            for (int q = nd.y; q < nd.y + nd.z; ++q) {{
                const real dv = vi - V[child_idx[q]];
                rhs += child_a[q]*dv;
                d -= child_a[q];
            }}
            Dg[i] = d;
            B[i] = rhs;
        }}
        HB_BAR();
        /* 4. elimination by chains, lowest first (records: parent, child, a, b) */
        for (int h = 0; h < n_elim; ++h) {{
            for (int q = EL[h] + tid; q < EL[h + 1]; q += nt) {{
                const int2 rg = ER[q];
                int r = rg.x, cur = -1;
                real dcur = R(0.0), bcur = R(0.0);
                for (; r + 4 <= rg.y; r += 4) {{     /* four records' loads in flight */
                    int2 pc[4];
                    real2 ab[4];
                    for (int u = 0; u < 4; ++u) {{ pc[u] = el_pc[r + u]; ab[u] = el_ab[r + u]; }}
                    for (int u = 0; u < 4; ++u) hb_eliminate(pc[u], ab[u], cur, dcur, bcur, Dg, B);
                }}
                for (; r < rg.y; ++r) hb_eliminate(el_pc[r], el_ab[r], cur, dcur, bcur, Dg, B);
                if (cur >= 0) {{
                    Dg[cur] = dcur;
                    B[cur] = bcur;
                }}
            }}
            HB_BAR();
        }}
@TRUNK@        /* 5. back substitution by chains, root first (records: node, parent, b) */
        for (int h = 0; h < n_back; ++h) {{
            for (int q = BL[h] + tid; q < BL[h + 1]; q += nt) {{
                const int2 rg = BR[q];
                int r = rg.x, cur = -1;
                real xcur = R(0.0);
                for (; r + 4 <= rg.y; r += 4) {{
                    int2 ip[4];
                    real bb[4];
                    for (int u = 0; u < 4; ++u) {{ ip[u] = bs_ip[r + u]; bb[u] = bs_b[r + u]; }}
                    for (int u = 0; u < 4; ++u) hb_substitute(ip[u], bb[u], cur, xcur, Dg, B);
                }}
                for (; r < rg.y; ++r) hb_substitute(bs_ip[r], bs_b[r], cur, xcur, Dg, B);
            }}
            HB_BAR();
        }}
        /* 6. v, then the states at t + dt */
        int bad = 0;
        for (int i = tid; i < n; i += nt) {{
            const real vi = V[i] + B[i];
            V[i] = vi;
            bad |= !isfinite(vi);
{_states(mechs, tables)}        }}
        t = t_new_d;
        if (HB_BAR_OR(bad)) {{
            if (tid == 0) bad_step[cell] = st + 1;
            break;
        }}
        /* 7. recordings at t + dt */
        if (rec_due) {{
            for (int r = rec_off[cell] + tid; r < rec_off[cell + 1]; r += nt) {{
                if (((st + 1) % rec_every[r]) != 0) continue;
                real x = R(0.0);
                if (rec_mech[r] < 0) {{
                    x = V[rec_idx[r]];
                }} else {{
                    switch (rec_mech[r]) {{
{_recorded_value(mechs)}                    default: break;
                    }}
                }}
                rec_buf[rec_pos[r] + (st + 1)/rec_every[r]] = (double)x;
            }}
            HB_BAR();
        }}
    }}
    for (int i = tid; i < n; i += nt) v_glob[node0 + i] = V[i];
}}
"""


def _host_launcher(args) -> str:
    """``hb_epoch_host(grid, shared_bytes, args...)``: the blocks one after another (host
    builds only)."""
    params = ", ".join(f"{a.ctype} {a.name}" for a in args)
    names = ", ".join(a.name for a in args)
    return f"""
#ifdef HB_HOST
extern "C" void hb_epoch_host(int grid, long long shared_bytes, {params})
{{
    hb_host_shared.assign((size_t)(shared_bytes/8 + 1), 0.0);
    for (int b = 0; b < grid; ++b) {{
        hb_block_index = b;
        for (int g = 0; g < HB_CELLS; ++g) {{
            hb_group_index = g;
            hb_epoch({names});
        }}
    }}
}}
#endif
"""
