"""The readers' registry finds a file's reader by the readers' ``SIGNS`` (only the readers whose text the file's
head holds are imported and asked): on every file each reader takes (the samples and fixtures found for it, its
seeds, its injection and hostile files), the reader ``match`` after ``match`` finds, and no reader takes a head
without its signs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import payloads as P
import registry as tests_registry
from conftest import ROOT
from renderer.annotations import registry

TEXT = "<b>x</b>&\"'·\u202e"


def _files() -> list[tuple[str, bytes]]:
    """(name, bytes) of every file the test registry gives any reader."""
    found: list[tuple[str, bytes]] = []
    for module in P.reader_modules():
        entry = tests_registry.reader(module)
        found += [(seed.name, seed.data) for seed in P.reader_seeds(module)]
        found += [entry.inject(TEXT)] if entry.inject is not None else []
        found += [entry.hostile(kind, 0) for kind in tests_registry.HOSTILE_KINDS] if entry.hostile else []
    return found


def test_every_reader_has_signs_and_no_reader_takes_a_head_without_them(tmp_path: Path) -> None:
    assert list(registry.SIGNS) == list(registry.READERS)
    files = _files()
    assert len(files) > 3 * len(registry.READERS)
    taken = {name: 0 for name in registry.READERS}
    for name, data in files:
        path = tmp_path / Path(name).name
        path.write_bytes(data)
        head = data[:registry.HEAD_CHARS].decode("utf-8-sig", "replace")
        takers = [module for module in registry.reader_modules() if module.match(path, head)]
        for module in takers:
            reader = tests_registry.registry_name(module)
            taken[reader] += 1
            assert registry.signed(reader, head), (reader, name, head[:200])
        assert registry.reader_of(path) is takers[0], name  # the first that takes it, as before
    assert all(taken.values()), taken


def test_a_generic_csv_imports_the_generic_reader_alone(tmp_path: Path) -> None:
    path = tmp_path / "latency.csv"
    path.write_text("id,latency_ms\n0,1.5\n1,2.25\n")
    code = ("import sys\nfrom renderer.annotations.registry import reader_of\n"
            f"print(reader_of({str(path)!r}).NAME)\n"
            "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('renderer.annotations.readers.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.stdout.split("\n")[:2] == ["generic", "['generic']"], done.stdout + done.stderr
