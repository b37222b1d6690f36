"""What ``--dim NAME=VALUE`` may name, and the one-line refusal when it names nothing.

A model's pinnable dims are its free input dims as the file declares them: an ONNX model's symbolic dims of
the main graph's inputs, a TFLite model's dynamic input axes (``axisK``, and ``batch`` for axis 0). A dim
further down the graph (``unk__3``, ``floor(height/2 - 1/2) + 1``) follows from those and cannot be pinned
by name (the "pin it" hints name input dims only, see ``metrics.input_dims``). A name that pins nothing in a
model with free input dims is an error rather than a silent no-op: a typo (``sequenc``) would otherwise leave
every shape free. A model whose inputs are all fixed loses nothing, so there it is a warning (a loop or CI job
passing ``--dim batch=1`` to every model keeps working). In a run over several models a name only needs to be
pinnable in one of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from renderer.core.errors import AnnographError, LoaderError, UsageError
from renderer.core.escape import clean

_LISTED = 12  # free dims named in the error (a model can have hundreds)
_FILES = 3  # model files named in a several-model error


def parse(items: Iterable[str]) -> dict[str, int]:
    """``["batch=1", "seq len=8", "a=b=4"]`` → {"batch": 1, "seq len": 8, "a=b": 4}: split at the last ``=``, as
    the value is a whole number and a dim name may hold spaces and ``=``."""
    from renderer.core.id_rules import whole_number

    dims: dict[str, int] = {}
    for item in items:
        name, sep, value = item.rpartition("=")
        number = whole_number(value)
        if not sep or not name.strip() or number is None:
            raise UsageError(f"--dim {item!r}: expected NAME=VALUE with a whole number (ASCII digits), "
                                 "e.g. batch=1")
        dims[name] = number
    return dims


def matching(name: str, names: Sequence[str]) -> str | None:
    """The dim of ``names`` that ``--dim name=…`` pins: the same name, else the same once the spaces around the
    given one are dropped (``--dim " batch=1"``)."""
    if name in names:
        return name
    stripped = name.strip()
    return stripped if stripped in names else None


def resolve(path: object, dims: Mapping[str, int] | None, names: Sequence[str], inner: Iterable[str] = (),
            check: bool = True) -> dict[str, int]:
    """``dims`` keyed by the model's own names; with ``check``, a LoaderError for a name that pins nothing
    (``inner``: the file's other symbolic dims, for a better word on those) or a warning when the model has no
    free input dims; without, such names are dropped."""
    resolved: dict[str, int] = {}
    for name, value in (dims or {}).items():
        found = matching(name, names)
        if found is not None:
            resolved[found] = value
        elif check and not names:
            _warn_idle([path], name, value)
        elif check:
            raise LoaderError(refusal([path], name, value, names, set(inner)))
    return resolved


def check_union(paths: Sequence[object], dims: Mapping[str, int], names: Sequence[Sequence[str]]) -> None:
    """An AnnographError for the first name of ``dims`` that is pinnable in none of the models (``names[i]``
    are those of ``paths[i]``); a warning instead when none of them has a free input dim."""
    every = list(dict.fromkeys(n for per_model in names for n in per_model))
    for name, value in dims.items():
        if matching(name, every) is None and not every:
            _warn_idle(paths, name, value)
        elif matching(name, every) is None:
            raise AnnographError(refusal(paths, name, value, every))


def idle(paths: Sequence[object], name: str, value: int) -> str:
    """The one line saying ``--dim name=value`` is ignored: the model(s) at ``paths`` have no free input dim."""
    return f"{refusal(paths, name, value, [])}; ignored"


def _warn_idle(paths: Sequence[object], name: str, value: int) -> None:
    from renderer.core.progress import warn

    warn(idle(paths, name, value))


def refusal(paths: Sequence[object], name: str, value: int, names: Sequence[str], inner: set[str] = frozenset()) -> str:  # type: ignore[assignment]
    """The one line saying ``--dim name=value`` pins nothing in the model(s) at ``paths``."""
    files = ", ".join(str(p) for p in paths[:_FILES])
    files += f" and {len(paths) - _FILES} more" if len(paths) > _FILES else ""
    flag = f"--dim {clean(f'{name}={value}', 120)!r}"
    one = len(paths) == 1
    listed = ", ".join(repr(clean(n, 60)) for n in names[:_LISTED]) + (", …" if len(names) > _LISTED else "")
    if not names:
        whose = "this model has no" if one else f"none of these {len(paths)} models has"
        return f"{files}: {flag} pins nothing: {whose} free input dims (every input shape is fixed)"
    theirs = f"{'its' if one else 'their'} free input dims are {listed}"
    if name in inner or name.strip() in inner:
        return (f"{files}: {flag} names a dim inside the graph, not an input's: it follows from the free input "
                f"dims, so pin those ({listed})")
    import difflib

    close = difflib.get_close_matches(name, list(names), n=1, cutoff=0.6)
    guess = f" (did you mean {clean(close[0], 60)!r}?)" if close else ""
    whose = "this model has no" if one else f"none of these {len(paths)} models has a"
    return f"{files}: {flag} pins nothing: {whose} free input dim called {clean(name, 80)!r}{guess}; {theirs}"


__all__ = ["check_union", "idle", "matching", "parse", "refusal", "resolve"]
