"""VERBATIM blocks that change nothing (a mixin of the file's lowering).

nocmodl pastes a VERBATIM block's C into its output unchanged; the translator runs none of
it, so a block is accepted only where its C cannot change what the mechanism computes:

- a block that is empty or holds only C comments, anywhere;
- at the top level of the file, ``#include <h>`` lines of the standard C headers of
  :data:`STANDARD_HEADERS` (with comments): they declare library functions, types and
  constants, and nocmodl's output includes ``math.h``, ``stdio.h`` and ``stdlib.h`` itself;
- ``return 0;``, ``return(0);`` or ``return;`` as the last statement of a PROCEDURE: nocmodl
  writes a PROCEDURE as ``static int name(...) { body return 0; }`` and no caller uses its
  value, so returning at the end of the body is what the function does anyway (NEURON 9
  compiles its C as C++, which rejects ``return;`` in a function returning ``int``; older
  NEURONs accepted it);
- ``return;`` as the last statement of INITIAL: nocmodl's ``initmodel`` saves ``t``, sets
  it to 0, runs the block and restores ``t``; the ``return`` skips the restoring, which
  changes nothing because ``finitialize`` runs INITIAL at ``t = 0``;
- ``cai = _ion_cai;`` in INITIAL (one such line or more), for an ion variable ``cai`` the
  mechanism READs, does not WRITE and no block assigns: nocmodl's ``nrn_init`` has
  loaded the block's copy from the ion just before, and nothing changes either since;
- in any block, only ``printf("format", name, ...);`` statements (a string literal without
  ``%n``, then plain C names): printing changes nothing the mechanism computes; dropped,
  with the notice of NMODL's ``printf`` statement.

Every other block is refused (``C code cannot be translated``): a ``return`` in a
FUNCTION sets its value, one before other statements skips them, and in BREAKPOINT it
skips the current's computation.
"""
from __future__ import annotations

import re

__all__ = ["STANDARD_HEADERS", "VerbatimLowering", "c_code"]

#: Headers of the C standard library whose ``#include`` at the top level is accepted.
STANDARD_HEADERS = frozenset({
    "assert.h", "ctype.h", "errno.h", "float.h", "limits.h", "math.h", "stddef.h",
    "stdint.h", "stdio.h", "stdlib.h", "string.h", "time.h",
    "cassert", "cctype", "cerrno", "cfloat", "climits", "cmath", "cstddef", "cstdint",
    "cstdio", "cstdlib", "cstring", "ctime"})

_RETURN = re.compile(r"return(?:\s+0|\s*\(\s*0\s*\))?\s*;")
_RETURN_VOID = re.compile(r"return\s*;")
_INCLUDE = re.compile(r"#\s*include\s*<\s*([\w./]+)\s*>")
_PRINTF = re.compile(r'\s*(?:printf\s*\(\s*"(?:[^"\\\n]|\\.)*"\s*(?:,\s*[A-Za-z_]\w*\s*)*\)'
                     r"\s*;\s*)+")


def c_code(text: str) -> str:
    """``text`` (C) without its comments, each line stripped, empty lines dropped."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.DOTALL)
    text = re.sub(r"//[^\n]*", "", text)
    return "\n".join(line.strip() for line in text.splitlines() if line.strip())


def _plain(code: str) -> bool:
    """No string or character literal and no line continuation: comments were found
    exactly (a ``/*`` inside a string, a ``//`` comment continued by ``\\``)."""
    return not re.search(r"[\"'\\]", code)


class VerbatimLowering:
    """The accepted VERBATIM blocks of the module docstring (mixed into the lowering)."""

    def top_level_verbatim(self, node) -> None:
        """Accept a VERBATIM block at the top level of the file, or refuse it."""
        code = c_code(node.statement.eval())
        if not code:
            return
        headers = [_INCLUDE.fullmatch(line) for line in code.splitlines()]
        if _plain(code) and all(m is not None and m.group(1) in STANDARD_HEADERS
                                for m in headers):
            return
        self.refuse_verbatim(node)

    def verbatim_statement(self, node, ctx) -> None:
        """Accept a VERBATIM block among a block's statements, or refuse it.

        ``ctx.return_tail`` is the last statement of a PROCEDURE or of INITIAL (set by
        their lowering, None elsewhere): there a ``return`` changes nothing.
        """
        code = c_code(node.statement.eval())
        if not code:
            return
        tail = ctx.return_tail is not None and node is ctx.return_tail
        form = _RETURN_VOID if ctx.where == "INITIAL" else _RETURN
        if tail and _plain(code) and form.fullmatch(" ".join(code.split())):
            return
        if ctx.where == "INITIAL" and _plain(code) and self._ion_reloads(code):
            return
        raw = node.statement.eval()
        if _PRINTF.fullmatch(raw) and "%n" not in raw:
            self._printf()          # printing only (ConstructLowering's notice)
            return
        if _RETURN.fullmatch(" ".join(code.split())):
            self.refuse_verbatim(node, f" ({' '.join(code.split())} in {ctx.where} changes "
                                 "what it computes; only at the end of a PROCEDURE, or "
                                 "return; at the end of INITIAL, does it change nothing)")
        self.refuse_verbatim(node)

    def _ion_reloads(self, code: str) -> bool:
        """``code`` is only ``x = _ion_x;`` statements for ion variables ``x`` the
        mechanism READs, does not WRITE and no block assigns."""
        stmts = [st.strip() for st in code.split(";")]
        if stmts[-1] != "" or len(stmts) < 2:
            return False
        for st in stmts[:-1]:
            m = re.fullmatch(r"(\w+)\s*=\s*_ion_(\w+)", st)
            if m is None or m.group(1) != m.group(2):
                return False
            x = m.group(1)
            if x not in self.ion_read or x in self.ion_write or x in self.written:
                return False
        return True

    def return_tail(self, stmts):
        """The last statement of ``stmts`` other than comments (None if none)."""
        real = [st for st in stmts if type(st).__name__ not in ("LineComment",
                                                               "BlockComment")]
        return real[-1] if real else None

    def refuse_verbatim(self, node, detail: str = ""):
        raise self.error_at(self.verbatim_line(node), "VERBATIM",
                            "C code cannot be translated" + detail)

    def verbatim_line(self, node) -> int:
        """The line of the VERBATIM keyword opening ``node``: the k-th VERBATIM of the
        file for the k-th VERBATIM node of the tree (both in file order)."""
        nodes = self.__dict__.get("_verbatim_nodes")
        if nodes is None:
            from neuron.nmodl import ast, visitor
            nodes = self._verbatim_nodes = visitor.AstLookupVisitor().lookup(
                self.tree, ast.AstNodeType.VERBATIM)
        lines = [k + 1 for k, line in enumerate(self.lines)
                 if re.search(r"\bVERBATIM\b", line)]
        index = next((k for k, n in enumerate(nodes) if n is node), None)
        if index is None or len(lines) != len(nodes):
            return lines[0] if lines else 1
        return lines[index]
