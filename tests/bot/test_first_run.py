"""`epmem demo` and `epmem policy example` from the checkout (the wheel's own run is
tests/test_wheel.py): the demo never replaces a policy that is not the example's."""

from __future__ import annotations

from pathlib import Path

from bot.examples import POLICY, example_file
from tests.bot.test_cli import epmem, error_lines


def test_the_example_policy_is_printed_as_shipped_and_checks_out(tmp_path: Path) -> None:
    printed = epmem("policy", "example", data=tmp_path / "d")
    assert printed.returncode == 0 and printed.stdout == example_file(POLICY).read_text()
    mine = tmp_path / "my-policy.yaml"
    mine.write_text(printed.stdout)
    checked = epmem("policy", "check", str(mine), data=tmp_path / "d")
    assert checked.returncode == 0 and "9 contacts" in checked.stdout, checked


def test_the_demo_refuses_a_data_folder_with_another_policy(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "policy.yaml").write_text("owner: {name: Kai}\n")
    refused = epmem("demo", data=data)
    [line] = error_lines(refused)
    assert refused.returncode == 1 and f"({data / 'policy.yaml'}), which the demo would mix" in line
    assert (data / "policy.yaml").read_text() == "owner: {name: Kai}\n" and sorted(p.name for p in data.iterdir()) == [
        "policy.yaml"
    ]
    mine = tmp_path / "mine.yaml"
    mine.write_text("owner: {name: Kai}\n")
    explicit = epmem("demo", data=tmp_path / "other", env={"EPMEM_POLICY": str(mine)})
    assert explicit.returncode == 1 and f"EPMEM_POLICY is {mine}, not the example" in error_lines(explicit)[0]
    assert not (tmp_path / "other").exists()
