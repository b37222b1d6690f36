"""Write REAL ``benchmark_model --enable_op_profiling=true`` fixtures (``*.benchmark_model.*``).

They go to ``tests/fixtures/tflite_benchmark/``, with ``benchmark_model.versions.json``.

The binary is TensorFlow's prebuilt nightly ``linux_x86-64_benchmark_model`` (the file that
https://www.tensorflow.org/lite/performance/measurement links to). The copy used for the committed fixtures
was found committed in the public GitHub repository ``sugupoko/tflite_benchmark``, commit
``7e46c97809b6a39382daf660651a5e7bd9e8b3a4`` (2022-04-04), path ``linux_x86-64_benchmark_model``; its
sha256 is ``5ab61e61bbfc089123364c7e7b20a304f8b603be5927d417e9305a5ca12a5ffa``. It has no ``--version``
flag. The binary is third-party and is NOT committed here: only its outputs are. Another binary can be
given; the script says so when its sha256 differs, and records the one it ran.

For each model (``MODELS``) it runs, from the repository root and with relative paths (the file names it
prints are then the same on every machine)::

    benchmark_model --graph=MODEL --use_xnnpack=<false|true> --num_threads=1 --num_runs=20 --warmup_runs=1 \\
        --enable_op_profiling=true

and saves stdout verbatim as ``<model>.benchmark_model.<cpu|xnnpack>.txt``. The tables go to stdout; stderr
only has log lines (``INFO: Created TensorFlow Lite XNNPACK delegate for CPU.``) and is kept out of the file
(it is recorded in ``benchmark_model.versions.json``). Should a binary print the tables to stderr instead,
stderr is saved. ``--num_runs`` is a minimum: the binary also runs for at least ``--min_secs`` (1 s).

Then once per model, in the mode ``CSV_MODE`` gives, the same command with
``--profiling_output_csv_file=<model>.benchmark_model.<mode>.csv`` (this 2022 binary's CSV flag; newer ones
have ``--op_profiling_output_mode=csv`` + ``--op_profiling_output_file``). The binary writes that file
itself; with it, stdout has no tables and is not kept.

A run the binary refuses (non-zero exit, e.g. ``Failed to apply XNNPACK delegate.``, or an op version newer
than the binary knows) is recorded in ``benchmark_model.versions.json`` under ``refused`` and skipped.

Regenerate::

    python samples/tools/make_benchmark_model_fixtures.py \\
        --benchmark-model /path/to/linux_x86-64_benchmark_model
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import platform
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "tflite_benchmark"
VERSIONS = "benchmark_model.versions.json"

SOURCE = {
    "binary": "linux_x86-64_benchmark_model (TensorFlow's prebuilt nightly, as linked from "
    "https://www.tensorflow.org/lite/performance/measurement)",
    "found_in": "https://github.com/sugupoko/tflite_benchmark",
    "commit": "7e46c97809b6a39382daf660651a5e7bd9e8b3a4",
    "commit_date": "2022-04-04",
    "path": "linux_x86-64_benchmark_model",
}
SHA256 = "5ab61e61bbfc089123364c7e7b20a304f8b603be5927d417e9305a5ca12a5ffa"

MODELS = {
    "face_detection": "samples/tflite/face_detection_short_range.tflite",
    "okay_nabu": "samples/tflite/okay_nabu.tflite",
    "tiny_keras_float": "tests/fixtures/tflite_debugger/tiny_keras_float.tflite",
}
MODES = {"cpu": "false", "xnnpack": "true"}  # file suffix → --use_xnnpack
# the CSV run per model: face_detection with XNNPack (the delegate kernel row, commas in its name), the
# others on the CPU (every operator; okay_nabu's XNNPack run is refused by this binary)
CSV_MODE = {"face_detection": "xnnpack", "okay_nabu": "cpu", "tiny_keras_float": "cpu"}
FLAGS = ["--num_threads=1", "--num_runs=20", "--warmup_runs=1", "--enable_op_profiling=true"]
REGULAR = "Operator-wise Profiling Info for Regular Benchmark Runs"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def command(binary: str, model: str, mode: str, csv_file: str | None = None) -> list[str]:
    args = [binary, f"--graph={model}", f"--use_xnnpack={MODES[mode]}", *FLAGS]
    return args + ([f"--profiling_output_csv_file={csv_file}"] if csv_file else [])


def run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)


def refusal(done: subprocess.CompletedProcess[str]) -> str:
    """The binary's last words: the lines that say why it stopped."""
    lines = [ln for ln in (done.stdout + done.stderr).splitlines() if ln.strip()]
    return "\n".join(lines[-4:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--benchmark-model", type=Path, required=True, help="the benchmark_model binary")
    parser.add_argument("--out-dir", type=Path, default=OUT)
    args = parser.parse_args()

    binary = args.benchmark_model.resolve()
    if not binary.is_file():
        sys.exit(f"{binary}: no such file")
    digest = sha256(binary)
    if digest != SHA256:
        print(
            f"WARNING: {binary} has sha256 {digest}, not {SHA256} (the binary from {SOURCE['found_in']} "
            f"commit {SOURCE['commit']}): its outputs may have another layout",
            file=sys.stderr,
        )
    out_dir = args.out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    shown = "benchmark_model"  # the binary's name in the recorded command lines
    files: dict[str, dict[str, object]] = {}
    refused: dict[str, dict[str, str]] = {}

    for stem, model in MODELS.items():
        for mode in MODES:
            name = f"{stem}.benchmark_model.{mode}.txt"
            argv = command(str(binary), model, mode)
            done = run(argv)
            if done.returncode != 0:
                refused[name] = {"command": shlex.join([shown, *argv[1:]]), "exit_code": str(done.returncode),
                                 "output": refusal(done)}
                print(f"{name}: refused (exit {done.returncode}): {refusal(done)!r}", file=sys.stderr)
                continue
            if REGULAR in done.stdout:
                text, stream = done.stdout, "stdout"
            elif REGULAR in done.stderr:
                text, stream = done.stderr, "stderr"
            else:
                sys.exit(f"{name}: no '{REGULAR}' section in stdout or stderr")
            (out_dir / name).write_text(text)
            files[name] = {"model": model, "command": shlex.join([shown, *argv[1:]]) + " > " + name,
                           "saved": stream, "stderr": done.stderr}
            print(f"wrote {out_dir / name}", file=sys.stderr)

        mode = CSV_MODE[stem]
        name = f"{stem}.benchmark_model.{mode}.csv"
        target = out_dir / name
        target.unlink(missing_ok=True)
        try:
            shown_target = str(target.relative_to(ROOT))
        except ValueError:
            shown_target = str(target)
        argv = command(str(binary), model, mode, shown_target)
        done = run(argv)
        if done.returncode != 0 or not target.exists():
            target.unlink(missing_ok=True)
            refused[name] = {"command": shlex.join([shown, *argv[1:]]), "exit_code": str(done.returncode),
                             "output": refusal(done)}
            print(f"{name}: refused (exit {done.returncode}): {refusal(done)!r}", file=sys.stderr)
            continue
        if REGULAR not in target.read_text():
            sys.exit(f"{name}: no '{REGULAR}' section in the CSV file")
        files[name] = {"model": model, "command": shlex.join([shown, *argv[1:]]), "saved": "csv file",
                       "stderr": done.stderr}
        print(f"wrote {target}", file=sys.stderr)

    versions = {
        "tool": "TFLite benchmark_model (no --version flag)",
        "source": SOURCE,
        "sha256": digest,
        "sha256_expected": SHA256,
        "date": datetime.date.today().isoformat(),
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "command": "python samples/tools/make_benchmark_model_fixtures.py --benchmark-model PATH",
        "flags": FLAGS,
        "files": files,
        "refused": refused,
    }
    (out_dir / VERSIONS).write_text(json.dumps(versions, indent=2) + "\n")
    print(json.dumps({k: v for k, v in versions.items() if k not in ("files", "refused")}, indent=2))


if __name__ == "__main__":
    main()
