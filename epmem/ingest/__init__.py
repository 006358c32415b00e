"""From chat history to annotated facts: importers (``load``: exports in, sessions out), the
extractors and annotator (``distill`` runs them per session), and the owner's review queue."""

from epmem.ingest.annotate import CategoryClassifier, classify
from epmem.ingest.apply import write_sessions
from epmem.ingest.distill import Distiller, RetryPolicy
from epmem.ingest.errors import IngestError
from epmem.ingest.examples import ExampleBank
from epmem.ingest.explicit import AnnotationProblem, Explicit, complete_explicit
from epmem.ingest.load import FORMATS, detect_format, read_export
from epmem.ingest.review import ReviewQueue
from epmem.ingest.scenario_file import scenario_messages

__all__ = [
    "AnnotationProblem", "CategoryClassifier", "complete_explicit", "Explicit", "classify", "detect_format", "Distiller", "ExampleBank", "FORMATS", "IngestError",
    "read_export", "RetryPolicy", "ReviewQueue", "scenario_messages", "write_sessions",
]
