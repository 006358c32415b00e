"""How fast the numpy MiniLM embedder is on this machine, on text shaped like real chat.

Usage: .venv/bin/python benchmarks/embedding_speed.py [--turns 2000] [--locomo PATH]
Prints one JSON object: load time (including the sha256 check), single-sentence latency and
batched throughput over LoCoMo chat turns. The numbers guide batch sizing and whether
embedding can run inline in a message handler, so they are measured, not estimated.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from epmem.embedding.minilm import MiniLMEmbedder, _model_dir, _read_verified

DEFAULT_LOCOMO = Path(__file__).resolve().parents[2] / "shared/datasets/locomo/locomo10.json"


def locomo_turns(path: Path, limit: int) -> list[str]:
    """Real turns rather than synthetic text: length distribution drives padding cost."""
    turns: list[str] = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conv = sample["conversation"]
        for key, value in conv.items():
            if key.startswith("session_") and isinstance(value, list):
                turns.extend(t["text"] for t in value if t.get("text"))
    return turns[:limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    args = parser.parse_args()

    t0 = time.perf_counter()
    embedder = MiniLMEmbedder()
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    _read_verified(_model_dir() / "model.safetensors")  # file is in page cache by now
    hash_s = time.perf_counter() - t0

    turns = locomo_turns(args.locomo, args.turns)
    embedder.embed(turns[:8])  # warm BLAS thread pools and allocator
    single = []
    for text in turns[:50]:
        t = time.perf_counter()
        embedder.embed([text])
        single.append(time.perf_counter() - t)

    t, cpu = time.perf_counter(), time.process_time()
    vectors = embedder.embed(turns)
    batch_s, batch_cpu = time.perf_counter() - t, time.process_time() - cpu
    print(
        json.dumps(
            {
                "embedder": embedder.name,
                "cpus": os.cpu_count(),
                "load_s_incl_sha256": round(load_s, 3),
                "read_and_sha256_s": round(hash_s, 3),
                "load_avg_1m": round(os.getloadavg()[0], 2),
                "single_sentence_median_ms": round(statistics.median(single) * 1000, 2),
                "batched_turns": len(turns),
                "batched_seconds": round(batch_s, 3),
                "batched_sentences_per_s": round(len(turns) / batch_s, 1),
                # wall time is meaningless on a busy shared box; CPU seconds are not
                "batched_cpu_seconds": round(batch_cpu, 3),
                "output_shape": list(vectors.shape),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
