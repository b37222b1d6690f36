"""Repeated blocks in a run of operators (a flat-named transformer's layers) and the narrowest cuts of a wide level."""

from __future__ import annotations

from typing import Any

# -- repeats in a flat run ---------------------------------------------------------------------------------

BLOCK_MIN_OPS = 8
"""Fewest operators in a repeated block found in a flat run (a Conv + Relu pair repeated is no block)."""
BLOCK_MIN_REPEATS = 3
BLOCK_MAX_OPS = 1024
"""Longest block looked for: the search costs one pass over the run per candidate length."""
PLAIN_WORK = 200_000
"""Comparisons (items × candidate lengths) up to which the search runs in plain Python, not numpy."""


def repeated_spans(types: list[str], widths: list[int] | None = None, min_ops: int = BLOCK_MIN_OPS,
                   min_repeats: int = BLOCK_MIN_REPEATS, max_ops: int = BLOCK_MAX_OPS) -> list[tuple[int, int, int]]:
    """Where a run of operators repeats a block: ``(start, length, count)`` spans, in order, not overlapping.

    ``types`` is the run's op types in graph order. The span covering most operators is taken first (among
    equals, the shortest block), then the parts before and after it are searched the same way. A flat-named
    transformer's layers come out as one span of ``count`` layers; a CNN's identical bottlenecks as one per
    stage. When the part before ends like a block does (an embedding's Add + LayerNorm before layers that end
    so), the repetition starts a few operators early; with ``widths`` (tensors crossing the cut before each
    item, as ``_cut_widths`` counts them) the blocks are shifted within that slack to where their boundaries
    cross fewest tensors, the latest among equals (the part before ends with a copy of the blocks' own end):
    after the layer's last LayerNorm, not before the previous one's Add.
    """
    codes: dict[str, int] = {}
    seq: Any = [codes.setdefault(t, len(codes)) for t in types]
    if len(seq) * min(max_ops, len(seq) // min_repeats) > PLAIN_WORK:
        import numpy as np  # lazily: annograph --help stays instant

        seq = np.array(seq, dtype=np.int64)
    spans: list[tuple[int, int, int]] = []
    pending = [(0, len(types))]
    while pending:
        low, high = pending.pop()
        part = seq[low:high]
        best = (_longest_repeat if isinstance(part, list) else _longest_repeat_np)(part, min_ops, min_repeats, max_ops)
        if best is None:
            continue
        start, length, count, slack = best
        if widths is not None and slack:
            start = min(range(start, start + slack + 1),
                        key=lambda s: (sum(widths[low + s + k * length] for k in range(count + 1)), -s))
        spans.append((low + start, length, count))
        pending += [(low, low + start), (low + start + length * count, high)]
    return sorted(spans)


def _longest_repeat(seq: list[int], min_ops: int, min_repeats: int,
                    max_ops: int) -> tuple[int, int, int, int] | None:
    """``_longest_repeat_np`` in plain Python, for a run short enough (``PLAIN_WORK``) that numpy's import
    costs more than the search."""
    n = len(seq)
    best: tuple[int, int, int, int, int] | None = None
    for length in range(min_ops, min(max_ops, n // min_repeats) + 1):
        longest, first, run = 0, -1, 0
        for i, same in enumerate(map(int.__eq__, seq, seq[length:])):
            if same:
                run += 1
                continue
            if run > longest:
                longest, first = run, i - run
            run = 0
        if run > longest:
            longest, first = run, n - length - run
        if first < 0:
            continue
        span = longest + length
        count = span // length
        if count >= min_repeats and (best is None or count * length > best[0]) and \
                _primitive(seq[first:first + length]):
            best = (count * length, first, length, count, span - count * length)
    return best[1:] if best else None


def _longest_repeat_np(seq, min_ops: int, min_repeats: int,  # type: ignore[no-untyped-def]
                       max_ops: int) -> tuple[int, int, int, int] | None:
    """(start, length, count, slack) of the repeat covering most items; slack: how far it may start later."""
    import numpy as np

    n = len(seq)
    best: tuple[int, int, int, int, int] | None = None  # (covered, start, length, count, slack)
    for length in range(min_ops, min(max_ops, n // min_repeats) + 1):
        same = np.concatenate(([False], seq[:-length] == seq[length:], [False]))
        edges = np.flatnonzero(np.diff(same.astype(np.int8)))
        if not len(edges):
            continue
        starts, ends = edges[0::2], edges[1::2]
        k = int((ends - starts).argmax())
        span = int(ends[k] - starts[k]) + length
        count = span // length
        start = int(starts[k])
        if count >= min_repeats and (best is None or count * length > best[0]) and \
                _primitive(seq[start:start + length]):
            best = (count * length, start, length, count, span - count * length)
    return best[1:] if best else None


def _primitive(block) -> bool:  # type: ignore[no-untyped-def]
    """Whether ``block`` is no shorter block repeated (a chain of 8 Relu is no block of 8: it is Relu × 8)."""
    n = len(block)
    if isinstance(block, list):
        return not any(n % d == 0 and block[d:] == block[:-d] for d in range(1, n // 2 + 1))
    return not any(n % d == 0 and (block[d:] == block[:-d]).all() for d in range(1, n // 2 + 1))


# -- cutting a sequence -------------------------------------------------------------------------------------

def segment(widths: list[int], n: int, max_items: int) -> list[tuple[int, int]]:
    """Cut ``n`` items into contiguous runs ``[start, end)`` of ``max_items // 2`` to ``max_items`` items.

    ``widths[c]`` is how many tensors cross the cut before item ``c``. Each cut, taken left to right, is the
    narrowest within the allowed window; among equally narrow cuts, the one leaving a run closest to the even
    share ``n / ceil(n / max_items)``. The window keeps the remainder at least ``max_items // 2`` long, so no
    run is tiny. O(n).
    """
    if n <= max_items:
        return [(0, n)]
    if max_items < 4:  # runs of one item would not shorten the level
        return [(s, min(s + max_items, n)) for s in range(0, n, max_items)]
    least = max(1, max_items // 2)
    share = n / -(-n // max_items)
    runs: list[tuple[int, int]] = []
    start = 0
    while n - start > max_items:
        low, high = start + least, min(start + max_items, n - least)
        cut = min(range(low, high + 1), key=lambda c: (widths[c], abs(c - start - share), -c))
        runs.append((start, cut))
        start = cut
    runs.append((start, n))
    return runs
