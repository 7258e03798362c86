"""Make translated NMODL mechanisms usable by name (:func:`load_mechanisms`).

A file is translated once per content: translations are kept under the SHA-256 of the
file's bytes, so loading the same file again (or a copy of it) costs a dictionary look-up;
the engine's Numba module is in turn cached under the hash of its generated source.
"""
from __future__ import annotations

import dataclasses
import hashlib
import warnings
from pathlib import Path

from .. import mechanisms as _mechanisms
from ..mechanisms.builtins import BUILTINS
from .lower import NmodlError, Translation, translate_text

__all__ = ["NmodlNotice", "load_mechanisms"]

#: First type order of loaded mechanisms: after every built-in, as NEURON numbers the
#: types nrnivmodl registers after its own.
USER_ORDER = 1000

_TRANSLATIONS: dict = {}      # sha256 of the file's bytes -> Translation


class NmodlNotice(UserWarning):
    """A translated file runs with a documented change (for example a GLOBAL that a block
    writes, stored per instance)."""


def translation(path) -> Translation:
    """The translation of ``path``, from the cache when its content was seen before."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise NmodlError(path, 1, "file", f"cannot be read ({err.strerror})") from None
    key = hashlib.sha256(data).hexdigest()
    hit = _TRANSLATIONS.get(key)
    if hit is None:
        hit = translate_text(data.decode("utf-8", errors="replace"), str(path))
        _TRANSLATIONS[key] = hit
    if hit.path != str(path):      # the same content under another name: its own messages
        hit = dataclasses.replace(hit, path=str(path), notices=[
            str(path) + n[len(hit.path):] if n.startswith(hit.path + ":") else n
            for n in hit.notices])
    return hit


def mod_files(path) -> list[Path]:
    """``path`` itself (a ``.mod`` file) or the ``.mod`` files of a folder, sorted by name
    (the order nrnivmodl registers them in)."""
    path = Path(path)
    if path.is_dir():
        return sorted(path.glob("*.mod"), key=lambda p: p.name)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    return [path]


def load_mechanisms(path, *, replace: bool = False, strict: bool = True) -> list[str]:
    """Translate NMODL files and register their mechanisms under their NEURON names.

    After this, the names work wherever the built-ins' do: ``Cell.insert("kdr")``,
    ``Cell.place("AMPA", ...)``, ``cell.set("gbar_kdr", ...)``, recordings such as
    ``"m_kdr"``, and ``hinesbatch.mechanisms.get``/``names``.

    Parameters
    ----------
    path : str or Path
        A ``.mod`` file or a folder (its ``*.mod`` files, in name order).
    replace : bool
        Let a file's mechanism replace a built-in of the same name (``hh``, ``pas``,
        ``IClamp``, ...) or a mechanism loaded before from different content. Without it
        such a clash raises ``ValueError``.
    strict : bool
        Raise on the first file that cannot be translated; ``False`` skips such files
        with an :class:`NmodlNotice` each.

        A file that is NEURON's own copy of a built-in (vecevent.mod's ``VecStim``,
        :mod:`hinesbatch.nmodl.vecstim`) is skipped with an :class:`NmodlNotice` naming
        it: the built-in keeps its name, whatever ``replace`` says.

    Returns
    -------
    list of str
        The names registered, in load order.

    Raises
    ------
    NmodlError
        A file cannot be translated (``file:line: construct: reason``), with ``strict``.
    ValueError
        A name clashes with a built-in or another loaded mechanism and ``replace`` is
        False; two files of the folder define the same name.
    FileNotFoundError
        ``path`` does not exist.

    Notes
    -----
    Nothing is registered unless every file passes (with ``strict``) and no name clashes.
    """
    translations, builtins = [], []
    for f in mod_files(path):
        try:
            tr = translation(f)
        except NmodlError as err:
            if strict:
                raise
            warnings.warn(f"skipped: {err}", NmodlNotice, stacklevel=2)
            continue
        (builtins if tr.builtin is not None else translations).append(tr)
    for tr in builtins:        # NEURON's own file of a built-in: the built-in stays
        for notice in tr.notices:
            warnings.warn(notice, NmodlNotice, stacklevel=2)
    seen: dict = {}
    for tr in translations:
        name = tr.mechanism.name
        if name in seen:
            raise ValueError(f"{tr.path}: mechanism {name!r} is also defined by {seen[name]}")
        seen[name] = tr.path
        if replace:
            continue
        if name in BUILTINS:
            raise ValueError(f"{tr.path}: mechanism {name!r} is a built-in; pass "
                             "replace=True to use the file's instead")
        old = _mechanisms.registered(name)
        if old is not None and _without_order(old) != _without_order(tr.mechanism):
            raise ValueError(f"{tr.path}: mechanism {name!r} was loaded before from other "
                             "content; pass replace=True to use this file's")
    names = []
    for tr in translations:
        mech = tr.mechanism
        for notice in tr.notices:
            warnings.warn(notice, NmodlNotice, stacklevel=2)
        if mech.name in BUILTINS:     # keep the built-in's keyword names (IClamp's delay)
            mech = dataclasses.replace(mech, aliases={
                **{k: v for k, v in BUILTINS[mech.name].aliases.items()
                   if v in mech.parameter_names}, **mech.aliases})
        old = _mechanisms.registered(mech.name)
        if old is not None:
            order = old.order
        elif mech.name in BUILTINS:
            order = BUILTINS[mech.name].order
        else:
            order = USER_ORDER + _mechanisms.registered_count()
        _mechanisms.register(dataclasses.replace(mech, order=order), replace=True)
        names.append(mech.name)
    return names


def _without_order(mech):
    return dataclasses.replace(mech, order=0)
