"""The consultations service: what the owner's parts hold when consultations are on.

bot/runtime.py (the composition root) builds one :class:`Consultations` from the table and the
owner's review queue, or leaves it out (``OwnerServices.consultations`` is None): a process
without it never consults, and every flow checks that once, here, instead of checking each
part it uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import aiosqlite

from epmem.db import Database
from epmem.ingest import ReviewQueue

from bot.clock import Clock
from bot.config import Settings
from bot.consultations.store import ConsultConfig, ConsultationStore


@dataclass(frozen=True, slots=True)
class Consultations:
    #: the table (bot/consultations/store.py), with its bounds.
    store: ConsultationStore
    #: the owner's review queue: an answer is applied as a review answer of the event's facts.
    review: ReviewQueue

    @property
    def config(self) -> ConsultConfig:
        return self.store.config


def build(db: Database | aiosqlite.Connection, settings: Settings, review: ReviewQueue, clock: Clock) -> Consultations:
    """The service as the settings (``EPMEM_CONSULT_*``) configure it, on the state database."""
    config = ConsultConfig(
        ttl=timedelta(hours=settings.consult_ttl_hours),
        max_open_per_asker=settings.consult_max_open,
        per_day=settings.consult_per_day,
        strangers_max_open=settings.consult_strangers_max_open,
        strangers_per_day=settings.consult_strangers_per_day,
        owner_per_day=settings.consult_owner_per_day,
        reask_after=timedelta(days=settings.consult_reask_after_days),
        strangers=settings.consult_strangers,
        groups=settings.consult_groups,
        learn_after=settings.consult_learn_after,
        per_reply=settings.consult_per_reply,
        per_message=settings.consult_per_message,
    )
    return Consultations(ConsultationStore(db, config, clock), review)
