"""The shape of the house, checked from the source: layers, no import cycles, small modules, one
exception tree.

Layers, bottom up: ``epmem`` (the library) and ``connectors`` (platform adapters) know nothing
of the bot; ``bot`` wires them together; ``testkit`` (loopback fakes, ready runtimes) sits on
the bot; ``benchmarks`` on top, imported by nothing; ``tests`` may import anything. ``bot`` and
``connectors`` reach ``epmem`` through its public surface only: the package, a (sub-)package
(``epmem.policy``, ``epmem.audit.web``) or a top-level module (``epmem.errors``), never an inner
module of a sub-package.

No import circle anywhere, between packages or inside one (``epmem.audit.log`` and
``epmem.audit.verify`` once imported each other): the graph is built from every import of every
module, and every import counts, at module level, inside a function (a cycle hidden in a
function is still a cycle a reader has to untangle) and under ``TYPE_CHECKING`` (two modules
that name each other's types are one design in two files). The one import left out is the
implicit one of a module's parent package (``import a.b.c`` runs ``a/b/__init__.py`` first):
a package's ``__init__`` gathering its own modules is its public surface, not a circle.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("epmem", "connectors", "bot", "testkit", "benchmarks", "tests")
#: the code the size limits hold for (tests are held to them by review, not by this test).
SHIPPED = ("epmem", "connectors", "bot", "testkit", "benchmarks")
#: counted in physical lines, as a reader scrolls them (blank lines, comments, docstrings and a
#: call ``ruff format`` spreads over ten lines all count); a function's from its first decorator.
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80

#: what each layer may not import.
FORBIDDEN = {
    "epmem": ("bot", "connectors", "testkit", "benchmarks", "tests"),
    "connectors": ("bot", "testkit", "benchmarks", "tests"),
    "bot": ("testkit", "benchmarks", "tests"),
    "testkit": ("benchmarks", "tests"),
    "benchmarks": ("tests",),
}
#: layers that may use only epmem's public surface.
PUBLIC_EPMEM_ONLY = ("connectors", "bot")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[_module_name(path)] = path
    return found


SOURCES = _sources()
PACKAGE_NAMES = {name for name, path in SOURCES.items() if path.name == "__init__.py"}


def _resolve(name: str) -> str | None:
    """The most specific first-party module ``name`` refers to (``a.b.C`` -> ``a.b``)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in SOURCES:
            return candidate
        parts.pop()
    return None


def _type_only(tree: ast.AST) -> set[int]:
    """The ids of the import statements under ``if TYPE_CHECKING:``."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            ids |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return ids


def _imports(module: str, path: Path) -> Iterator[tuple[str, int, bool]]:
    """(first-party module imported, line, only for type checking) for every import statement."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    typing_only = _type_only(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name)
                if target:
                    yield target, node.lineno, id(node) in typing_only
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                target = _resolve(f"{base}.{alias.name}") or _resolve(base)
                if target:
                    yield target, node.lineno, id(node) in typing_only


#: module -> every module it imports or names, type-only imports included: what can make a
#: cycle, and what the layers constrain.
GRAPH: dict[str, set[str]] = {}
#: module -> the modules it names only for type checking (a subset of GRAPH's).
TYPE_ONLY: dict[str, set[str]] = {}
WHERE: dict[tuple[str, str], int] = {}
for _name, _path in SOURCES.items():
    GRAPH[_name], TYPE_ONLY[_name] = set(), set()
    for _target, _line, _typing in _imports(_name, _path):
        if _target != _name:
            GRAPH[_name].add(_target)
            if _typing:
                TYPE_ONLY[_name].add(_target)
            WHERE.setdefault((_name, _target), _line)


def _layer(module: str) -> str:
    return module.split(".")[0]


def _cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(GRAPH):
        if root in index:
            continue
        work = [(root, iter(sorted(GRAPH[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(GRAPH[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles() -> None:
    described = []
    for component in _cycles():
        edges = [f"{a} -> {b} (line {WHERE[(a, b)]})" for a in component for b in sorted(GRAPH[a]) if b in component]
        described.append("; ".join(edges))
    assert not described, "import cycles:\n" + "\n".join(described)


def test_no_import_goes_up_a_layer() -> None:
    wrong = [
        f"{SOURCES[a].relative_to(ROOT)}:{WHERE[(a, b)]} imports {b}"
        for a, targets in GRAPH.items()
        for b in sorted(targets)
        if _layer(b) in FORBIDDEN.get(_layer(a), ())
    ]
    assert not wrong, "imports from a lower layer up:\n" + "\n".join(wrong)


def _public(module: str) -> bool:
    """``epmem``, a package (``epmem.policy``, ``epmem.audit.web``) or a top-level module."""
    return module in PACKAGE_NAMES or module.count(".") <= 1


def test_bot_and_connectors_use_only_epmems_public_surface() -> None:
    wrong = [
        f"{SOURCES[a].relative_to(ROOT)}:{WHERE[(a, b)]} imports {b}: import it from "
        f"{'.'.join(b.split('.')[:2])} (add it to that sub-package's __all__ if it is missing)"
        for a, targets in GRAPH.items()
        if _layer(a) in PUBLIC_EPMEM_ONLY
        for b in sorted(targets)
        if _layer(b) == "epmem" and not _public(b)
    ]
    assert not wrong, "\n".join(wrong)


def _shipped() -> Iterator[tuple[str, Path]]:
    for name, path in SOURCES.items():
        if _layer(name) in SHIPPED:
            yield str(path.relative_to(ROOT)), path


def _module_lines(source: str) -> int:
    """Physical lines of a module: what ``wc -l`` says of it."""
    return len(source.splitlines())


def _long_functions(source: str, rel: str) -> Iterator[str]:
    """``path:line name: N lines`` for each function (methods, nested ones too) over the limit,
    counted from its first decorator to its last line."""
    for node in ast.walk(ast.parse(source, rel)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            length = (node.end_lineno or node.lineno) - first + 1
            if length > MAX_FUNCTION_LINES:
                yield f"{rel}:{node.lineno} {node.name}: {length} lines"


def test_no_module_over_the_limit() -> None:
    long = [
        f"{rel}: {lines} lines"
        for rel, path in _shipped()
        if (lines := _module_lines(path.read_text())) > MAX_MODULE_LINES
    ]
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by concern):\n" + "\n".join(long)


def test_no_function_over_the_limit() -> None:
    long = [hit for rel, path in _shipped() for hit in _long_functions(path.read_text(), rel)]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)


def test_the_size_checks_count_what_a_reader_sees() -> None:
    """Blank lines, comments, a docstring and a call spread over lines count; decorators count
    to their function; a nested function is checked on its own."""
    body = "    x = call(\n        1,\n    )\n\n    # a comment\n" * ((MAX_FUNCTION_LINES - 3) // 5)
    body += "    return x\n" * ((MAX_FUNCTION_LINES - 3) % 5)
    fits = '@decorator\ndef fits():\n    """Doc."""\n' + body
    assert len(fits.splitlines()) == MAX_FUNCTION_LINES
    assert list(_long_functions(fits, "m.py")) == []
    over = "@another\n" + fits
    assert list(_long_functions(over, "m.py")) == [f"m.py:3 fits: {MAX_FUNCTION_LINES + 1} lines"]
    nested = "class C:\n    def outer(self):\n" + "\n".join("        " + line for line in over.splitlines()) + "\n"
    assert [hit.split(" ")[1] for hit in _long_functions(nested, "m.py")] == ["outer:", "fits:"]
    assert _module_lines("a = 1\n\n# note\n" * 3) == 9
    assert {rel for rel, _ in _shipped()} >= {"epmem/errors.py", "bot/runtime.py", "benchmarks/cli.py"}
    assert not any(rel.startswith("tests/") for rel, _ in _shipped())


#: the platforms: a package under connectors/ with a registration (platform.py) each.
PLATFORM_PACKAGES = sorted(p.parent.name for p in (ROOT / "connectors").glob("*/platform.py"))
#: where a platform may be named besides its own package: the registration table.
REGISTRATION = "connectors/platforms.py"
#: modules that name a platform for a reason other than serving it; each says why. An entry
#: that no longer names one fails too, so the list only shrinks.
NAMES_A_PLATFORM = {
    "epmem/ingest/telegram.py": "reads Telegram Desktop's export file (an import format, not a live platform)",
    "epmem/ingest/slack.py": "reads a Slack workspace export (an import format)",
    "epmem/ingest/load.py": "picks the export reader (--format telegram|slack|jsonl|scenario)",
    "epmem/ingest/failclosed.py": "explains where an import finds the owner (a Telegram export's account)",
    "bot/cli/imports.py": "`epmem ingest`'s help names the export formats",
    "epmem/memory/retrieval.py": "'slack' as in leeway (date_slack_days), not the platform",
    "bot/commands/platforms.py": "/delegate's help says which shipped platforms write as the owner",
    "bot/commands/review.py": "/review's help says where its buttons show",
    "bot/commands/registry.py": "renders the Slack manifests' usage hint from the registry it belongs to",
    "bot/state.py": "migrates the file the Slack connector kept before the state database (702941f)",
    "bot/log_setup.py": "quietens python-telegram-bot's updater logger with the other libraries' loggers",
    "connectors/logs.py": "guards the platform SDKs' loggers, one redaction for all of them",
}


def _words(text: str) -> set[str]:
    """``TelegramConnector`` -> {telegram, connector}; ``telegram:1``, ``SLACK_BOT_TOKEN`` alike."""
    return {w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", text)}


def _named_platforms(source: str, platforms: list[str]) -> list[str]:
    """``line: word`` for each platform named in code: identifiers, imports and string values
    (docstrings and comments may explain a platform; code may not depend on one)."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        texts: list[str] = []
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            texts = [node.value]
        elif isinstance(node, ast.Name):
            texts = [node.id]
        elif isinstance(node, ast.Attribute):
            texts = [node.attr]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            texts = [node.name]
        elif isinstance(node, ast.arg):
            texts = [node.arg]
        elif isinstance(node, ast.ImportFrom):
            texts = [node.module or "", *(a.name for a in node.names)]
        elif isinstance(node, ast.Import):
            texts = [a.name for a in node.names]
        found += [f"{getattr(node, 'lineno', '?')}: {w}" for t in texts for w in sorted(_words(t) & set(platforms))]
    return found


def _platform_naming_modules() -> dict[str, list[str]]:
    """The library, the agent and the shared connector code, each module's platform names."""
    named = {}
    for name, path in SOURCES.items():
        rel = str(path.relative_to(ROOT))
        own = any(rel.startswith(f"connectors/{p}/") for p in PLATFORM_PACKAGES)
        if _layer(name) in ("epmem", "bot", "connectors") and not own and rel != REGISTRATION:
            hits = _named_platforms(path.read_text(), PLATFORM_PACKAGES)
            if hits:
                named[rel] = hits
    return named


def test_only_a_platforms_package_and_its_registration_name_it() -> None:
    """Adding a platform is one package plus one registration: nothing else may need an edit."""
    named = _platform_naming_modules()
    wrong = [f"{rel}:{hit}" for rel, hits in sorted(named.items()) if rel not in NAMES_A_PLATFORM for hit in hits]
    assert not wrong, (
        "a platform named outside connectors/<platform>/ and " + REGISTRATION + " (ask the "
        "registry, connectors/registry.py, instead):\n" + "\n".join(wrong)
    )
    stale = sorted(set(NAMES_A_PLATFORM) - set(named))
    assert not stale, f"no longer name a platform, drop them from NAMES_A_PLATFORM: {stale}"


def test_the_platform_check_sees_what_it_checks() -> None:
    import connectors.platforms

    assert PLATFORM_PACKAGES == sorted(p.name for p in connectors.platforms.BUILT_IN)
    planted = 'from connectors.slack import SlackConnector\nowner = "telegram:1"\ndef telegram_config(): ...\n'
    assert sorted(set(_named_platforms(planted, PLATFORM_PACKAGES))) == ["1: slack", "2: telegram", "3: telegram"]
    assert _named_platforms('"""Telegram, in a docstring."""\n# slack in a comment\n', PLATFORM_PACKAGES) == []


def test_the_checks_see_what_they_check() -> None:
    """The graph is not empty by accident: known edges are in it, a planted cycle is found."""
    assert "bot.commands.registry" in GRAPH["bot.commands.exceptions"]
    assert "epmem.policy.holder" in GRAPH["epmem.policy.directory"]
    assert "bot.runtime" in GRAPH["bot.cli.chat"]
    assert "bot.services" in TYPE_ONLY["bot.commands.registry"]  # type-only, and in the graph
    assert "bot.services" in GRAPH["bot.commands.registry"]
    assert "bot.runtime" in GRAPH["bot.cli.memory"]  # imported inside a function
    assert "epmem.audit.verify" in GRAPH["epmem.audit.log"]
    saved = {m: set(GRAPH[m]) for m in ("epmem.errors", "epmem.sqlite", "epmem.audit.verify")}
    try:
        GRAPH["epmem.errors"].add("epmem.sqlite")
        WHERE[("epmem.errors", "epmem.sqlite")] = 0
        assert any({"epmem.errors", "epmem.sqlite"} <= set(c) for c in _cycles())
        # a circle inside one package, closed by a type-only import, is found too
        GRAPH["epmem.audit.verify"].add("epmem.audit.log")
        assert any({"epmem.audit.log", "epmem.audit.verify"} <= set(c) for c in _cycles())
    finally:
        GRAPH.update(saved)


#: the packages whose class names must be unique: one name, one thing, wherever it is read.
UNIQUE_CLASS_NAMES = ("epmem", "bot", "connectors")


def _classes(packages: tuple[str, ...] = UNIQUE_CLASS_NAMES) -> dict[str, list[str]]:
    """class name -> where each class of that name is defined (``path:line``), nested ones too."""
    found: dict[str, list[str]] = {}
    for name, path in SOURCES.items():
        if _layer(name) not in packages:
            continue
        rel = path.relative_to(ROOT)
        for node in ast.walk(ast.parse(path.read_text(), str(rel))):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(f"{rel}:{node.lineno}")
    return found


def test_class_names_are_unique() -> None:
    """Two classes of one name (two ``RetryPolicy``, two ``Answer``) make every import and every
    traceback a question of which one; a name says what a class is, so it names one class."""
    twice = {name: where for name, where in _classes().items() if len(where) > 1}
    assert not twice, "class names defined more than once:\n" + "\n".join(
        f"{name}: {', '.join(where)}" for name, where in sorted(twice.items())
    )


def test_the_class_check_sees_classes() -> None:
    found = _classes()
    assert len(found) > 100 and {"PrivacyEngine", "DelegateAgent", "Courier", "AuditLog"} <= set(found)
    assert _classes(("testkit",)) and not set(_classes(("testkit",))) & {"PrivacyEngine"}


#: the packages whose every exception class is an :class:`epmem.errors.EpmemError`.
ONE_EXCEPTION_TREE = ("epmem", "bot", "connectors")


def _exception_classes(packages: tuple[str, ...] = ONE_EXCEPTION_TREE) -> dict[str, type[BaseException]]:
    """``module.Class`` -> the class, for every exception class the modules of ``packages`` define
    (imported, so a base named through an alias or another module counts as what it is)."""
    import importlib
    import inspect

    found: dict[str, type[BaseException]] = {}
    seen: set[type] = set()
    for name in sorted(SOURCES):
        if _layer(name) not in packages or name.endswith("__main__"):
            continue
        classes = [c for c in vars(importlib.import_module(name)).values() if inspect.isclass(c)]
        while classes:
            cls = classes.pop()
            if cls.__module__ == name and cls not in seen:
                seen.add(cls)
                classes += [c for c in vars(cls).values() if inspect.isclass(c)]
                if issubclass(cls, BaseException):
                    found[f"{name}.{cls.__qualname__}"] = cls
    return found


def test_every_exception_is_an_epmem_error() -> None:
    """One tree: a caller that catches :class:`EpmemError` (the CLI's one-line error) catches
    every error the project raises on purpose; each keeps the builtin base it had."""
    from epmem.errors import EpmemError

    found = _exception_classes()
    assert {"bot.commands.registry.CommandError", "connectors.courier.DeliveryFailed"} <= set(found)
    outside = sorted(name for name, cls in found.items() if not issubclass(cls, EpmemError))
    assert not outside, "exceptions outside the EpmemError tree (derive them from it):\n" + "\n".join(outside)
