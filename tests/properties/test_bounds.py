"""Issue 19: every child run under one resource policy (``renderer/loaders/isolated.py``), ``compare`` in the child,
and ``.npz`` files read from their headers first (``renderer.files.inputs.NpzArchive``).

The hostile models are a few hundred bytes (``hostile_models.py``); the limits are set low through
``ANNOGRAPH_RUN_MEMORY`` / ``ANNOGRAPH_RUN_SECONDS`` so that each case ends in seconds. The memory each takes with
the defaults is measured in ``benchmarks/bench_bounds.py``.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

import hostile_models as H
from conftest import ONNX, ROOT, escaping_external_data, one_line_error, run_cli
from renderer.core.errors import AnnographError
from renderer.files import inputs
from renderer.loaders import isolated
from renderer.loaders.registry import load_model

LOW = {"ANNOGRAPH_RUN_MEMORY": "160MiB", "ANNOGRAPH_RUN_SECONDS": "20"}


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# ---- the policy -----------------------------------------------------------------------------------------------


def test_a_tiny_model_gets_the_floor_and_the_machine_caps_everything() -> None:
    assert isolated.limits(300).memory == min(isolated.FLOOR + 1200, int(isolated.available_memory() * 0.8))
    assert isolated.limits(10**15).memory <= isolated.available_memory()
    assert isolated.limits(0, 5.0).seconds == 5.0 and isolated.limits(10**9).seconds > isolated.SECONDS


def test_the_address_space_limit_of_this_process_caps_a_run() -> None:
    """``ulimit -v`` (RLIMIT_AS) is part of what the machine allows: a run never plans beyond it."""
    code = ("import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, resource.RLIM_INFINITY));"
            "from renderer.loaders import isolated; print(isolated.limits(10**12).memory)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert 0 < int(done.stdout) <= int((3 << 30) * isolated.MACHINE_SHARE)


def test_cgroup_limits_count_usage(tmp_path: Path) -> None:
    limit, usage = tmp_path / "memory.max", tmp_path / "memory.current"
    usage.write_text("300\n")
    for text, expected in (("1000\n", 700), ("max\n", None), (f"{1 << 62}\n", None), ("200\n", 0)):
        limit.write_text(text)
        assert isolated._headroom(limit, usage) == expected


def test_overrides_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANNOGRAPH_RUN_MEMORY", "256MiB")
    monkeypatch.setenv("ANNOGRAPH_RUN_SECONDS", "7")
    assert isolated.limits(10**9) == isolated.Limits(256 << 20, 7.0, "what ANNOGRAPH_RUN_MEMORY sets")
    monkeypatch.setenv("ANNOGRAPH_RUN_MEMORY", "lots")
    with pytest.raises(AnnographError, match="ANNOGRAPH_RUN_MEMORY: 'lots' is not a size"):
        isolated.limits(0)


def test_the_memory_line_says_where_the_limit_came_from() -> None:
    line = isolated.over_memory("LiteRT", isolated.Limits(1 << 30, 30.0))
    assert line == ("LiteRT needed more than the 1.0 GiB of memory its run may take (what the model's sizes explain; "
                    "set ANNOGRAPH_RUN_MEMORY to allow more)")
    machine = isolated.Limits(1 << 30, 30.0, "what the machine has available now")
    assert isolated.over_memory("LiteRT", {"memory": 1 << 30, "seconds": 3, "memory_from": machine.memory_from}) == (
        "LiteRT needed more than the 1.0 GiB of memory its run may take (what the machine has available now)")


def test_a_child_killed_by_a_signal_is_one_line() -> None:
    limit = isolated.Limits(1 << 30, 30.0)
    abort = isolated._died(-6, "onnxruntime", "to run the model", limit)
    assert abort == ("onnxruntime stopped with SIGABRT to run the model, under a limit of 1.0 GiB of memory (what "
                     "the model's sizes explain)")
    assert isolated._died(-24, "LiteRT", "to prepare the model", limit) == (
        "LiteRT took over 30 s of CPU time to prepare the model (set ANNOGRAPH_RUN_SECONDS to allow more)")
    assert isolated._died(3, "LiteRT", "to prepare the model", limit) == "LiteRT failed on the model (exit status 3)"


def test_an_abort_after_a_failed_allocation_is_over_memory_another_ends_with_what_the_child_said() -> None:
    """A runtime's ``std::bad_alloc`` thrown on its own thread aborts the child (seen on CI under a 1 MiB limit):
    that is its memory limit, said as for a caught one. Any other death ends with the child's last stderr line,
    made printable."""
    limit = isolated.Limits(1 << 20, 30.0, "what ANNOGRAPH_RUN_MEMORY sets")
    said = "[ WARNING ] x\nterminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\n"
    over = isolated.over_memory("OpenVINO", limit)
    assert isolated._died(-6, "OpenVINO", "to reshape the model", limit, said) == over
    crash = isolated._died(-11, "OpenVINO", "to reshape the model", limit, "first\nSegmentation in \x1b[31mkernel\n\n")
    assert crash.endswith("(what ANNOGRAPH_RUN_MEMORY sets): Segmentation in \\x1b[31mkernel"), crash
    assert isolated._died(2, "LiteRT", "to prepare the model", limit, "bad flag\n") == (
        "LiteRT failed on the model (exit status 2): bad flag")


def test_a_growing_loop_ends_the_shape_run_at_its_memory_limit(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 19: a 514-byte model whose Loop emits 256 KiB a step made a plain render use 9.6 GB for ~90 s under
    the old fixed 10 GiB cap; now the run stops where the model's sizes stop explaining its memory."""
    monkeypatch.setenv("ANNOGRAPH_RUN_MEMORY", "160MiB")
    path = _write(tmp_path / "growing.onnx", H.growing_loop())
    started = time.monotonic()
    model = load_model(path)
    assert time.monotonic() - started < 30
    (note,) = model.notes
    assert ("for them: onnxruntime needed more than the 160.0 MiB of memory its run may take (what "
            "ANNOGRAPH_RUN_MEMORY sets; raise it to allow more)") in note, note


def test_a_loop_of_2_62_steps_ends_at_the_time_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANNOGRAPH_RUN_SECONDS", "2")
    path = _write(tmp_path / "endless.onnx", H.endless_loop())
    started = time.monotonic()
    (note,) = load_model(path).notes
    assert time.monotonic() - started < 60  # a hang bound: the run's 2 s of CPU and its start take ~2 s here
    assert ("for them: onnxruntime took over 2 s of CPU time to run the model (set ANNOGRAPH_RUN_SECONDS to allow "
            "more)"
            in note), note


# ---- npz files ------------------------------------------------------------------------------------------------


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _zip(path: Path, members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _refused(path: Path, limit: int | None = None) -> str:
    with pytest.raises(AnnographError) as caught:
        inputs.NpzArchive(path, AnnographError, "an inputs file", limit=limit)
    message = str(caught.value)
    assert "\n" not in message and len(message) < len(str(path)) + 250 and message.startswith(str(path)), message
    return message


def test_a_zip_bomb_is_refused_from_its_headers(tmp_path: Path) -> None:
    """Issue 19: a 1 MB file took 1.1 GB, growing with each member; now the declared sizes are summed first."""
    zeros = _npy(np.zeros(1 << 26, np.uint8))  # 64 MiB each, deflated to ~64 KiB
    bomb = _zip(tmp_path / "bomb.npz", {f"a{i}.npy": zeros for i in range(3)})
    assert bomb.stat().st_size < 1 << 20
    import tracemalloc

    tracemalloc.start()
    message = _refused(bomb, limit=128 << 20)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert "its members would inflate to 192.0 MiB, more than annograph reads as an inputs file (128.0 MiB)" in message
    assert peak < 8 << 20, peak


def test_arrays_are_inflated_one_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "two.npz"
    np.savez_compressed(path, a=np.arange(4, dtype=np.float32), b=np.ones((2, 3), np.int64))
    with inputs.NpzArchive(path, AnnographError, "a tensor dump") as archive:
        assert archive.names == ["a", "b"] and archive.shape("b") == (2, 3) and archive.nbytes("b") == 48
        assert archive.array("a").tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("array, said", [
    (np.array(["a", "b"]), "holds string values, not numbers"),
    (np.array([b"a"]), "holds byte string values, not numbers"),
    (np.zeros(2, dtype=[("a", "i4"), ("b", "f4")]), "holds structured values, not numbers"),
    (np.zeros(2, dtype="V4"), "holds raw (void) values, not numbers"),
])
def test_arrays_that_are_not_numbers_are_one_line(array: np.ndarray, said: str, tmp_path: Path) -> None:
    """Issue 19 item 11: these were 'internal error' lines."""
    path = _zip(tmp_path / "odd.npz", {"x.npy": _npy(array)})
    assert _refused(path) == f"{path}: array 'x': {said}"


def test_compare_says_external_data_was_refused(tmp_path: Path) -> None:
    """Issue 19 item 12: a location leaving the model's folder was reported as "not an ONNX model"."""
    path = escaping_external_data(tmp_path)
    error = one_line_error(run_cli("compare", path, path, "-o", tmp_path / "e.json"))
    assert f"{path}: its external data was refused or cannot be read (" in error and "points outside" in error
    assert "not an ONNX model" not in error


def test_what_is_not_an_npz_says_so(tmp_path: Path) -> None:
    text = _write(tmp_path / "notes.npz", b"operators: []\n" * 20)
    message = _refused(text)
    assert "not an .npz file" in message and "pickle" not in message and "unsafe" not in message
    member = _zip(tmp_path / "readme.npz", {"readme.txt": b"hello"})
    assert _refused(member) == (f"{member}: member 'readme.txt' is not a .npy array (an inputs file holds one .npy "
                                "file per array)")
    np.save(tmp_path / "one.npy", np.zeros(3))
    assert "a single .npy array" in _refused(tmp_path / "one.npy")


def test_a_hostile_header_gives_a_short_line(tmp_path: Path) -> None:
    """Issue 19 item 12: a 2,000-character error line from an npz header."""
    header = "{'descr': '<" + "f" * 2000 + "', 'fortran_order': False, 'shape': (3,), }"
    raw = b"\x93NUMPY\x01\x00" + (len(header) + 1).to_bytes(2, "little") + header.encode() + b"\n"
    message = _refused(_zip(tmp_path / "long.npz", {"x" * 3000 + ".npy": raw}))
    assert "not a readable .npy header" in message
    huge = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + "9" * 2000 + ",), }"
    raw = b"\x93NUMPY\x01\x00" + (len(huge) + 1).to_bytes(2, "little") + huge.encode() + b"\n"
    message = _refused(_zip(tmp_path / "promise.npz", {"x.npy": raw}))
    assert "its header promises over 2^" in message and "more than the member's" in message


def _many_members(path: Path, count: int, claim: int) -> Path:
    """An npz of ``count`` one-float members (stored) whose zip64 end record and end record say ``claim`` members,
    written byte by byte (zipfile takes ~20 s for 150,000 members)."""
    import struct
    import zlib

    data = _npy(np.zeros(1, np.float32))
    crc = zlib.crc32(data)
    local, central = bytearray(), bytearray()
    for i in range(count):
        name = f"a{i}.npy".encode()
        offset = len(local)
        local += struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0x21, crc, len(data), len(data), len(name), 0)
        local += name + data
        central += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0x21, crc, len(data), len(data),
                               len(name), 0, 0, 0, 0, 0, offset) + name
    start, end64 = len(local), len(local) + len(central)
    tail = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, claim, claim, len(central), start)
    tail += struct.pack("<4sLQL", b"PK\x06\x07", 0, end64, 1)
    tail += struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    path.write_bytes(bytes(local + central + tail))
    return path


@pytest.mark.parametrize("claim", [150_000, 1])
def test_members_are_counted_in_the_directory_not_taken_from_the_end_record(claim: int, tmp_path: Path) -> None:
    """Issue 31: 150,000 members were refused, but with the zip64 end record's counts patched to 1 every header
    was read (9.4 s, 200 MB) before "no array for input"."""
    import tracemalloc

    path = _many_members(tmp_path / "many.npz", 150_000, claim)
    tracemalloc.start()
    message = _refused(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert message == f"{path}: more than {inputs.NPZ_MEMBERS} members, more than annograph reads as an inputs file"
    assert peak < 32 << 20, peak  # the directory (7 MiB), not 150,000 ZipInfo objects


def test_array_names_are_checked_before_any_header_is_read(tmp_path: Path) -> None:
    """A member that is not the model's input is refused by its name: its header (garbage here) is never read."""
    path = _zip(tmp_path / "names.npz", {"x.npy": _npy(np.zeros(4, np.float32)), "other.npy": b"not an array"})
    error = one_line_error(run_cli("metrics", _four_input_model(tmp_path), "--inputs", path, "-o", tmp_path / "m.json"))
    assert f"{path}: array 'other' is not an input of the model (inputs: x)" in error


def _four_input_model(folder: Path) -> Path:
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "four",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, folder / "four.onnx")
    return folder / "four.onnx"


def _declaring(path: Path, shape: tuple[int, ...], descr: str = "<f4") -> Path:
    """An npz whose member ``x`` declares ``shape`` and holds that many zero bytes, deflated (to ~1/1000)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        with archive.open("x.npy", "w", force_zip64=True) as member:
            np.lib.format.write_array_header_1_0(member, {"descr": descr, "fortran_order": False, "shape": shape})
            left = int(np.prod(shape)) * np.dtype(descr).itemsize
            zeros = bytes(1 << 22)
            while left > 0:
                member.write(zeros[:left])
                left -= len(zeros)
    return path


@pytest.mark.parametrize("command", ["metrics", "compare"])
def test_a_member_that_cannot_feed_its_input_is_refused_from_its_header(command: str, tmp_path: Path) -> None:
    """Issue 27 item 9: a 1 MiB --inputs file whose member declares 2^26 float32 for an input of [4] was inflated
    (2^28: 1.1 GB) before anything noticed; now its header is refused, naming both shapes, before inflating."""
    model = _four_input_model(tmp_path)
    path = _declaring(tmp_path / "big.npz", (1 << 26,))
    assert path.stat().st_size < 2 << 20
    args = [model, "--inputs", path] if command == "metrics" else [model, model, "--inputs", path]
    # the peak of this process alone (VmHWM: ru_maxrss would keep pytest's peak across the exec)
    # cli.main, not the console entry: that one ends with os._exit, before a finally could print the peak
    code = ("import sys; from renderer.commands.cli import main; "
            "exec('try:\\n status = main(sys.argv[1:])\\nfinally:\\n "
            "print(next(l.split()[1] for l in open(\"/proc/self/status\") if l.startswith(\"VmHWM\")), "
            "file=sys.stderr)'); sys.exit(status)")
    done = subprocess.run([sys.executable, "-c", code, command, *map(str, args), "-o", str(tmp_path / "o.json")],
                          capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    *said, peak = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(said) == 1, done.stderr
    assert f"{path}: array 'x' is 67108864, but the model's input is 4" in said[0], said
    assert int(peak) < 200 << 10, f"{int(peak) >> 10} MiB: inflated"  # in KiB; the array is 256 MiB
    square = _declaring(tmp_path / "square.npz", (2, 2))
    error = one_line_error(run_cli(command, *args[:-1], square, "-o", tmp_path / "o.json"))
    assert f"{square}: array 'x' is 2×2, but the model's input is 4" in error


def _tiny_dump(path: Path, **arrays: np.ndarray) -> Path:
    np.savez(path, **arrays)
    return path


def test_one_tensor_named_three_ways_is_one_entry_or_an_error(tmp_path: Path) -> None:
    """Issue 19 item 12: ``x``, ``N`` and ``0:N`` for one tensor gave three entries."""
    model = load_model(ONNX / "tiny_cnn.onnx")
    value = next(v for v in model.main.values if v.producer is not None)
    data = np.zeros((1,), np.float32)
    ref = _tiny_dump(tmp_path / "ref.npz", **{value.name: data, str(value.index): data, f"0:{value.index}": data})
    error = one_line_error(run_cli("compare", "--dumps", ref, ref, "--model", ONNX / "tiny_cnn.onnx",
                                   "-o", tmp_path / "e.json"))
    assert f"arrays {value.name!r} and {str(value.index)!r} name one tensor" in error


def test_dumps_and_inputs_from_a_fifo_without_a_writer_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 19 item 7: ``compare --inputs FIFO`` / ``--dumps FIFO`` waited for ever."""
    from renderer.commands import cli

    monkeypatch.setattr(inputs, "STREAM_WAIT_SECONDS", 0.5)
    fifo = tmp_path / "in.npz"
    os.mkfifo(fifo)
    tiny = str(ONNX / "tiny_cnn.onnx")
    for argv in (["compare", tiny, tiny, "--inputs", str(fifo)],
                 ["compare", "--dumps", str(fifo), str(fifo), "--model", tiny]):
        started = time.monotonic()
        assert cli.main([*argv, "-o", str(tmp_path / "e.json")]) == 1
        assert time.monotonic() - started < 15
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"{fifo}: nothing to read for" in err[0], err


def test_a_dump_through_a_fifo_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    from renderer.commands import cli

    model = load_model(ONNX / "tiny_cnn.onnx")
    value = next(v for v in model.main.values if v.producer is not None)
    data = _tiny_dump(tmp_path / "ref.npz", **{value.name: np.ones(4, np.float32)}).read_bytes()
    fifo = tmp_path / "cand.npz"
    os.mkfifo(fifo)

    def writer() -> None:
        with open(fifo, "wb") as f:
            f.write(data)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    code = cli.main(["compare", "--dumps", str(tmp_path / "ref.npz"), str(fifo), "--model",
                     str(ONNX / "tiny_cnn.onnx"), "-o", str(tmp_path / "e.json")])
    thread.join(10)
    assert code == 0, capsys.readouterr().err


# ---- compare in the child -------------------------------------------------------------------------------------


def _compare_error(tmp_path: Path, model: bytes, inputs: dict[str, np.ndarray], *extra: str,
                   env: dict[str, str] | None = None) -> str:
    path = _write(tmp_path / "m.onnx", model)
    np.savez(tmp_path / "in.npz", **inputs)
    run = run_cli("compare", path, path, "--inputs", tmp_path / "in.npz", *extra, "-o", tmp_path / "e.json",
                  env={**LOW, **(env or {})}, timeout=120)  # the hang bound
    assert not (tmp_path / "e.json").exists()
    return one_line_error(run)


def test_compare_of_a_computed_huge_tensor_ends_at_the_memory_limit(tmp_path: Path) -> None:
    """Issue 19: a 300-byte model computing a 2 GiB tensor from its input's value peaked at 21 GB in compare."""
    error = _compare_error(tmp_path, H.computed_tensor(1 << 29), {"n": np.zeros(1, np.int64)})
    assert error.endswith("needed more than the 160.0 MiB of memory its run may take (what ANNOGRAPH_RUN_MEMORY "
                          "sets; raise it to allow more)") and "m.onnx" in error, error


def test_compare_refuses_a_tensor_static_shapes_announce_over_the_limit(tmp_path: Path) -> None:
    error = _compare_error(tmp_path, H.static_tensor(1 << 29), {"x": np.ones(1, np.float32)})
    assert error.endswith("tensor 'big' would hold 2.0 GiB (float32[536870912]), over the 1.0 GiB compare "
                          "measures per tensor (--max-tensor-bytes)"), error


def test_compare_refuses_a_tensor_met_in_the_run_over_the_limit(tmp_path: Path) -> None:
    """A tensor within the memory limit but over ``--max-tensor-bytes``: named, not measured."""
    error = _compare_error(tmp_path, H.computed_tensor(1 << 20), {"n": np.zeros(1, np.int64)},
                           "--max-tensor-bytes", "1MiB")
    assert "tensor 'ones' holds 4.0 MiB (1048576 float32), over the 1.0 MiB compare measures per tensor" in error


def test_compare_of_an_endless_loop_ends_at_its_timeout(tmp_path: Path) -> None:
    error = _compare_error(tmp_path, H.endless_loop(), {"x": np.ones(1, np.float32)}, "--timeout", "3")
    assert error.endswith("onnxruntime took over 3 s of CPU time to run "
                          f"{tmp_path / 'm.onnx'} and {tmp_path / 'm.onnx'} (set ANNOGRAPH_RUN_SECONDS to allow more)")


def test_compare_of_a_growing_loop_ends_in_one_line(tmp_path: Path) -> None:
    error = _compare_error(tmp_path, H.growing_loop(), {"x": np.ones(1, np.float32)})
    assert "needed more than the 160.0 MiB of memory" in error or "stopped with SIG" in error, error


@pytest.mark.parametrize("args, said", [
    (["--random-inputs", "-1"], "'-1' is below 0"),
    (["--timeout", "4000000"], "is more seconds than annograph waits"),
    (["--max-tensor-bytes", "lots"], "'lots' is not a size"),
])
def test_compare_option_values_are_usage_errors(args: list[str], said: str, tmp_path: Path) -> None:
    """Issue 19 item 11: ``--random-inputs -1`` was an internal error, ``--timeout 4000000`` an OverflowError."""
    tiny = ONNX / "tiny_cnn.onnx"
    run = run_cli("compare", tiny, tiny, *args, "-o", tmp_path / "e.json")
    error = one_line_error(run)
    assert run.returncode == 2 and said in error and "internal error" not in error, error


def test_render_timeout_past_what_poll_takes_is_a_usage_error(tmp_path: Path) -> None:
    run = run_cli("render", ONNX / "tiny_cnn.onnx", "--timeout", "4000000", "-o", tmp_path / "m.svg")
    assert run.returncode == 2 and "is more seconds than annograph waits" in one_line_error(run), run.stderr


def test_compare_stderr_carries_only_our_lines(tmp_path: Path) -> None:
    """Issue 19 item 12: onnxruntime's own coloured log line (``\x1b[1;31m… [E:onnxruntime:…]``) and Python
    warnings with source paths reached stderr beside our line; the runs' stderr is now the child's, kept apart."""
    error_run_stderr = _compare_stderr(tmp_path, H.computed_tensor(1 << 10), {"n": np.array([-(1 << 12)], np.int64)})
    lines = [line for line in error_run_stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("annograph: error: "), error_run_stderr
    assert "onnxruntime failed" in lines[0] and "\x1b[" not in error_run_stderr and "[E:onnxruntime" not in lines[0]
    tiny = ONNX / "tiny_cnn.onnx"
    run = run_cli("compare", tiny, tiny, "-o", tmp_path / "e.json")
    assert run.returncode == 0, run.stderr
    assert all(line.startswith("annograph: ") for line in run.stderr.splitlines() if line.strip()), run.stderr
    assert "\x1b[" not in run.stderr and ".py:" not in run.stderr


def _compare_stderr(tmp_path: Path, model: bytes, inputs: dict[str, np.ndarray]) -> str:
    path = _write(tmp_path / "m.onnx", model)
    np.savez(tmp_path / "in.npz", **inputs)
    run = run_cli("compare", path, path, "--inputs", tmp_path / "in.npz", "-o", tmp_path / "e.json")
    assert run.returncode == 1, run.stderr
    return run.stderr


def _fed_fifo(path: Path, **arrays: np.ndarray) -> threading.Thread:
    """A FIFO at ``path`` that a thread fills with an ``.npz`` of ``arrays`` once a reader opens it."""
    os.mkfifo(path)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)

    def writer() -> None:
        with open(path, "wb") as f:
            f.write(buffer.getvalue())

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    return thread


def test_inputs_through_a_fifo_reach_the_child(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The parent reads a FIFO once (bounded, header first) and hands the child a file it can open."""
    import json

    from renderer.commands import cli

    fifo = tmp_path / "in.npz"
    thread = _fed_fifo(fifo, image=np.ones((1, 3, 32, 32), np.float32))
    tiny = str(ONNX / "tiny_cnn.onnx")
    code = cli.main(["compare", tiny, tiny, "--inputs", str(fifo), "-o", str(tmp_path / "e.json")])
    thread.join(10)
    assert code == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "e.json").read_text())["graph"]["meta"]["inputs"] == "from in.npz"


def test_a_piped_inputs_file_is_named_as_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from renderer.commands import cli

    fifo = tmp_path / "wrong.npz"
    thread = _fed_fifo(fifo, other=np.ones(3, np.float32))
    tiny = str(ONNX / "tiny_cnn.onnx")
    assert cli.main(["compare", tiny, tiny, "--inputs", str(fifo), "-o", str(tmp_path / "e.json")]) == 1
    thread.join(10)
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"annograph: error: {fifo}: no array for input 'image'"), line
