"""``renderer/files/zip_members.py``: a zip bomb in the zips annograph reads JSON from (an ExecuTorch ETRecord,
a torch.export archive) is refused from its directory entry, in one line naming the file and the member, before
it inflates; stored members (as executorch and torch write them) and deflated real JSON pass."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from conftest import FIXTURES, one_line_error, run_cli
from renderer.core.errors import LoaderError
from renderer.files.zip_members import MAX_INFLATION, check_inflation

EXECUTORCH = FIXTURES / "executorch"
BOMB_BYTES = 64 << 20
"""What the bomb's member declares: 64 MiB of a JSON list of zeros (about 64 KiB deflated)."""


def _bomb(zipped: zipfile.ZipFile, name: str) -> None:
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    with zipped.open(info, "w") as member:
        member.write(b"[ ")
        member.write(b"0," * ((BOMB_BYTES - 4) // 2))
        member.write(b"0]")


def _etrecord_bomb(path: Path) -> Path:
    """The portable program's ETRecord with its edge program replaced by the bomb (deflated)."""
    with zipfile.ZipFile(EXECUTORCH / "portable.etrecord") as source, \
            zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            if info.filename == "edge_dialect_exported_program/forward":
                _bomb(out, info.filename)
            else:
                out.writestr(info.filename, source.read(info))
    return path


def _pt2_bomb(path: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        out.writestr("m/archive_format", "pt2")
        _bomb(out, "m/models/model.json")
    return path


@pytest.mark.parametrize("kind", ["etrecord", "pt2"])
def test_a_zip_bomb_is_one_line_naming_the_file_and_member(tmp_path: Path, kind: str) -> None:
    """``render`` with the bomb: exit 1, one line naming the file and the member with both sizes, no output."""
    if kind == "etrecord":
        bomb = _etrecord_bomb(tmp_path / "bomb.etrecord")
        args, member = [EXECUTORCH / "portable.pte", "--etrecord", bomb], "edge_dialect_exported_program/forward"
    else:
        bomb = _pt2_bomb(tmp_path / "bomb.pt2")
        args, member = [bomb], "m/models/model.json"
    info = zipfile.ZipFile(bomb).getinfo(member)
    assert info.file_size == BOMB_BYTES and info.file_size > MAX_INFLATION * info.compress_size
    run = run_cli("render", *args, "-o", tmp_path / "out.svg", "-q", "--no-layout-cache")
    line = one_line_error(run)
    assert run.returncode == 1 and str(bomb) in line and repr(member) in line, run.stderr
    assert f"{BOMB_BYTES:,}" in line and f"{info.compress_size:,}" in line, line
    assert not (tmp_path / "out.svg").exists()


def test_stored_and_deflated_real_members_pass(tmp_path: Path) -> None:
    """The fixtures' ETRecords (stored) and the same deflated (real JSON, about 8 times smaller) are read alike:
    the program renders with either, with the ETRecord's names."""
    deflated = tmp_path / "deflated.etrecord"
    with zipfile.ZipFile(EXECUTORCH / "portable.etrecord") as source, \
            zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            check_inflation(info, source.filename or "", LoaderError, "entry")
            out.writestr(info.filename, source.read(info))
    ratios = [i.file_size / i.compress_size for i in zipfile.ZipFile(deflated).infolist() if i.compress_size]
    assert max(ratios) > 4
    svgs = []
    for record in (EXECUTORCH / "portable.etrecord", deflated):
        out = tmp_path / f"{record.stem}.svg"
        run = run_cli("render", EXECUTORCH / "portable.pte", "--etrecord", record, "-o", out, "-q")
        assert run.returncode == 0, run.stderr
        svgs.append(out.read_bytes())
    assert svgs[0] == svgs[1] and b"aten_convolution_default" in svgs[0]
