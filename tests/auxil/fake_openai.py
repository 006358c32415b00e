"""The loopback OpenAI-compatible server lives in benchmarks/echo_llm.py (the echo benchmark
starts it too); tests import it from here."""

from benchmarks.echo_llm import FakeOpenAI, FakeReply, count_tokens, message_text

__all__ = ["FakeOpenAI", "FakeReply", "count_tokens", "message_text"]
