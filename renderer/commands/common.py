"""Argument helpers shared by the commands."""

from __future__ import annotations

import argparse
import sys

from ..errors import AnnographError


def parse_dims(items: list[str]) -> dict[str, int]:
    """``["batch=1", "seq=128"]`` → {"batch": 1, "seq": 128}."""
    dims: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip().isdigit():
            raise AnnographError(f"--dim {item!r}: expected NAME=VALUE with a whole number, e.g. batch=1")
        dims[name.strip()] = int(value)
    return dims


def add_annotation_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-a", "--annotations", action="append", default=[], metavar="FILE",
                        help="annotation file (repeatable; JSON, YAML, CSV, or a tool's own output)")
    parser.add_argument("--annotations-format", metavar="NAME",
                        help="read every -a file with this reader instead of detecting it")
    parser.add_argument("--strict", action="store_true", help="ids that match nothing are an error")
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                        help="pin a symbolic dimension (repeatable), e.g. --dim batch=1")


def warn(message: str) -> None:
    print(f"annograph: {message}", file=sys.stderr)
