"""One-line messages from other libraries' exceptions (``renderer.core.errors``): the first line, cut after a
whole word with "…" when it is longer than the room."""

from __future__ import annotations

import pytest

from renderer.core.errors import cut, first_line


@pytest.mark.parametrize(("text", "limit", "expected"), [
    ("short enough", 20, "short enough"),
    ("Failed to construct locale with name:en_US.UTF-8", 30, "Failed to construct locale…"),
    ("one, two, three four", 12, "one, two…"),  # no comma left before the ellipsis
    ("a" * 40, 10, "a" * 9 + "…"),  # a word longer than half the room is cut inside
])
def test_a_long_line_is_cut_after_a_whole_word(text: str, limit: int, expected: str) -> None:
    assert cut(text, limit) == expected
    assert len(cut(text, limit)) <= limit


def test_first_line_is_the_first_line_cut_or_the_type_name() -> None:
    assert first_line(ValueError("first line\nsecond")) == "first line"
    assert first_line(ValueError("word " * 100), 50) == ("word " * 9).strip() + "…"
    assert first_line(KeyError()) == "KeyError" and first_line(OSError(), empty="") == ""
