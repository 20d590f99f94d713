"""int8 dynamic quantisation of a model directory's model.onnx, for the bench's tuning part.

    .venv/bin/python bench/quantize.py MODEL_DIR OUT_DIR [--per-channel] [--reduce-range]

Writes OUT_DIR/fp32/ (the graph with weights folded to float32 by onnxruntime's basic
optimisations: the shipped model keeps int8 weights that it casts and scales in-graph) and
OUT_DIR/int8/ (onnxruntime.quantization.quantize_dynamic of that fp32 graph: int8 weights and
int8 activations quantised per batch at run time). Each gets the source's tokenizer.json and a
manifest.json whose id says what it is. Needs `onnxruntime` and `onnx` in the venv.
"""
import json
import shutil
import sys
from pathlib import Path

import onnxruntime as ort
from onnxruntime.quantization import QuantType, quantize_dynamic


def model_dir(src: Path, dest: Path, suffix: str) -> Path:
    """Creates dest/ with the source's tokenizer and a manifest renamed with suffix."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src / "tokenizer.json", dest / "tokenizer.json")
    manifest = json.loads((src / "manifest.json").read_text())
    manifest["id"] = f"{manifest['id']}-{suffix}"
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return dest


def main() -> None:
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    per_channel = "--per-channel" in sys.argv[3:]
    reduce_range = "--reduce-range" in sys.argv[3:]
    fp32 = model_dir(src, out / "fp32", "fp32")
    options = ort.SessionOptions()
    # Basic level only: constant folding without onnxruntime-specific fused ops, so the saved
    # graph is plain ONNX that quantize_dynamic understands.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(fp32 / "model.onnx")
    ort.InferenceSession(str(src / "model.onnx"), options, providers=["CPUExecutionProvider"])
    name = "int8" + ("-per-channel" if per_channel else "") + ("-reduce-range" if reduce_range else "")
    int8 = model_dir(src, out / name, "dyn" + name)
    # Per-channel weight scales are the usual remedy when per-tensor scales cost too much
    # accuracy; reduce_range (7-bit weights) avoids overflow in x86 kernels without VNNI.
    quantize_dynamic(str(fp32 / "model.onnx"), str(int8 / "model.onnx"), weight_type=QuantType.QInt8,
                     per_channel=per_channel, reduce_range=reduce_range)
    sizes = {p.name: (p / "model.onnx").stat().st_size for p in (fp32, int8)}
    print(json.dumps({"fp32": str(fp32), "candidate": str(int8), "bytes": sizes}))


if __name__ == "__main__":
    main()
