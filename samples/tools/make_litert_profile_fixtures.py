"""Write REAL op-profile fixtures under ``tests/fixtures/tflite_benchmark/`` (the ``*.litert_profile.*.txt`` files).

TFLite's ``benchmark_model`` binary is not on PyPI (``litert-cli`` downloads it from a bucket at run time,
which is not reachable here). The PyPI wheel ``ai-edge-litert`` ships the LiteRT runtime ``libLiteRt.so``, and
its C API has an op profiler: ``LiteRtCompiledModelGetProfiler`` + ``LiteRtGetProfileSummary`` return the same
``StatsCalculator`` tables (``Run Order``, ``Top by Computation Time``, ``Summary by node type``...) that
``benchmark_model --enable_op_profiling=true`` prints, as LiteRT writes them. The Python API does not expose
that profiler, so this script calls the C API with ``ctypes``:

    LiteRtCreateEnvironment → LiteRtCreateModelFromFile → LiteRtCreateOptions (CPU) + opaque options
    ``runtime_options_string`` = ``enable_profiling = true`` and ``xnnpack`` = ``num_threads = 1`` (plus
    ``kernel_mode = "builtin"`` for the runs without XNNPack) → LiteRtCreateCompiledModel →
    LiteRtCompiledModelGetProfiler → LiteRtStartProfiler → ``--runs`` × LiteRtRunCompiledModel →
    LiteRtStopProfiler → LiteRtGetProfileSummary

The summary string is written as it comes (a final newline is added when missing). Inputs are random from a
fixed seed; there is no warm-up, so the first profiled run is the model's first (``okay_nabu``'s ``CALL_ONCE``
runs its initialisation subgraph then, which puts that subgraph's operators in the table). Timings depend on
the machine. The versions and options used are written to ``litert_profile.versions.json`` in the same folder.

Regenerate (needs ``pip install ai-edge-litert==2.3.0``; other versions may write another layout)::

    python samples/tools/make_litert_profile_fixtures.py
"""

from __future__ import annotations

import argparse
import ctypes
import json
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "tflite_benchmark"
PACKAGE = "ai-edge-litert"

MODELS = {
    "face_detection": "samples/tflite/face_detection_short_range.tflite",
    "okay_nabu": "samples/tflite/okay_nabu.tflite",
    "tiny_keras_float": "tests/fixtures/tflite_debugger/tiny_keras_float.tflite",
}
# file suffix → CPU kernel mode (None: LiteRT's default, the XNNPack delegate and built-in kernels for the
# rest; "builtin" turns XNNPack off)
MODES = {"xnnpack": None, "builtin": "builtin"}

RUNTIME_OPTIONS = "enable_profiling = true\n"
HW_CPU = 1  # kLiteRtHwAcceleratorCpu
LOCK_WRITE = 1  # kLiteRtTensorBufferLockModeWrite
# LiteRtElementType (= TfLiteType) → numpy dtype name, for the random inputs
ELEMENT_TYPES = {
    1: "float32", 2: "int32", 3: "uint8", 4: "int64", 6: "bool", 7: "int16", 9: "int8", 10: "float16",
}


class LiteRt:
    """The few LiteRT C API calls used here, on the ``libLiteRt.so`` of the installed ``ai_edge_litert``."""

    def __init__(self) -> None:
        try:
            import ai_edge_litert
        except ImportError:
            sys.exit(f"{PACKAGE} is not installed: pip install {PACKAGE}==2.3.0")
        self.path = Path(ai_edge_litert.__file__).parent / "libLiteRt.so"
        self.lib = ctypes.CDLL(str(self.path))
        self.libc = ctypes.CDLL(None)
        self.libc.strdup.restype = ctypes.c_void_p
        self.libc.strdup.argtypes = [ctypes.c_char_p]
        self.libc.free.argtypes = [ctypes.c_void_p]
        self.free = ctypes.cast(self.libc.free, ctypes.c_void_p)

    def __call__(self, name: str, *args: object) -> None:
        status = getattr(self.lib, name)(*args)
        if status != 0:
            raise RuntimeError(f"{name} returned LiteRtStatus {status}")

    def add_options(self, options: ctypes.c_void_p, identifier: str, toml: str) -> None:
        """Opaque options holding a TOML payload (LiteRT frees it with ``free``)."""
        payload = ctypes.c_void_p(self.libc.strdup(toml.encode()))
        opaque = ctypes.c_void_p()
        self("LiteRtCreateOpaqueOptions", identifier.encode(), payload, self.free, ctypes.byref(opaque))
        self("LiteRtAddOpaqueOptions", options, opaque)


def cpu_options(kernel_mode: str | None) -> str:
    toml = "num_threads = 1\n"
    return toml + (f'kernel_mode = "{kernel_mode}"\n' if kernel_mode else "")


def profile(rt: LiteRt, model_path: Path, kernel_mode: str | None, runs: int, seed: int) -> str:
    """The profile summary of ``runs`` inferences of ``model_path`` on the CPU."""
    import numpy as np

    P, size = ctypes.c_void_p, ctypes.c_size_t
    env, model, options, compiled = P(), P(), P(), P()
    rt("LiteRtCreateEnvironment", ctypes.c_int(0), None, ctypes.byref(env))
    rt("LiteRtCreateModelFromFile", env, str(model_path).encode(), ctypes.byref(model))
    rt("LiteRtCreateOptions", ctypes.byref(options))
    rt("LiteRtSetOptionsHardwareAccelerators", options, ctypes.c_int(HW_CPU))
    rt.add_options(options, "runtime_options_string", RUNTIME_OPTIONS)
    rt.add_options(options, "xnnpack", cpu_options(kernel_mode))
    rt("LiteRtCreateCompiledModel", env, model, options, ctypes.byref(compiled))
    signature = P()
    rt("LiteRtGetModelSignature", model, size(0), ctypes.byref(signature))

    def buffers(kind: str) -> list[ctypes.c_void_p]:
        count = size()
        rt(f"LiteRtGetNumSignature{kind}s", signature, ctypes.byref(count))
        made = []
        for i in range(count.value):
            tensor, requirements, buffer = P(), P(), P()
            rt(f"LiteRtGetSignature{kind}TensorByIndex", signature, size(i), ctypes.byref(tensor))
            tensor_type = ctypes.create_string_buffer(1024)  # LiteRtRankedTensorType, read as bytes
            rt("LiteRtGetRankedTensorType", tensor, tensor_type)
            rt(f"LiteRtGetCompiledModel{kind}BufferRequirements", compiled, size(0), size(i),
               ctypes.byref(requirements))
            rt("LiteRtCreateManagedTensorBufferFromRequirements", env, tensor_type, requirements,
               ctypes.byref(buffer))
            made.append((buffer, int.from_bytes(tensor_type.raw[:4], "little")))
        return made

    inputs, outputs = buffers("Input"), buffers("Output")
    rng = np.random.default_rng(seed)
    for buffer, element_type in inputs:
        nbytes, address = size(), P()
        rt("LiteRtGetTensorBufferPackedSize", buffer, ctypes.byref(nbytes))
        dtype = np.dtype(ELEMENT_TYPES.get(element_type, "uint8"))
        count = nbytes.value // dtype.itemsize
        if dtype.kind == "f":
            data = rng.uniform(-1.0, 1.0, count).astype(dtype)
        elif dtype.kind in "iu":
            info = np.iinfo(dtype)
            data = rng.integers(max(info.min, -128), min(info.max, 127), count, endpoint=True).astype(dtype)
        else:
            data = np.zeros(count, dtype)
        rt("LiteRtLockTensorBuffer", buffer, ctypes.byref(address), ctypes.c_int(LOCK_WRITE))
        ctypes.memmove(address, data.tobytes(), data.nbytes)
        rt("LiteRtUnlockTensorBuffer", buffer)
    input_array = (P * len(inputs))(*[b for b, _ in inputs])
    output_array = (P * len(outputs))(*[b for b, _ in outputs])

    profiler, summary = P(), P()
    rt("LiteRtCompiledModelGetProfiler", compiled, ctypes.byref(profiler))
    rt("LiteRtStartProfiler", profiler)
    for _ in range(runs):
        rt("LiteRtRunCompiledModel", compiled, size(0), size(len(inputs)), input_array, size(len(outputs)),
           output_array)
    rt("LiteRtStopProfiler", profiler)
    rt("LiteRtGetProfileSummary", profiler, compiled, ctypes.byref(summary))
    text = ctypes.string_at(summary).decode()
    rt.libc.free(summary)

    for buffer, _ in inputs + outputs:
        rt.lib.LiteRtDestroyTensorBuffer(buffer)
    rt.lib.LiteRtDestroyCompiledModel(compiled)
    rt.lib.LiteRtDestroyOptions(options)
    rt.lib.LiteRtDestroyModel(model)
    rt.lib.LiteRtDestroyEnvironment(env)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out-dir", type=Path, default=OUT)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import importlib.metadata

    import numpy as np

    rt = LiteRt()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    files = {}
    for stem, model in MODELS.items():
        for suffix, kernel_mode in MODES.items():
            name = f"{stem}.litert_profile.{suffix}.txt"
            text = profile(rt, ROOT / model, kernel_mode, args.runs, args.seed)
            if "Run Order" not in text:
                raise SystemExit(f"{name}: no Run Order table in the profile summary:\n{text[:500]}")
            if kernel_mode == "builtin" and "Delegate/" in text:
                raise SystemExit(f"{name}: kernel_mode = builtin was ignored (Delegate rows in the summary)")
            (args.out_dir / name).write_text(text if text.endswith("\n") else text + "\n")
            files[name] = {
                "model": model,
                "options": {"runtime_options_string": RUNTIME_OPTIONS, "xnnpack": cpu_options(kernel_mode)},
            }
            print(f"wrote {args.out_dir / name}", file=sys.stderr)

    versions = {
        "tool": "LiteRtGetProfileSummary (LiteRT C API, libLiteRt.so of the ai-edge-litert wheel)",
        "package": PACKAGE,
        "version": importlib.metadata.version(PACKAGE),
        "numpy": np.__version__,
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "command": "python samples/tools/make_litert_profile_fixtures.py"
        + (f" --runs {args.runs}" if args.runs != 20 else "")
        + (f" --seed {args.seed}" if args.seed != 0 else ""),
        "runs": args.runs,
        "warmup_runs": 0,
        "input_seed": args.seed,
        "accelerator": "CPU",
        "files": files,
    }
    (args.out_dir / "litert_profile.versions.json").write_text(json.dumps(versions, indent=2) + "\n")
    print(json.dumps({k: v for k, v in versions.items() if k != "files"}))


if __name__ == "__main__":
    main()
