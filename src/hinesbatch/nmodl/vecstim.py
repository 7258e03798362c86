"""NEURON's VecStim (``vecevent.mod``): a file that is a copy of it stands for the built-in.

vecevent.mod is an ARTIFICIAL_CELL whose PROCEDUREs read a hoc Vector in C (VERBATIM);
hinesbatch's built-in ``VecStim`` (:class:`~hinesbatch.network.VecStimGenerator`) plays
a train with its semantics. A file is taken for NEURON's VecStim, and not translated,
when all of these hold (comments and layout aside):

1. the NEURON block declares ``ARTIFICIAL_CELL VecStim``, optionally ``THREADSAFE``,
   ``POINTER ptr`` or ``BBCOREPOINTER ptr``, and ``RANGE delay``, and nothing else;
2. the other blocks are one ASSIGNED block declaring ``index``, ``etime`` and ``space``
   (the vector's address, in vecevent.mod up to NEURON 7) or ``ptr`` (later versions),
   INITIAL, ``NET_RECEIVE (w)``, ``PROCEDURE element()``, ``PROCEDURE play()``, and
   optionally a DESTRUCTOR and VERBATIM blocks at the top level; with ``RANGE delay``,
   also one PARAMETER block declaring ``delay = 0`` and nothing else;
3. INITIAL and NET_RECEIVE are vecevent.mod's statement for statement (:data:`NMODL`),
   or, with ``RANGE delay``, its form that queues each time ``delay`` ms later
   (:data:`NMODL_DELAY`: ``net_send(delay + etime - t, 1)``), which the built-in plays
   with a per-instance delay (``Simulation.vec_stim(times, delay=...)``,
   :class:`~hinesbatch.network.VecStimGenerator`);
4. the C of ``element()``, ``play()``, the DESTRUCTOR and each top-level VERBATIM is, once
   comments, layout, ``#if !NRNBBCORE``/``#endif`` lines and one pair of braces around the
   whole are set aside, one of vecevent.mod's versions (:data:`C_FORMS`).

A file declaring ``ARTIFICIAL_CELL VecStim`` that breaks a rule is refused with the rule
(a VecStim skipping late times, for example, is another mechanism).

The NMODL and C texts below are those of NEURON's vecevent.mod (neuronsimulator/nrn,
``share/examples/nrniv/netcon/vecevent.mod`` and its older versions; BSD-3-Clause,
Copyright (c) the NEURON authors).
"""
from __future__ import annotations

import re

from .verbatim import c_code

__all__ = ["C_FORMS", "NMODL", "NMODL_DELAY", "builtin_copy"]

#: vecevent.mod's INITIAL and NET_RECEIVE blocks.
NMODL = """
INITIAL {
    index = 0
    element()
    if (index > 0) {
        net_send(etime - t, 1)
    }
}
NET_RECEIVE (w) {
    if (flag == 1) {
        net_event(t)
        element()
        if (index > 0) {
            net_send(etime - t, 1)
        }
    }
}
"""

#: The INITIAL and NET_RECEIVE blocks of vecevent.mod with a delay added to every time.
NMODL_DELAY = NMODL.replace("net_send(etime - t, 1)", "net_send(delay + etime - t, 1)")

_ELEMENT = """
{ void* vv; int i, size; double* px;
    i = (int)index;
    if (i >= 0) {
        vv = VECTOR;
        if (vv) {
            size = vector_capacity(vv);
            px = vector_vec(vv);
            if (i < size) {
                etime = px[i];
                index += 1.;
            }else{
                index = -1.;
            }
        }else{
            index = -1.;
        }
    }
}
"""

_BBCORE = """
static void bbcore_write(double* xarray, int* iarray, int* xoffset, int* ioffset, _threadargsproto_) {
  int i, dsize, *ia;
  double *xa, *dv;
  dsize = 0;
  if (_p_ptr) {
    dsize = vector_capacity(_p_ptr);
  }
  if (iarray) {
    void* vec = _p_ptr;
    ia = iarray + *ioffset;
    xa = xarray + *xoffset;
    ia[0] = dsize;
    if (dsize) {
      dv = vector_vec(vec);
      for (i = 0; i < dsize; ++i) {
         xa[i] = dv[i];
      }
    }
  }
  *ioffset += 1;
  *xoffset += dsize;
}

static void bbcore_read(double* xarray, int* iarray, int* xoffset, int* ioffset, _threadargsproto_) {
  int dsize, i, *ia;
  double *xa, *dv;
  xa = xarray + *xoffset;
  ia = iarray + *ioffset;
  dsize = ia[0];
  if (!_p_ptr) {
    _p_ptr = vector_new1(dsize);
  }
  assert(dsize == vector_capacity(_p_ptr));
  dv = vector_vec(_p_ptr);
  for (i = 0; i < dsize; ++i) {
    dv[i] = xa[i];
  }
  *xoffset += dsize;
  *ioffset += 1;
}
"""

_ELEMENT_CXX = _ELEMENT.replace("void* vv; ", "").replace(
    "vv = VECTOR;", "auto* vv = reinterpret_cast<IvocVect*>(_p_ptr);")

_BBCORE_CXX = (_BBCORE
               .replace("  if (_p_ptr) {\n    dsize = vector_capacity(_p_ptr);",
                        "  auto* vec = reinterpret_cast<IvocVect*>(_p_ptr);\n  if (vec) {\n"
                        "    dsize = vector_capacity(vec);")
               .replace("    void* vec = _p_ptr;\n", "")
               .replace("  if (!_p_ptr) {\n    _p_ptr = vector_new1(dsize);\n  }\n"
                        "  assert(dsize == vector_capacity(_p_ptr));\n"
                        "  dv = vector_vec(_p_ptr);\n",
                        "  auto* vec = reinterpret_cast<IvocVect*>(_p_ptr);\n"
                        "  if (!vec) {\n    vec = vector_new1(dsize);\n  }\n"
                        "  assert(dsize == vector_capacity(vec));\n  dv = vector_vec(vec);\n"
                        "  _p_ptr = reinterpret_cast<double*>(vec);\n"))

#: vecevent.mod's C, per place and per name of the vector's variable (``space`` or
#: ``ptr``): its C versions, and its C++ version of NEURON 9.
C_FORMS = {
    ("element", "space"): (_ELEMENT.replace("VECTOR", "*((void**)(&space))"),),
    ("element", "ptr"): (_ELEMENT.replace("VECTOR", "(void*)(_p_ptr)"), _ELEMENT_CXX),
    ("play", "space"): ("""
        void** vv;
        vv = (void**)(&space);
        *vv = (void*)0;
        if (ifarg(1)) {
            *vv = vector_arg(1);
        }
        """,),
    ("play", "ptr"): ("""
        void** pv;
        void* ptmp = NULL;
        if (ifarg(1)) {
            ptmp = vector_arg(1);
            hoc_obj_ref(*vector_pobj(ptmp));
        }
        pv = (void**)(&_p_ptr);
        if (*pv) {
            hoc_obj_unref(*vector_pobj(*pv));
        }
        *pv = ptmp;
        """, """
        IvocVect* ptmp{};
        if (ifarg(1)) {
            ptmp = vector_arg(1);
            hoc_obj_ref(*vector_pobj(ptmp));
        }
        auto* pv = reinterpret_cast<IvocVect**>(&_p_ptr);
        if (*pv) {
            hoc_obj_unref(*vector_pobj(*pv));
        }
        *pv = ptmp;
        """),
    ("DESTRUCTOR", "ptr"): ("""
        void* vv = (void*)(_p_ptr);
        if (vv) {
            hoc_obj_unref(*vector_pobj(vv));
        }
        """, """
        auto* vv = reinterpret_cast<IvocVect*>(_p_ptr);
        if (vv) {
            hoc_obj_unref(*vector_pobj(vv));
        }
        """),
    ("top level", "space"): ("""
        extern double* vector_vec();
        extern int vector_capacity();
        extern void* vector_arg();
        """,),
    ("top level", "ptr"): (_BBCORE, _BBCORE_CXX),
}

_NAME = "VecStim"


def _c_key(text: str) -> str:
    """C compared up to comments, layout, ``#if !NRNBBCORE``/``#endif`` lines and one
    pair of braces around the whole."""
    lines = [line for line in c_code(text).splitlines()
             if not re.fullmatch(r"#\s*(if\s*!\s*NRNBBCORE|endif)", line)]
    code = " ".join(" ".join(lines).split())
    code = re.sub(r"\s*([^\w\s])\s*", r"\1", code)
    if code.startswith("{") and code.endswith("}"):
        code = code[1:-1]
    return code


def _nmodl_key(block) -> str:
    from neuron.nmodl import dsl
    return " ".join(dsl.to_nmodl(block).split())


def _reference_blocks(delay: bool = False) -> dict:
    from neuron.nmodl import dsl
    tree = dsl.NmodlDriver().parse_string(NMODL_DELAY if delay else NMODL)
    return {type(b).__name__: _nmodl_key(b) for b in tree.blocks}


def _verbatim_only(block) -> str | None:
    """The C of a block whose statements are one VERBATIM (None otherwise)."""
    stmts = [st for st in block.statement_block.statements
             if type(st).__name__ not in ("LineComment", "BlockComment")]
    if len(stmts) != 1 or type(stmts[0]).__name__ != "Verbatim":
        return None
    return stmts[0].statement.eval()


def builtin_copy(lowering, blocks) -> str | None:
    """``"VecStim"`` where the file is NEURON's VecStim (the rules of the module
    docstring; a notice says the built-in is used), None for a file that does not declare
    ``ARTIFICIAL_CELL VecStim``.

    Raises NmodlError (through ``lowering``) for a file declaring ``ARTIFICIAL_CELL
    VecStim`` that breaks a rule, naming the rule.
    """
    neuron = [b for b in blocks if type(b).__name__ == "NeuronBlock"]
    if len(neuron) != 1:
        return None
    declared = [st for st in neuron[0].statement_block.statements
                if type(st).__name__ == "Suffix"]
    if len(declared) != 1 or declared[0].type.get_node_name() != "ARTIFICIAL_CELL" \
            or declared[0].name.get_node_name() != _NAME:
        return None
    check = _Rules(lowering)
    vector = check.neuron_block(neuron[0])
    reference = _reference_blocks(check.delay)
    for b in blocks:
        check.block(b, vector, reference)
    check.counts(blocks)
    lowering.builtin_params = ("delay",) if check.delay else ()
    delay = (" with a delay per instance (Simulation.vec_stim(times, delay=...), 0 by "
             "default)") if check.delay else ""
    lowering.notices.append(f"{lowering.path}:{lowering.line_of(_AT)}: ARTIFICIAL_CELL "
                            "VecStim: NEURON's VecStim (vecevent.mod), not translated: the "
                            f"built-in VecStim is used{delay}")
    return _NAME


_AT = r"\bARTIFICIAL_CELL\s+VecStim\b"


class _Rules:
    """The rules of the module docstring, each refusing the file with its reason."""

    def __init__(self, lowering):
        self.lowering = lowering
        #: the NEURON block declares ``RANGE delay`` (the form of :data:`NMODL_DELAY`)
        self.delay = False

    def differs(self, why: str, *patterns: str, line: int | None = None):
        construct = f"ARTIFICIAL_CELL {_NAME}"
        reason = (f"not NEURON's VecStim (vecevent.mod): {why}; only a copy of vecevent.mod "
                  "(or its form with a delay) stands for the built-in VecStim, and the "
                  "C reading the hoc Vector is not translated")
        if line is not None:
            raise self.lowering.error_at(line, construct, reason)
        self.lowering.fail(construct, reason, *patterns, _AT)

    def neuron_block(self, block) -> str:
        """Rule 1; the name of the vector's variable (``space`` or ``ptr``)."""
        pointer = None
        for st in block.statement_block.statements:
            k = type(st).__name__
            if k in ("Suffix", "ThreadSafe", "LineComment", "BlockComment"):
                continue
            names = [v.get_node_name() for v in getattr(st, "variables", [])]
            if k in ("Pointer", "BbcorePointer") and names == ["ptr"] and pointer is None:
                pointer = "ptr"
                continue
            if k == "Range" and names == ["delay"] and not self.delay:
                self.delay = True
                continue
            self.differs(f"its NEURON block declares {' '.join(_text(st).split())}",
                         r"\b(RANGE|GLOBAL|USEION|NONSPECIFIC_CURRENT|POINTER|BBCOREPOINTER|"
                         r"ELECTRODE_CURRENT|EXTERNAL)\b")
        return pointer or "space"

    def block(self, b, vector: str, reference: dict) -> None:
        """Rules 2 to 4 for one block of the file."""
        k = type(b).__name__
        if k in ("NeuronBlock", "LineComment", "BlockComment"):
            return
        if k == "AssignedBlock":
            names = sorted(d.get_node_name() for d in b.definitions)
            if names != sorted(["index", "etime", vector]):
                self.differs(f"ASSIGNED declares {', '.join(names)} (vecevent.mod: index, "
                             f"etime, {vector})", r"\bASSIGNED\b")
        elif k == "ParamBlock" and self.delay:
            self.delay_parameter(b)
        elif k in ("InitialBlock", "NetReceiveBlock"):
            if _nmodl_key(b) != reference[k]:
                word = "INITIAL" if k == "InitialBlock" else "NET_RECEIVE"
                self.differs(f"its {word} block is not vecevent.mod's", rf"\b{word}\b")
        elif k == "ProcedureBlock":
            name = b.get_node_name()
            at = rf"\bPROCEDURE\s+{re.escape(name)}\b"
            if name not in ("element", "play") or list(b.parameters):
                self.differs(f"it defines PROCEDURE {name}", at)
            self.c_code(_verbatim_only(b), name, vector, f"its PROCEDURE {name}()", at)
        elif k == "DestructorBlock":
            self.c_code(_verbatim_only(b), "DESTRUCTOR", vector, "its DESTRUCTOR",
                        r"\bDESTRUCTOR\b")
        elif k == "Verbatim":
            self.c_code(b.statement.eval(), "top level", vector,
                        "a VERBATIM block at the top level",
                        line=self.lowering.verbatim_line(b))
        else:
            word = (_text(b).split() or [k])[0]
            self.differs(f"it has a {word} block", rf"\b{re.escape(word)}\b")

    def c_code(self, text, where: str, vector: str, what: str, *patterns: str,
               line: int | None = None) -> None:
        """Rule 4: ``text`` is one of vecevent.mod's versions of the C at ``where``."""
        if text is None:
            self.differs(f"{what} is not one VERBATIM block", *patterns, line=line)
        forms = C_FORMS.get((where, vector), ())
        if _c_key(text) not in {_c_key(f) for f in forms}:
            self.differs(f"the C of {what} is not vecevent.mod's", *patterns, line=line)

    def delay_parameter(self, block) -> None:
        """``PARAMETER { delay = 0 }`` (units aside), where the file declares ``RANGE
        delay``: the built-in's delay starts at 0."""
        params = [st for st in block.statements if type(st).__name__ == "ParamAssign"]
        names = [st.get_node_name() for st in params]
        if names != ["delay"]:
            self.differs(f"PARAMETER declares {', '.join(names) or 'nothing'} (a VecStim "
                         "with a delay: delay)", r"\bPARAMETER\b")
        value = float(params[0].value.eval()) if params[0].value is not None else 0.0
        if value != 0.0:
            self.differs(f"its delay is {value:g} ms by default (the built-in VecStim's "
                         "delay is 0 unless given)", r"\bdelay\s*=")

    def counts(self, blocks) -> None:
        """One ASSIGNED, INITIAL and NET_RECEIVE block, and PROCEDUREs element and play."""
        kinds = [type(b).__name__ for b in blocks]
        for k, word in (("AssignedBlock", "ASSIGNED"), ("InitialBlock", "INITIAL"),
                        ("NetReceiveBlock", "NET_RECEIVE")) \
                + ((("ParamBlock", "PARAMETER"),) if self.delay else ()):
            if kinds.count(k) != 1:
                self.differs(f"{kinds.count(k)} {word} blocks (vecevent.mod: 1)",
                             rf"\b{word}\b")
        procedures = sorted(b.get_node_name() for b in blocks
                            if type(b).__name__ == "ProcedureBlock")
        if procedures != ["element", "play"]:
            self.differs("it does not define PROCEDURE element() and PROCEDURE play() once "
                         "each", r"\bPROCEDURE\b")


def _text(node) -> str:
    """``node`` written out as NMODL."""
    from neuron.nmodl import dsl
    return dsl.to_nmodl(node)
