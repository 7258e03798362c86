"""STATE arrays, array elements in KINETIC schemes, and ``LONGITUDINAL_DIFFUSION`` (a mixin
of the file's lowering).

Arrays
------
``STATE ca[3]`` and a file-level ``LOCAL frat[3]`` are stored as the fields ``ca__0``,
``ca__1``, ``ca__2`` (as ASSIGNED arrays are). In a KINETIC block a reaction's term
``ca[i + 1]`` names the element its index gives once the FROM loops around it are
written out (their bounds must be constants); ``COMPARTMENT i, expr {ca Buffer}`` gives
each element ``k`` of the listed arrays the volume ``expr`` with ``i = k``.

Longitudinal diffusion
----------------------
``LONGITUDINAL_DIFFUSION i, expr {ca}`` (or ``LONGITUDINAL_DIFFUSION expr {x}`` for a
scalar state) makes each element of each listed state diffuse between the neighbouring
segments of the cell, as NEURON's ``ldifus.cpp`` does once per step after every
mechanism's state update: per element ``k`` the flux coefficient ``expr`` (with
``i = k``; NEURON's ``_difcoef``, a diffusion constant times a cross-section [µm⁴/ms]) and
the element's COMPARTMENT volume are evaluated per instance, and the engine solves the
backward-Euler step of the diffusion over the cell's tree
(:class:`~hinesbatch.mechanisms.description.Diffusion`).
"""
from __future__ import annotations

import re

from ..mechanisms.description import Diffusion, Variable
from . import expressions as ex
from .syntax import Context, constant_value

__all__ = ["DiffusionLowering"]

#: the most elements a STATE or LOCAL array may have
MAX_ARRAY = 1000


class DiffusionLowering:
    """STATE and LOCAL arrays, array elements in reactions, LONGITUDINAL_DIFFUSION."""

    # ---- arrays ---------------------------------------------------------------------------
    def _array_length(self, node, name: str, kind: str) -> int:
        pat = rf"\b{re.escape(name)}\s*\["
        try:
            value = float(node.eval())
        except (AttributeError, RuntimeError, TypeError, ValueError):
            value = None
        if value is None or value != int(value) or not 1 <= value <= MAX_ARRAY:
            self.fail(f"{kind} {name}[]", f"a length that is not a whole number in [1, "
                      f"{MAX_ARRAY}]", pat)
        return int(value)

    def state_array(self, definition, unit: str) -> None:
        """``STATE ca[n]``: the states ``ca__0`` ... ``ca__{n-1}``."""
        n = definition.get_node_name()
        if n in self.ion_read | self.ion_write:
            self.fail(f"STATE {n}[]", "an ion variable as a STATE array",
                      rf"\b{re.escape(n)}\s*\[")
        length = self._array_length(definition.length if definition.length is not None
                                    else definition.name.length, n, "STATE")
        self.arrays[n] = length
        self.states += [Variable(f"{n}__{k}", 0.0, unit) for k in range(length)]

    def local_array(self, var) -> None:
        """A file-level ``LOCAL frat[n]``: per-instance values ``frat__0`` ..."""
        n = var.get_node_name()
        length = self._array_length(var.name.length, n, "LOCAL")
        self.arrays[n] = length
        self.assigned += [Variable(f"{n}__{k}", 0.0, "1") for k in range(length)]

    def element_name(self, indexed, rename: dict, pattern: str) -> str:
        """The field of the array element ``indexed`` (an IndexedName of the AST) with the
        FROM loop values in ``rename``."""
        array = indexed.get_node_name()
        pat = rf"\b{re.escape(array)}\s*\["
        pattern = rf"{pattern}.*{pat}"     # the statement's line first
        if array not in self.arrays:
            self.fail(f"{array}[]", "not an array of the mechanism", pattern, pat)
        index = ex.substitute(ex.substitute(ex.from_ast(indexed.length), self.const), rename)
        k = constant_value(index)
        if k is None or k != int(k):
            self.fail(f"{array}[]", "an index in a KINETIC scheme that is not a whole number "
                      "known before the run (FROM loops around reactions need constant "
                      "bounds)", pattern, pat)
        if not 0 <= k < self.arrays[array]:
            self.fail(f"{array}[]", f"index {int(k)} outside [0, {self.arrays[array]})",
                      pattern, pat)
        return f"{array}__{int(k)}"

    def from_values(self, st):
        """The values a FROM loop's variable takes (nocmodl's C: integer bounds), or None
        where a bound is known only at run time."""
        bounds = []
        for part in (getattr(st, "from"), st.to, st.increment):
            if part is None:
                bounds.append(1.0)
                continue
            value = constant_value(ex.substitute(ex.from_ast(part), self.const))
            if value is None:
                return None
            bounds.append(value)
        lo, hi, step = (int(b) for b in bounds)
        if step == 0 or (hi - lo) / step > MAX_ARRAY:
            self.fail("FROM", f"more than {MAX_ARRAY} iterations", r"\bFROM\b")
        out, i = [], lo
        while (step > 0 and i <= hi) or (step < 0 and i >= hi):
            out.append(float(i))
            i += step
        return out

    # ---- COMPARTMENT -----------------------------------------------------------------------
    def compartment_volumes(self, st, volumes: dict) -> None:
        """``COMPARTMENT [i,] vol {species}``: each listed state's (or array element's)
        volume as ``(expression AST, index name or None, index value)``."""
        index = st.index_name.get_node_name() if st.index_name is not None else None
        for s in st.species:
            n = s.get_node_name()
            if n in self.arrays:
                for k in range(self.arrays[n]):
                    volumes[f"{n}__{k}"] = (st.volume, index, float(k))
            elif n in self.state_names:
                if index is not None:
                    self.fail("COMPARTMENT", f"an indexed COMPARTMENT lists {n}, which is "
                              "not an array", r"\bCOMPARTMENT\b")
                volumes[n] = (st.volume, None, 0.0)

    def indexed_expr(self, node, index, k, ctx):
        """The lowered expression ``node`` with the index variable ``index`` = ``k``."""
        if index is None:
            return self._expr(node, ctx)
        before = ctx.rename.get(index)
        ctx.rename[index] = ("num", k)
        try:
            return self._expr(node, ctx)
        finally:
            if before is None:
                ctx.rename.pop(index, None)
            else:
                ctx.rename[index] = before

    # ---- LONGITUDINAL_DIFFUSION --------------------------------------------------------------
    def diffusion(self) -> tuple:
        """The :class:`Diffusion` of every element of every state a KINETIC block solved in
        BREAKPOINT lists in a LONGITUDINAL_DIFFUSION statement, in NEURON's order
        (statements in the text, species in the list, elements by index)."""
        out = []
        solved = self.__dict__.get("_solved_kinetic", set())
        for name, block in self.kinetics.items():
            pat = rf"KINETIC\s+{name}\b"
            stmts = [st for st in block.statement_block.statements
                     if type(st).__name__ == "LonDiffuse"]
            if not stmts:
                continue
            if name not in solved:
                self.fail("LONGITUDINAL_DIFFUSION", f"in KINETIC {name}, which BREAKPOINT "
                          "does not SOLVE", r"\bLONGITUDINAL_DIFFUSION\b")
            if self.kind != "density":
                self.fail("LONGITUDINAL_DIFFUSION", "in a POINT_PROCESS (NEURON diffuses "
                          "the states of density mechanisms)",
                          r"\bLONGITUDINAL_DIFFUSION\b")
            scheme = self.kinetic_scheme(name)
            ctx = Context(f"LONGITUDINAL_DIFFUSION of KINETIC {name}",
                          [r"\bLONGITUDINAL_DIFFUSION\b", pat], fields=True)
            for st in stmts:
                out += self._diffusing(st, scheme, ctx)
        return tuple(out)

    def _diffusing(self, st, scheme, ctx) -> list:
        index = st.index_name.get_node_name() if st.index_name is not None else None
        out = []
        for s in st.species:
            n = s.get_node_name()
            pat = rf"LONGITUDINAL_DIFFUSION.*\b{re.escape(n)}\b"
            if n in self.ion_states or n in self.ion_read | self.ion_write:
                self.fail(f"LONGITUDINAL_DIFFUSION {{{n}}}", "the ion concentration itself "
                          "diffusing is not translated (a STATE of the mechanism is)", pat)
            if n in self.arrays and n not in {v.name.rsplit("__", 1)[0]
                                              for v in self.states}:
                self.fail(f"LONGITUDINAL_DIFFUSION {{{n}}}", "not a STATE", pat)
            elements = [f"{n}__{k}" for k in range(self.arrays[n])] if n in self.arrays \
                else [n]
            if n not in self.arrays and n not in self.state_names:
                self.fail(f"LONGITUDINAL_DIFFUSION {{{n}}}", "not a STATE", pat)
            for k, y in enumerate(elements):
                if y not in scheme.volumes:
                    self.fail(f"LONGITUDINAL_DIFFUSION {{{n}}}", f"{n} has no COMPARTMENT "
                              "volume in its KINETIC block", pat)
                vol_node, vol_index, vol_k = scheme.volumes[y]
                coef = self.indexed_expr(st.rate, index, float(k), ctx)
                volume = self.indexed_expr(vol_node, vol_index, vol_k, ctx)
                out.append(Diffusion(y, ex.to_text(coef), ex.to_text(volume)))
        return out
