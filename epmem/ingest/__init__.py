"""From chat history to annotated facts: importers (``load``: exports in, sessions out), the
extractors and annotator (``distill`` runs them per session), the resumable import (``pipeline``
with its ``journal``), and the owner's review queue."""

from epmem.ingest.annotate import CategoryClassifier, classify
from epmem.ingest.apply import write_sessions
from epmem.ingest.distill import AnnotationRetry, Distiller
from epmem.ingest.errors import IngestError
from epmem.ingest.examples import ExampleBank
from epmem.ingest.explicit import AnnotationProblem, Explicit, complete_explicit
from epmem.ingest.journal import MIGRATIONS as JOURNAL_MIGRATIONS
from epmem.ingest.journal import ImportJournal, SessionStage
from epmem.ingest.load import FORMATS, Export, ExportSummary, detect_format, open_export, read_export
from epmem.ingest.pipeline import ImportReport, ImportRun
from epmem.ingest.review import ReviewAnswer
from epmem.ingest.review import Question as ReviewQuestion
from epmem.ingest.review import ReviewError, ReviewQueue
from epmem.ingest.scenario_file import scenario_messages
from epmem.ingest.twins import SAME_NEWS
from epmem.ingest.unread import FILLER, Unread

__all__ = [
    "SAME_NEWS",
    "AnnotationProblem",
    "CategoryClassifier",
    "classify",
    "complete_explicit",
    "detect_format",
    "Distiller",
    "ExampleBank",
    "Explicit",
    "Export",
    "ExportSummary",
    "FORMATS",
    "ImportJournal",
    "ImportReport",
    "JOURNAL_MIGRATIONS",
    "ImportRun",
    "IngestError",
    "open_export",
    "read_export",
    "AnnotationRetry",
    "ReviewAnswer",
    "ReviewError",
    "ReviewQueue",
    "ReviewQuestion",
    "scenario_messages",
    "SessionStage",
    "write_sessions",
    "FILLER",
    "Unread",
]
