"""``derivimplicit`` of coupled or nonlinear DERIVATIVE blocks: NEURON's Newton iteration
(scopmath's ``nrn_newton_thread``) written out as straight-line code (a mixin of the file's
lowering).

nocmodl makes the block a function of the states whose values are the residuals
``y' - (y - y_old)/dt`` of the backward-Euler step, and ``nrn_newton_thread`` solves them:

- while the last relative change ``max |dx/x|`` (over ``|x| > 1e-8``) exceeds 0.05 (at
  first it is 1), the Jacobian is built anew by central differences, column ``j`` from
  the block evaluated at ``x_j ± h`` with ``h = max(|0.02·x_j|, 1e-6)`` (then ``x_j`` is
  restored by adding ``h`` back and the block evaluated there);
- ``J·dx = -residual``, ``x += dx``, the block evaluated at the new ``x``;
- it stops when the change is ``<= 1e-6`` and every residual ``<= 1e-8`` in magnitude.

The generated code takes the same iterates (its elimination has no pivoting, NEURON's
Crout factorization pivots: they differ by roundoff), unrolled to :data:`MAX_ITERATIONS`
passes, each after the first under an ``if``. NEURON allows 50 and stops the run beyond
them; the schemes it integrates converge in a few. Where the passes written out do not
converge, the states become NaN and the run stops with the engine's non-finite error. After
the iteration the block runs once more with the new states, as nocmodl's function does.
"""
from __future__ import annotations

from . import expressions as ex

__all__ = ["NewtonLowering"]

#: scopmath's constants (errcodes.hpp)
MAXCHANGE = 0.05
CONVERGE = 1e-6
ZERO = 1e-8
STEP = 1e-6
#: the Newton passes written out (NEURON: at most 50, then it stops the run)
MAX_ITERATIONS = 12


def _indent(text: str, pad: str = "    ") -> str:
    return "".join(pad + line for line in text.splitlines(True))


class NewtonLowering:
    """The Newton iteration of ``derivimplicit`` for coupled or nonlinear equations."""

    def derivimplicit_newton(self, name, items, eqs) -> str:
        """Statements for ``SOLVE name METHOD derivimplicit``.

        ``items`` are the block's lowered statements, with ``("EQ", k)`` where equation
        ``k`` of ``eqs`` (``(y, a, b, pad, f)``: ``y' = f``) stands.
        """
        ys = [y for y, *_ in eqs]
        n = len(ys)
        body = []
        for t in items:
            if isinstance(t, tuple):
                y, _, _, pad, f = eqs[t[1]]
                body.append(f"{pad}D{y}__{name} = {ex.to_text(f)}\n")
            else:
                body.append(t)
        block = "".join(body)

        def residual(i):
            y = ys[i]
            return f"(D{y}__{name} - (({ex.py_name(y)} - nw__sav_{i}) / dt))"

        out = [f"nw__sav_{i} = {ex.py_name(y)}\n" for i, y in enumerate(ys)]
        out += [f"D{y}__{name} = 0.0\n" for y in ys]
        out += [f"nw__val_{i} = 0.0\nnw__dx_{i} = 0.0\n" for i in range(n)]
        out += [f"nw__j_{i}_{j} = 0.0\n" for i in range(n) for j in range(n)]
        out.append("nw__change = 1.0\nnw__conv = 0.0\n")
        one = self._newton_step(ys, block, residual)
        for _ in range(MAX_ITERATIONS):
            out.append("if nw__conv == 0.0:\n" + _indent(one))
        # not converged within the passes written out: the states become NaN, so the run
        # stops with the engine's non-finite error (cell, location, time) instead of
        # going on with values NEURON would not have (it stops the run beyond 50)
        out.append("if nw__conv == 0.0:\n"
                   + "".join(f"    {ex.py_name(y)} = (0.0 / 0.0)\n" for y in ys))
        out.append(block)
        return "".join(out)

    @staticmethod
    def _jacobian(ys, block, residual) -> str:
        """nrn_newton_thread's central-difference Jacobian, factorized in place (the
        multipliers below the diagonal), and the negated residuals at the states."""
        n = len(ys)
        jac = []
        for j, y in enumerate(ys):
            yt = ex.py_name(y)
            jac.append(f"nw__h = fabs((0.02 * {yt}))\n"                # fmax(|0.02 x|, STEP)
                       f"if nw__h < {STEP!r}:\n    nw__h = {STEP!r}\n"
                       f"{yt} = ({yt} + nw__h)\n" + block)
            jac += [f"nw__hi_{i} = {residual(i)}\n" for i in range(n)]
            jac.append(f"{yt} = ({yt} - (2.0 * nw__h))\n" + block)
            jac += [f"nw__j_{i}_{j} = ((nw__hi_{i} - {residual(i)}) / (2.0 * nw__h))\n"
                    for i in range(n)]
            jac.append(f"{yt} = ({yt} + nw__h)\n" + block)
            jac += [f"nw__val_{i} = {residual(i)}\n" for i in range(n)]
        jac += [f"nw__val_{i} = (-nw__val_{i})\n" for i in range(n)]
        for k in range(n):              # LU in place, multipliers below the diagonal
            for i in range(k + 1, n):
                jac.append(f"nw__j_{i}_{k} = (nw__j_{i}_{k} / nw__j_{k}_{k})\n")
                jac += [f"nw__j_{i}_{j} = (nw__j_{i}_{j} - (nw__j_{i}_{k} * nw__j_{k}_{j}))\n"
                        for j in range(k + 1, n)]
        return "".join(jac)

    def _newton_step(self, ys, block, residual) -> str:
        """One Newton iteration: the Jacobian where the last change exceeds MAXCHANGE,
        the solve, the update, the residuals at the new states, the convergence test."""
        n = len(ys)
        step = [f"if nw__change > {MAXCHANGE!r}:\n"
                + _indent(self._jacobian(ys, block, residual))]
        step += [f"nw__b_{i} = nw__val_{i}\n" for i in range(n)]
        for i in range(n):
            for k in range(i):
                step.append(f"nw__b_{i} = (nw__b_{i} - (nw__j_{i}_{k} * nw__b_{k}))\n")
        for k in range(n - 1, -1, -1):
            acc = f"nw__b_{k}"
            for j in range(k + 1, n):
                acc = f"({acc} - (nw__j_{k}_{j} * nw__dx_{j}))"
            step.append(f"nw__dx_{k} = ({acc} / nw__j_{k}_{k})\n")
        step.append("nw__change = 0.0\n")
        for i, y in enumerate(ys):
            yt = ex.py_name(y)
            step.append(f"if fabs({yt}) > {ZERO!r}:\n"
                        f"    nw__t = fabs((nw__dx_{i} / {yt}))\n"
                        f"    if nw__t > nw__change:\n        nw__change = nw__t\n"
                        f"{yt} = ({yt} + nw__dx_{i})\n")
        step.append(block)
        step.append("nw__dev = 0.0\n")
        for i in range(n):
            step.append(f"nw__val_{i} = (-{residual(i)})\n"
                        f"if fabs(nw__val_{i}) > nw__dev:\n    nw__dev = fabs(nw__val_{i})\n")
        step.append(f"if nw__change <= {CONVERGE!r} and nw__dev <= {ZERO!r}:\n"
                    "    nw__conv = 1.0\n")
        return "".join(step)
