"""The openai embedder against a real loopback /v1/embeddings server (stdlib, port 0)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from epmem.embedding.minilm import EmbedderUnavailable
from epmem.embedding.openai_embedder import OpenAIEmbedder

DIM = 8


def _vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [b / 255.0 + 0.01 for b in digest[:DIM]]


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if body["model"] != "embed-small":
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps({"error": {"message": "no such model"}}).encode())
            return
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i, "embedding": _vector(t)} for i, t in enumerate(texts)]
        payload = {
            "object": "list",
            "data": list(reversed(data)),
            "model": body["model"],
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }
        raw = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_embeds_in_order_normalised_and_probes_the_dimension(server: str) -> None:
    embedder = OpenAIEmbedder("embed-small", base_url=server, api_key="k", timeout=5, max_retries=0)
    assert embedder.dim == DIM and embedder.name == f"openai:embed-small@{server}"
    out = embedder.embed(["alpha", "beta"])
    expected = np.array([_vector("alpha"), _vector("beta")], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(out, expected, atol=1e-6)


def test_endpoint_errors_are_one_clear_error(server: str) -> None:
    with pytest.raises(EmbedderUnavailable, match="'missing-model'"):
        OpenAIEmbedder("missing-model", base_url=server, api_key="k", timeout=5, max_retries=0)
