"""The docker/ set-up, checked without a Docker daemon (issue 21): the compose file's services,
health checks, start order, pinned images, volumes and ports; that no secret is written into the
compose file, env.example or the image; and the image's entry point and health check commands,
run directly as the container would run them, with env.example's values."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.examples import example_file
from testkit.runtime import REPO

DOCKER = REPO / "docker"
SECRET_NAME = re.compile(r"TOKEN|SECRET|API_KEY|PASSWORD", re.I)


def compose() -> dict[str, Any]:
    data = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    assert isinstance(data, dict)
    return data


def env_example() -> dict[str, str]:
    out = {}
    for line in (DOCKER / "env.example").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            out[name.strip()] = value.strip()
    return out


def dockerfile() -> list[tuple[str, str]]:
    """(instruction, rest) per instruction, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (DOCKER / "Dockerfile").read_text())
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line.strip() else "")
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def test_compose_runs_the_bot_after_a_healthy_pinned_qdrant() -> None:
    services = compose()["services"]
    assert set(services) == {"qdrant", "bot", "audit", "postgres", "worker"}
    assert services["postgres"]["profiles"] == ["postgres"]  # started only when asked for
    worker = services["worker"]
    assert worker["profiles"] == ["workers"] and "ports" not in worker  # behind a load balancer
    assert worker["depends_on"]["postgres"] == {"condition": "service_healthy"}  # never without it
    assert "/data" in worker["volumes"] and worker["environment"]["EPMEM_QDRANT_URL"] == "http://qdrant:6333"
    qdrant, bot = services["qdrant"], services["bot"]
    image = qdrant["image"]
    match = re.fullmatch(r"\$\{QDRANT_IMAGE:-qdrant/qdrant:v(\d+)\.(\d+)\.(\d+)\}", image)
    assert match, f"Qdrant must be pinned to a release, not {image!r}"
    client_major, client_minor = (int(x) for x in version("qdrant-client").split(".")[:2])
    assert int(match[1]) == client_major and abs(int(match[2]) - client_minor) <= 1  # qdrant-client's own rule
    assert qdrant["healthcheck"]["test"][0] == "CMD" and "/readyz" in " ".join(qdrant["healthcheck"]["test"])
    assert bot["depends_on"] == {
        "qdrant": {"condition": "service_healthy"},
        "postgres": {"condition": "service_healthy", "required": False},
    }
    assert bot["healthcheck"]["test"] == ["CMD", "epmem", "health"]
    assert bot["environment"]["EPMEM_QDRANT_URL"] == "http://qdrant:6333" and "ports" not in qdrant
    assert bot["command"] == ["run"]


def test_the_audit_page_is_a_service_behind_its_token_on_loopback() -> None:
    services = compose()["services"]
    audit, bot = services["audit"], services["bot"]
    assert audit["command"][:2] == ["audit", "serve"] and "--host" in audit["command"]
    assert audit["depends_on"] == {"bot": {"condition": "service_healthy"}}
    [port] = audit["ports"]
    assert port.startswith("127.0.0.1:") and port.endswith(":8080")  # never published beyond the host
    assert audit["image"] == bot["image"] and audit["env_file"] == bot["env_file"]
    assert "EPMEM_AUDIT_TOKEN" in env_example()  # the page refuses to start beyond loopback without it


def test_the_data_lives_on_named_volumes() -> None:
    c = compose()
    assert set(c["volumes"]) == {"qdrant-storage", "bot-data", "postgres-data"}
    for name in ("bot", "audit"):
        assert "bot-data:/data" in c["services"][name]["volumes"]
        assert c["services"][name]["environment"]["EPMEM_DATA_DIR"] == "/data"
    assert "qdrant-storage:/qdrant/storage" in c["services"]["qdrant"]["volumes"]


def test_no_secret_is_written_into_compose_env_example_or_the_image() -> None:
    for name, service in compose()["services"].items():
        for key, value in (service.get("environment") or {}).items():
            if SECRET_NAME.search(key):
                assert re.fullmatch(r"\$\{\w+\}", str(value)), (name, key)  # only a reference
        for entry in service.get("env_file") or []:
            assert entry["path"] == ".env"  # read at run time, from the operator's docker/.env
    example = env_example()
    for key, value in example.items():
        if SECRET_NAME.search(key):
            assert value == "", f"env.example must not carry a value for {key}"
    for instruction, rest in dockerfile():
        if instruction in ("ENV", "ARG"):
            assert not SECRET_NAME.search(rest), rest
        if instruction == "COPY":
            assert ".env" not in rest
    ignore = (DOCKER / "Dockerfile.dockerignore").read_text().splitlines()
    assert ignore[0] == "**" or "**" in ignore  # everything excluded ...
    assert not any(line.startswith("!docker") or ".env" in line for line in ignore if line.startswith("!"))


def test_env_example_names_every_setting_the_readme_and_compose_use() -> None:
    example = env_example()
    for name in (
        "EPMEM_POLICY_DIR",
        "EPMEM_POLICY_NAME",
        "TELEGRAM_BOT_TOKEN",
        "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET",
        "EPMEM_AUDIT_TOKEN",
    ):
        assert name in example, name
    commented = (DOCKER / "env.example").read_text()
    assert "SLACK_USER_TOKEN" in commented and "SLACK_APP_TOKEN" in commented
    # every ${VAR} compose interpolates has a default or is in env.example
    for var, default in re.findall(r"\$\{(\w+)(:-[^}]*)?\}", (DOCKER / "compose.yaml").read_text()):
        assert default or var in example or var in commented, var


@pytest.fixture
def container_env(tmp_path: Path) -> dict[str, str]:
    """What the bot container's process sees: env.example's values (as docker/.env), then the
    compose file's environment, with the container's paths mapped into tmp_path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EPMEM_", "TELEGRAM_", "SLACK_", "OPENAI_"))}
    env.update(env_example())
    for key, value in compose()["services"]["bot"]["environment"].items():
        env[key] = str(value)
    env["EPMEM_DATA_DIR"] = str(tmp_path / "data")  # the bot-data volume
    (tmp_path / "data").mkdir()  # the image makes /data (mkdir -p /data, VOLUME), so the volume is a folder
    env["EPMEM_POLICY"] = str(example_file(env_example()["EPMEM_POLICY_NAME"]))  # the /policy mount
    with __import__("socket").socket() as sock:  # the qdrant service, not started here
        sock.bind(("127.0.0.1", 0))
        env["EPMEM_QDRANT_URL"] = f"http://127.0.0.1:{sock.getsockname()[1]}"
    return env


def entry_command() -> list[str]:
    """ENTRYPOINT + CMD of the image, as exec-form JSON lists."""
    import json

    parts = {i: json.loads(rest) for i, rest in dockerfile() if i in ("ENTRYPOINT", "CMD")}
    return [*parts["ENTRYPOINT"], *parts["CMD"]]


def run_in_container(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    assert command[0] == "epmem"  # the console script: the same as python -m bot.cli
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *command[1:]],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def test_the_entry_point_with_env_example_says_what_is_missing(container_env: dict[str, str]) -> None:
    command = entry_command()
    assert command == ["epmem", "run"]
    # env.example as shipped: no platform. Not a silent exit 0 (a restart loop), one line.
    assert "no platform to serve" in one_error_line(run_in_container(command, container_env))
    # a token, but Qdrant not up: one line naming it
    with_token = {**container_env, "TELEGRAM_BOT_TOKEN": "123:secret-in-env"}
    result = run_in_container(command, with_token)
    assert "cannot reach the Qdrant server" in one_error_line(result) and "secret-in-env" not in result.stderr


def test_the_health_check_and_the_audit_command_run_directly(container_env: dict[str, str]) -> None:
    health = run_in_container(["epmem", "health"], container_env)
    assert health.returncode == 1 and "no health report" in health.stdout
    audit = run_in_container(["epmem", *compose()["services"]["audit"]["command"]], container_env)
    assert "EPMEM_AUDIT_TOKEN" in one_error_line(audit)  # env.example's empty token: refused, not served
    assert "audit token" not in audit.stdout
    doctor = run_in_container(["epmem", "doctor"], container_env)
    assert doctor.returncode == 1 and "missing: no platform" in doctor.stdout


def test_the_image_installs_the_wheel_its_first_stage_builds() -> None:
    steps = dockerfile()
    first, second = (i for i, (instruction, _) in enumerate(steps) if instruction == "FROM")
    builder, image = steps[first + 1 : second], steps[second + 1 :]
    copied = [part.rstrip("/") for instruction, rest in builder if instruction == "COPY" for part in rest.split()[:-1]]
    allowed = [
        line[1:].rstrip("/")
        for line in (DOCKER / "Dockerfile.dockerignore").read_text().splitlines()
        if line.startswith("!")
    ]
    assert sorted(copied) == sorted(allowed) == ["README.md", "bot", "connectors", "epmem", "pyproject.toml"]
    assert ("RUN", "pip wheel --no-deps --wheel-dir /wheels .") in builder
    # the image: no source tree, no editable install; the wheel, then the model files, checked
    assert not any(instruction in ("COPY", "ADD") for instruction, _ in image)
    [install] = [rest for instruction, rest in image if instruction == "RUN" and "pip install" in rest]
    assert "from=wheel" in install and "pip install /wheels/*.whl" in install and " -e " not in install
    assert install.index("pip install /wheels/*.whl") < install.index("epmem setup")
