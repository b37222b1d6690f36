"""Writing outputs so that a failed run never leaves a half-written file or loses an existing one."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from renderer.core.errors import RenderError

PathLike = str | Path


def write_bytes(path: PathLike, data: bytes, inputs: Iterable[PathLike] = ()) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path`` (never over one of
    ``inputs``)."""
    write_all([(path, data)], inputs)


def write_text(path: PathLike, text: str, inputs: Iterable[PathLike] = ()) -> None:
    write_bytes(path, text.encode("utf-8"), inputs)


def refuse_inputs(outputs: Iterable[PathLike], inputs: Iterable[PathLike]) -> None:
    """RenderError when an output is the same file as an input (the model, an annotation file, a sidecar).

    Files are compared by device and inode, so another spelling (``./m.onnx``, ``a/../m.onnx``), a symlink
    or a hard link to the input is caught too; an output that does not exist yet is never an input.
    """
    seen = {identity: str(path) for path in inputs if (identity := _identity(path)) is not None}
    for output in outputs:
        source = seen.get(_identity(output))  # type: ignore[arg-type]
        if source is not None:
            same = "" if os.path.normpath(source) == os.path.normpath(str(output)) else f" ({source})"
            raise RenderError(f"{output}: is an input of this run{same}; write the output to another file")


def refuse_missing_folders(outputs: Iterable[PathLike | None]) -> None:
    """RenderError when an output's folder does not exist: said before the model is loaded and drawn (a big
    model's render takes seconds), in the words the write would use."""
    for output in outputs:
        if output is not None:
            _folder_of(Path(output))


def _folder_of(path: Path) -> Path:
    """The folder ``path`` is written in; RenderError when it does not exist."""
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise RenderError(f"{path}: the folder {directory} does not exist")
    return directory


def _identity(path: PathLike) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino


def write_all(
    items: Sequence[tuple[str | Path, bytes | dict[str, bytes]]], inputs: Iterable[PathLike] = (),
) -> None:
    """Write several files, and folders of files (``{file name: bytes}``), all or nothing: everything is
    written to temporary names first, and only when all is complete renamed over the targets. A failure
    before that leaves every target untouched and removes the temporary files. A folder replaces the one
    there before, which may hold only page files of the kinds written (exactly the names a former run
    wrote), never anything else; no other target may lie inside it. (The renames themselves, within one
    folder each, do not fail in practice.)
    No target, and no file of a folder replaced, may be one of ``inputs`` (``refuse_inputs``): then nothing
    is written.
    """
    inputs = list(inputs)
    refuse_inputs([path for path, _ in items], inputs)
    for k, (path, data) in enumerate(items):
        if isinstance(data, dict):
            _check_folder(Path(path), data, inputs)
            refuse_inside(Path(path), [Path(other) for j, (other, _) in enumerate(items) if j != k])
    staged: list[tuple[str, Path]] = []
    try:
        for path, data in items:
            if isinstance(data, dict):
                staged.append((_stage_folder(Path(path), data), Path(path)))
            else:
                staged.append((_stage(Path(path), data), Path(path)))
        for temp, path in staged:
            try:
                if os.path.isdir(temp):
                    _swap_folder(temp, path)
                else:
                    os.replace(temp, path)
            except OSError as e:
                raise RenderError(f"{path}: cannot write ({e.strerror})") from None
    except BaseException:
        for temp, _ in staged:
            _remove(temp)
        raise


def _check_folder(path: Path, files: dict[str, bytes], inputs: list[PathLike]) -> None:
    """RenderError unless the folder ``path`` may be replaced by ``files``: it does not exist, or holds only
    page files of the kinds written (``page_names.is_page_file``: exactly the names a former run wrote, so
    ``page-notes.dot`` is kept), none of them an input of this run."""
    from renderer.files.page_names import is_page_file

    if path.exists() and not path.is_dir():
        raise RenderError(f"{path}: exists and is not a folder; the pages cannot be written there")
    if not path.is_dir():
        return
    kinds = {Path(name).suffix.lstrip(".") for name in files} or {"svg"}
    held = sorted(path.iterdir())
    foreign = [p.name for p in held if not (p.is_file() and is_page_file(p.name, kinds))]
    if foreign:
        raise RenderError(f"{path}: holds files annograph did not write ({foreign[0]}…); "
                          "move them, or choose another output name")
    refuse_inputs([*held, *(path / name for name in files)], inputs)


def refuse_inside(folder: Path, others: list[Path]) -> None:
    """RenderError when another output of the run is the folder ``folder`` or inside it (replacing the folder
    would take it away)."""
    home = os.path.realpath(folder)
    for other in others:
        where = os.path.realpath(other)
        if where == home or where.startswith(home + os.sep):
            raise RenderError(f"{other}: is inside the pages folder {folder} that this run writes; write it "
                              "elsewhere")


def _stage_folder(path: Path, files: dict[str, bytes]) -> str:
    directory = _folder_of(path)
    try:
        temp = tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as e:
        raise RenderError(f"{path}: cannot write ({e.strerror})") from None
    try:
        os.chmod(temp, 0o755)
        for name, data in files.items():
            with open(os.path.join(temp, name), "wb") as f:
                f.write(data)
            os.chmod(os.path.join(temp, name), 0o644)
    except BaseException:
        _remove(temp)
        raise
    return temp


def _swap_folder(temp: str, path: Path) -> None:
    """Put the staged folder ``temp`` at ``path``. A symlink there is replaced (as a file's would be): the link
    goes, and the folder it pointed to is left as it was."""
    old = None
    if path.is_dir() or path.is_symlink():
        old = tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent if str(path.parent) else ".")
        os.rmdir(old)
        os.replace(path, old)
    os.replace(temp, path)
    if old is not None:
        _remove(old)


def _stage(path: Path, data: bytes) -> str:
    """A complete temporary copy of ``data`` beside ``path``; its name."""
    directory = _folder_of(path)
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as e:
        raise RenderError(f"{path}: cannot write ({e.strerror})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(temp, 0o644)
    except OSError as e:
        _remove(temp)
        raise RenderError(f"{path}: cannot write ({e.strerror})") from None
    except BaseException:
        _remove(temp)
        raise
    return temp


def _remove(temp: str) -> None:
    try:
        if os.path.isdir(temp) and not os.path.islink(temp):
            shutil.rmtree(temp, ignore_errors=True)
        else:
            os.unlink(temp)
    except OSError:
        pass
