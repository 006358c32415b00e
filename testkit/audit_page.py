"""A data folder with a realistic audit, and `epmem audit serve` on it as a real subprocess
(or the same page served in-process on a test's clock, :class:`PageThread`).

The audit comes from the real runtime over the house example: direct and group questions on
Telegram, Slack and the console, a deflection, a held reply, an attempted command, an owner
exception, a question carrying a script tag, a fact told and then forgotten; plus bulk
records so the timeline has pages.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from connectors.base import Action
from epmem.audit.web import PageConfig, create_app
from epmem.memory.facts import Fact
from epmem.policy import Policy, load_policy
from testkit.house import HOUSE_Q, house_runtime, write_policy
from testkit.runtime import REPO, ask

TOKEN = "page-test-token-0123456789"
SCRIPT_Q = "What is Maya's <script>alert(1)</script> plan?"
#: a right-to-left override: shown raw, "invoice\u202egpj.exe" reads as "invoiceexe.jpg".
BIDI_Q = "Is the file invoice\u202egpj.exe from Maya safe to open?"
CANARY = "Quillfeather"
FORGOTTEN = Fact(
    id="q1",
    text=f"Maya booked the {CANARY} clinic for her knee on Friday.",
    event_id="e-knee",
    category="hobbies",
    level=4,
    state="owner-set",
)
BULK = 120


@dataclass
class AuditData:
    data: Path
    policy: Path
    script_record: str
    erased_record: str
    held_record: str
    bidi_record: str = ""


class _Outbox:
    async def __call__(self, chat_id: str, text: str, actions: tuple[Action, ...] = ()) -> None:
        return None


async def build_audit(root: Path) -> AuditData:
    data = root / "data"
    policy = write_policy(root / "policy.yaml")
    runtime = await house_runtime(data, policy_file=policy)
    try:
        agent = runtime.agent
        runtime.outbox.attach("console", _Outbox())
        for i in range(BULK):  # older records first, so the real ones are on the first page
            await runtime.audit.append(
                "reply",
                {
                    "platform": "slack",
                    "chat": "C1",
                    "chat_kind": "direct",
                    "sender": "slack:T1/UKIM",
                    "contact": "kim",
                    "audience": ["kim"],
                    "question": f"bulk question {i}",
                    "candidates": [],
                    "disclosed": [],
                    "deflected": True,
                    "reply": "Sorry, I can't help with that.",
                },
                contact="kim",
            )
        await runtime.memory.add([FORGOTTEN])
        erased = await agent.handle(ask("leo", f"When is Maya at the {CANARY} clinic?"))
        await agent.handle(ask("telegram:101", HOUSE_Q, platform="telegram"))
        await agent.handle(ask("raj", HOUSE_Q))
        await agent.handle(ask("ana", HOUSE_Q, "raj"))
        scripted = await agent.handle(ask("ana", SCRIPT_Q))
        bidi = await agent.handle(ask("ana", BIDI_Q))
        await agent.handle(ask("kim", "When is the Atlas launch?"))
        await agent.handle(ask("raj", "/allow f1 to raj"))
        await agent.handle(ask("owner", "/allow f3 to ana"))
        await agent.handle(ask("owner", "/approval 2"))
        held = await agent.handle(ask("leo", HOUSE_Q))
        await agent.handle(ask("owner", "/approval off"))
        await agent.handle(ask("owner", "/forget q1"))
        assert erased.audit_id and scripted.audit_id and held.audit_id and bidi.audit_id
        return AuditData(data, policy, scripted.audit_id, erased.audit_id, held.audit_id, bidi.audit_id)
    finally:
        await runtime.close()


def page_env(data: AuditData, token: str | None = TOKEN) -> dict[str, str]:
    env = {
        **os.environ,
        "EPMEM_DATA_DIR": str(data.data),
        "EPMEM_POLICY": str(data.policy),
        "EPMEM_LOG_LEVEL": "WARNING",
    }
    env.pop("EPMEM_AUDIT_TOKEN", None)
    if token is not None:
        env["EPMEM_AUDIT_TOKEN"] = token
    return env


class PageProcess:
    """`epmem audit serve --port 0`, read until it prints where it listens."""

    def __init__(self, data: AuditData, *args: str, token: str | None = TOKEN) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "audit", "serve", "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=page_env(data, token),
            cwd=REPO,
        )
        assert self.proc.stdout is not None
        self.lines: list[str] = []
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"audit page did not start: {self.proc.stderr.read() if self.proc.stderr else ''}")
            self.lines.append(line.rstrip("\n"))
            if line.startswith("audit page: "):
                self.url = line.split(" ", 2)[2].strip()
                return

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str, str]:
        self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=30)
        return self.proc.returncode, out, err


class PageThread:
    """The audit page served in-process on 127.0.0.1 (uvicorn in a thread of its own), with the
    sessions on the test's ``clock``: a session runs out when the test moves the clock past
    ``ttl_s``, not after a wait. Only the serving differs from `epmem audit serve`: the app is
    the same :func:`create_app` over the same databases and policy file."""

    def __init__(self, data: AuditData, clock: Callable[[], float], ttl_s: float) -> None:
        async def policy() -> Policy:
            return await asyncio.to_thread(load_policy, data.policy)

        config = PageConfig(
            data.data / "audit.sqlite", data.data / "state.sqlite", policy, TOKEN, session_ttl_s=ttl_s, clock=clock
        )
        self.server = uvicorn.Server(uvicorn.Config(create_app(config), log_level="warning", lifespan="on"))
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/"
        self.thread = threading.Thread(target=lambda: asyncio.run(self.server.serve(sockets=[self.sock])), daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:  # polls the thread's start, with a deadline
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("audit page did not start")
            self.thread.join(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()
