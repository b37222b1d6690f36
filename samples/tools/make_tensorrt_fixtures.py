"""Write the HAND-MADE TensorRT fixtures under ``tests/fixtures/tensorrt/`` (see its section in
``tests/fixtures/README.md``): a trtexec ``--exportProfile`` JSON and ``--exportLayerInfo`` JSON describing an
engine of ``samples/onnx/tiny_cnn.onnx``, in the layouts NVIDIA documents. TensorRT needs an NVIDIA GPU; none is
here, so the layers, times and tactic names are made up, the structure is not.

    python samples/tools/make_tensorrt_fixtures.py
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "tensorrt"
SEPARATOR = "\x1f"  # between the [ONNX Layer: …] entries of a layer's Metadata (TensorRT 10)
ITERATIONS = 1000

# (layer name, LayerType, ONNX nodes in Metadata, tactic, averageMs, medianMs)
LAYERS = [
    ("Reformatting CopyNode for Input Tensor 0 to stem/conv + stem/bn + stem/relu", "Reformat", (),
     "0x0000000000000000", 0.00301, 0.00298),
    ("stem/conv + stem/bn + stem/relu", "CaskConvolution", ("stem/conv", "stem/bn", "stem/relu"),
     "sm80_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nchwkcrs_nchw_tilesize32x32x64_stage5_warpsize2x2x1_g1_tensor16x8x8",
     0.00842, 0.00819),
    ("stem/pool", "CaskPooling", ("stem/pool",), "sm50_xmma_pooling_fw_4d_FP32FP32NCHW_Max", 0.00277, 0.00272),
    ("block1/dwconv + block1/bn1 + block1/relu1", "CaskGemmConvolution",
     ("block1/dwconv", "block1/bn1", "block1/relu1"),
     "sm80_xmma_fprop_group_conv_f32f32_f32_nchw_tilesize32x32x8", 0.00405, 0.00401),
    ("block1/pwconv + block1/bn2 + block1/add + block1/relu2", "CaskConvolution",
     ("block1/pwconv", "block1/bn2", "block1/add", "block1/relu2"),
     "sm80_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nchwkcrs_nchw_tilesize32x32x64_stage5_warpsize2x2x1_g1_tensor16x8x8",
     0.00512, 0.00508),
    ("block2/conv + block2/bn + block2/relu", "CaskConvolution", ("block2/conv", "block2/bn", "block2/relu"),
     "sm80_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nchwkcrs_nchw_tilesize64x32x64_stage5_warpsize2x2x1_g1_tensor16x8x8",
     0.00633, 0.00627),
    ("head/gap", "CaskPooling", ("head/gap",), "sm50_xmma_pooling_fw_4d_FP32FP32NCHW_Average", 0.00254, 0.00251),
    ("{ForeignNode[head/flatten...head/softmax]}", "Myelin", ("head/flatten", "head/fc", "head/softmax"),
     "__myl_ResMovMulSumAddMaxSubExpSumDiv_0x5f4c", 0.00988, 0.00975),
]


def profile_text() -> str:
    """The profile as ``Profiler::exportJSONProfile`` (TensorRT's samples/common/sampleReporting.cpp) lays it out."""
    total = sum(layer[4] for layer in LAYERS)
    lines = ["[", '  { "count" : %d }' % ITERATIONS]
    for name, _, _, _, average, median in LAYERS:
        lines.append(', { "name" : "%s", "timeMs" : %.6g, "averageMs" : %.6g, "medianMs" : %.6g, "percentage" : %.6g }'
                     % (name, average * ITERATIONS, average, median, average / total * 100))
    return "\n".join([*lines, "]"]) + "\n"


def layer_info() -> dict:
    """``IEngineInspector::getEngineInformation(kJSON)`` of an engine built with detailed profiling verbosity."""
    layers = []
    for name, layer_type, nodes, tactic, *_ in LAYERS:
        layers.append({"Name": name, "LayerType": layer_type,
                       "Inputs": [{"Name": "(input)", "Location": "Device",
                                   "Format/Datatype": "Row major linear FP32"}],
                       "Outputs": [{"Name": "(output)", "Location": "Device",
                                    "Format/Datatype": "Row major linear FP32"}],
                       "TacticName": tactic, "StreamId": 0,
                       "Metadata": SEPARATOR.join(f"[ONNX Layer: {node}]" for node in nodes)})
    return {"Layers": layers, "Bindings": ["image", "probs"]}


def main() -> None:
    (OUT / "names_only").mkdir(parents=True, exist_ok=True)
    (OUT / "tiny_cnn.profile.json").write_text(profile_text(), encoding="utf-8")
    (OUT / "tiny_cnn.layers.json").write_text(json.dumps(layer_info(), indent=2) + "\n", encoding="utf-8")
    (OUT / "names_only" / "trtexec_profile.json").write_text(profile_text(), encoding="utf-8")


if __name__ == "__main__":
    main()
