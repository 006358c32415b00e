"""``epmem run``: the delegate as a service. Every configured platform, the scheduler, signals.

One :class:`Service` owns the running parts around one :class:`~bot.runtime.Runtime`:

* a connector per registered platform whose settings ask for it (connectors/platforms.py), or
  the console when none is, each given the agent's handler and the connectors' state (bot/connector_state.py:
  event dedup, routes, undelivered messages, in the state database);
* the outbox (bot/outbox.py): each started connector joins it, with the owner's chat on its
  platform, so an approved reply reaches the chat it was held from and the digest, expiry
  notices and abuse notes reach the owner;
* the runtime's scheduler, started after the connectors so a note that is due at start can be sent;
* model annotation of imported sessions in the background (bot/annotator.py), and a prompt to
  /review when an import left facts waiting;
* what contacts tell the bot, into memory the way an import goes (bot/live.py);
* a health report every 30 s (bot/health.py, read by ``epmem health``): which platforms are
  connected and whether the stores answer.

SIGINT and SIGTERM stop it cleanly: connectors first (no new messages; in-flight answers
finish), then the scheduler, then the stores.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TextIO

import structlog

from connectors.base import Connector, Front, Handler, Inbound, KnowsReaders, Outbound
from connectors.console import OWNER_CHAT, ConsoleConnector
from connectors.courier import Timer
from connectors.registry import PLATFORMS
from epmem.errors import EpmemError
from epmem.identity import LOCAL
from epmem.policy import OWNER_ID

from bot import health
from bot.connector_state import ConnectorHost
from bot.erasure import forget_everything
from bot.inflight import keep_replies_in_flight, keep_taking_over
from bot.importing import REVIEW_PROMPT_FLAG
from bot.platforms import PlatformSettings
from bot.runtime import Runtime
from bot.scheduler import Scheduler
from bot.workers import WorkerLease

log = structlog.get_logger(__name__)

_STOP_TIMEOUT_S = 15.0
#: how often chats silent for a session gap are closed into sessions (bot/live.py).
_LIVE_FLUSH_EVERY_S = 600.0
#: an owner's uninstall whose erasure is not finished yet (its value: who uninstalled).
ERASE_OWED_FLAG = "erase_owed"


class StartError(EpmemError, RuntimeError):
    """A connector could not start (a rejected token, a port in use); secrets are redacted."""


class Service:
    def __init__(
        self,
        runtime: Runtime,
        platforms: PlatformSettings,
        *,
        console_identity: str = LOCAL.identity(OWNER_ID),
        console_stdin: TextIO | None = None,
        timer: Timer | None = None,
        console: bool = True,
        fronts: tuple[PlatformSettings | None, Mapping[str, Front]] = (None, {}),
    ) -> None:
        """``timer``: the platform connectors' clock and sleep (tests pass a fake one).
        ``console``: serve the console when no platform is configured (one owner's terminal;
        in a deployment of several owners the terminal is nobody's). ``fronts``: the
        deployment's settings and shared clients (one bot for every owner, bot/owners.py):
        this owner's connector on such a platform is fed by its front."""
        self.runtime = runtime
        settings = runtime.settings
        self.connectors: list[Connector] = []
        self._secrets = platforms.secrets()
        self._owner_chats: dict[str, str | None] = {}
        state = ConnectorHost(runtime.seen_events, runtime.connector_state, runtime.outbox)
        shared, shared_fronts = fronts
        menu = runtime.commands.menu()
        own = [(p, platforms, None) for p in platforms.configured()]
        for platform, where, front in own + [(PLATFORMS.get(n), shared, f) for n, f in shared_fronts.items()]:
            assert platform is not None and where is not None
            owner = PLATFORMS.owner_identity(platform.name, runtime.policies.base.owner.identities)
            if front is not None and owner is None:
                log.warning("owner_not_on_shared_platform", platform=platform.name)
                continue
            context = platforms.context(
                self._handler(platform.name),
                state,
                owner,
                settings.max_message_chars,
                timer,
                self._uninstalled,
                front,
                menu,
            )
            self._add(
                platform.connect(where.of(platform.name), context),
                platform.owner_chat(owner) if owner is not None else None,
            )
        self.console: ConsoleConnector | None = None
        if not self.connectors and console:
            self.console = ConsoleConnector(
                console_identity,
                self._handler(LOCAL.platform),
                stdin=console_stdin,
                max_chars=settings.max_message_chars,
                prompt="> " if sys.stdin.isatty() and console_stdin is None else "",
            )
            # as a contact, the console is that contact's chat: the owner's notes are kept
            owner_chat = OWNER_CHAT if runtime.owner.directory.resolve(console_identity).is_owner else None
            self._add(self.console, owner_chat)
        self._console_task: asyncio.Task[None] | None = None
        self._live_task: asyncio.Task[None] | None = None
        self._health_task: asyncio.Task[None] | None = None
        self._started: list[Connector] = []
        self._in_flight = 0
        self.health_path = settings.data_dir / health.FILE
        #: one of several workers on a shared database (bot/workers.py); None: the only one.
        lease = settings.worker_lease
        self.lease = WorkerLease(runtime.state.db, lease=lease) if lease is not None else None
        self._lease_task: asyncio.Task[None] | None = None

    def _add(self, connector: Connector, owner_chat: str | None) -> None:
        self.connectors.append(connector)
        self._owner_chats[connector.platform] = owner_chat
        if owner_chat is None and connector.platform != LOCAL.platform:
            log.warning(
                "owner_unreachable",
                platform=connector.platform,
                hint=f"add a {connector.platform}: identity to the policy's owner.identities",
            )

    @property
    def platforms(self) -> list[str]:
        return [c.platform for c in self.connectors]

    @property
    def scheduler(self) -> Scheduler:
        return self.runtime.scheduler

    def _handler(self, platform: str) -> Handler:
        """The agent's handler, plus: a note for the owner that this platform cannot deliver
        (no owner identity here) goes through another platform instead of being lost."""
        agent, outbox = self.runtime.agent, self.runtime.outbox

        async def handle(inbound: Inbound) -> Outbound:
            out = await agent.handle(inbound)
            if self.lease is not None and out.audit_id and out.text:
                await self.lease.sending(out.audit_id)  # until the platform's answer is recorded
            self._remember(inbound)
            if out.to_owner and not outbox.reaches_owner(platform):
                await outbox.tell_owner(out.to_owner, out.actions)
                return Outbound(out.text, audit_id=out.audit_id, after=out.after)
            return out

        return handle

    async def _uninstalled(self, identity: str) -> None:
        """Someone took back what they granted the app (Slack: revoked their token, or removed
        the app). The owner doing so ends their delegate: their whole memory is erased as
        /forget erases a fact, and the audit chain says so. A flag marks the erasure as owed
        until it is done, so a crash half-way finishes it at the next start."""
        if not self.runtime.owner.directory.resolve(identity).is_owner:
            log.info("person.uninstalled", identity=identity)
            return
        await self.runtime.overlay.set_flag(ERASE_OWED_FLAG, identity)
        await self._erase_owed()

    async def _erase_owed(self) -> None:
        by = await self.runtime.overlay.get_flag(ERASE_OWED_FLAG)
        if not isinstance(by, str) or not by:
            return
        await self.runtime.live.discard()
        done = await forget_everything(self.runtime.owner, self.runtime.journal, by=by)
        await self.runtime.overlay.set_flag(ERASE_OWED_FLAG, None)
        log.warning("owner.uninstalled_erased", facts=len(done.facts), audit_texts=done.audit.texts)

    def _remember(self, inbound: Inbound) -> None:
        """What a contact told the bot goes into memory like an import (bot/live.py)."""
        try:
            directory = self.runtime.owner.directory
            # who heard it said: only whom the platform confirmed present (never the audience,
            # which names placeholders and members merely seen before so as never to be short)
            present = directory.readers(inbound.present) if inbound.present is not None else []
            self.runtime.live.record(inbound, directory.resolve(inbound.sender), present)
        except Exception:
            log.exception("live.record_failed")

    async def _flush_idle_chats(self) -> None:
        while True:
            await asyncio.sleep(_LIVE_FLUSH_EVERY_S)
            try:
                await self.runtime.live.flush_idle()
            except Exception:
                log.exception("live.flush_failed")

    # ------------------------------------------------------------------ lifecycle

    async def warm_up(self) -> None:
        """One throw-away recall before the first message, so nobody waits for the first
        forward pass and the store's first query (several hundred ms cold). Says nothing."""
        started = time.perf_counter()
        try:
            await self.runtime.memory.recall("warm up")
        except Exception as exc:
            log.warning("warm_up_failed", error=type(exc).__name__)
        log.info("warmed_up", ms=round((time.perf_counter() - started) * 1000, 1))

    async def start(self) -> None:
        """Connectors first (so notes due at start can go out), then the scheduler."""
        await self.warm_up()
        await self._erase_owed()  # an uninstall's erasure a crash interrupted: before anything answers
        try:
            for connector in self.connectors:
                # joined before it starts: an answer to its first message may already need it.
                readers = connector.readers if isinstance(connector, KnowsReaders) else None
                self.runtime.outbox.attach(
                    connector.platform, connector.send, self._owner_chats[connector.platform], readers
                )
                if connector is self.console:
                    self._console_task = asyncio.create_task(connector.start(), name="console")
                else:
                    try:
                        await connector.start()
                    except Exception as exc:
                        raise StartError(
                            f"{connector.platform} did not start: {type(exc).__name__}: {self._redact(str(exc))}"
                        ) from None
                self._started.append(connector)
            # replies a crash left without an outcome, settled once the platforms answer (bot/inflight.py)
            reporting = {c.platform: c for c in self._started if c is not self.console}
            if self.lease is None:
                self._in_flight = (await keep_replies_in_flight(self.runtime, reporting)).kept
            else:  # other workers may be sending right now: only a dead worker's replies are settled
                await self.lease.beat()
                every = timedelta(seconds=self.runtime.settings.worker_beat_s)
                self._lease_task = asyncio.create_task(
                    keep_taking_over(self.runtime, reporting, self.lease, every), name="worker-lease"
                )
            await self.scheduler.start()
            self.runtime.annotator.start()
            self._live_task = asyncio.create_task(self._flush_idle_chats(), name="live-flush")
            self._health_task = asyncio.create_task(
                health.keep_reporting(self.probes(), self.health_path), name="health"
            )
            await self._prompt_review()
            await self._say_what_waits()
        except BaseException:
            await self.stop()
            raise
        log.info("service.started", platforms=self.platforms)

    async def _say_what_waits(self) -> None:
        """The owner hears at start what waits for them ("2 consultations wait: /consults"), on
        the first platform that reaches them; where none does, it is a log line (not a kept note:
        the owner's next session says it again)."""
        from bot.commands.consult import what_waits

        waits = await what_waits(self.runtime.owner)
        if self._in_flight:
            n = self._in_flight
            lost = f"{n} repl{'ies' if n != 1 else 'y'} may not have gone out when I stopped: /undelivered"
            waits = f"{lost}; {waits}" if waits else lost
        if not waits:
            return
        outbox = self.runtime.outbox
        if any(outbox.reaches_owner(p) for p in outbox.platforms):
            await outbox.tell_owner(waits)
        else:
            log.info("owner_waiting", waiting=waits)

    async def _prompt_review(self) -> None:
        """After an import that left facts for the owner (``epmem ingest`` sets the flag), the
        owner hears it on their platform once: the import ran while the bot was not running."""
        overlay = self.runtime.overlay
        note = await overlay.get_flag(REVIEW_PROMPT_FLAG)
        if not note:
            return
        waiting = await self.runtime.review.waiting()
        if waiting and await self.runtime.outbox.tell_owner(
            f"{note} {waiting} facts wait for your review (until you decide, only the people who heard them said are told them back): /review"
        ):
            await overlay.set_flag(REVIEW_PROMPT_FLAG, None)
        elif not waiting:
            await overlay.set_flag(REVIEW_PROMPT_FLAG, None)

    def probes(self) -> health.Probes:
        """Connected: started and not stopped since. The stores: one cheap query each."""
        runtime = self.runtime

        async def state() -> object:
            return await runtime.state.db.fetchone("SELECT 1")

        async def audit() -> object:
            return await runtime.audit.db.fetchone("SELECT seq FROM audit ORDER BY seq DESC LIMIT 1")

        def platforms() -> dict[str, bool]:
            return {c.platform: c in self._started for c in self.connectors}

        return health.Probes(platforms, {"vector": runtime.memory.count, "state": state, "audit": audit})

    def _redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "<redacted>")
        return text

    async def stop(self) -> None:
        """Stop receiving, let answers in flight finish, stop the scheduler; safe to call twice."""
        # the looks for what to consult about, while the connectors can still reach the owner
        await self.runtime.agent.later.stop()
        for connector in self.connectors:
            self.runtime.outbox.detach(connector.platform)
        for connector in reversed(self._started):
            try:
                await asyncio.wait_for(connector.stop(), _STOP_TIMEOUT_S)
            except Exception as exc:
                log.warning("connector_stop_failed", platform=connector.platform, error=type(exc).__name__)
        self._started.clear()
        if self._console_task is not None:
            self._console_task.cancel()
            await asyncio.gather(self._console_task, return_exceptions=True)
            self._console_task = None
        if self._health_task is not None:
            self._health_task.cancel()
            await asyncio.gather(self._health_task, return_exceptions=True)
            self._health_task = None
            await asyncio.to_thread(health.mark_stopped, self.health_path)
        if self._lease_task is not None:
            self._lease_task.cancel()
            await asyncio.gather(self._lease_task, return_exceptions=True)
            self._lease_task = None
        if self._live_task is not None:
            self._live_task.cancel()
            await asyncio.gather(self._live_task, return_exceptions=True)
            self._live_task = None
        try:
            await self.runtime.live.flush()
        except Exception:
            log.exception("live.flush_failed")
        await self.runtime.annotator.stop()
        await self.scheduler.stop()
        if self.lease is not None:
            try:
                await self.lease.retire()  # gone at once: what it left in flight is anyone's
            except Exception:
                log.exception("workers.retire_failed")
        log.info("service.stopped")

    async def wait(self, stop: asyncio.Event) -> None:
        """Until ``stop`` is set (a signal) or, on the console, input ends."""
        stopped = asyncio.ensure_future(stop.wait())
        waiters: set[asyncio.Future[Any]] = {stopped}
        if self._console_task is not None:
            waiters.add(self._console_task)
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()


@contextlib.contextmanager
def _signals_set(stop: asyncio.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set ``stop`` while inside (where this thread can take signals)."""
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
            handled.append(sig)
        except (NotImplementedError, RuntimeError):  # not the main thread, or no signals here
            pass
    try:
        yield
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)


async def serve(
    runtime_factory: Callable[[], Awaitable[Runtime]],
    platforms: PlatformSettings,
    *,
    console_identity: str = LOCAL.identity(OWNER_ID),
    stop: asyncio.Event | None = None,
) -> int:
    """Run until SIGINT/SIGTERM (or ``stop``); exit status 0 on a clean stop."""
    stop = stop or asyncio.Event()
    with _signals_set(stop):
        runtime = await runtime_factory()
        try:
            service = Service(runtime, platforms, console_identity=console_identity)
            await service.start()
            try:
                await service.wait(stop)
                log.info("service.stopping", signal=stop.is_set())
            finally:
                await service.stop()
        finally:
            await runtime.close()
    return 0


@dataclass
class Deployment:
    """Several owners' services in one process (bot/owners.py), and the platforms' clients they
    share (one bot for every owner): started after the services, stopped before them."""

    services: list[Service]
    fronts: list[Front] = field(default_factory=list)
    _started: list[Service | Front] = field(default_factory=list)

    async def start(self) -> None:
        parts: list[Service | Front] = [*self.services, *self.fronts]
        for part in parts:
            await part.start()
            self._started.append(part)
        log.info("deployment.started", owners=len(self.services), shared=[f.platform for f in self.fronts])

    async def stop(self) -> None:
        while self._started:
            await self._started.pop().stop()

    async def close(self) -> None:
        """Stop what started, then close every owner's runtime."""
        try:
            await self.stop()
        finally:
            for service in reversed(self.services):
                await service.runtime.close()


async def serve_all(deployment: Callable[[], Awaitable[Deployment]], stop: asyncio.Event | None = None) -> int:
    """A deployment of several owners until SIGINT/SIGTERM (or ``stop``): everything stopped
    and closed on the way out, whichever failed; exit status 0 on a clean stop."""
    stop = stop or asyncio.Event()
    with _signals_set(stop):
        opened = await deployment()
        try:
            await opened.start()
            await stop.wait()
            log.info("service.stopping", signal=True)
        finally:
            await opened.close()
    return 0
