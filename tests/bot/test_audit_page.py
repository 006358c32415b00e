"""The audit page over HTTP, served by the real `epmem audit serve` subprocess: owner-only
access, the same decisions and verdicts as the CLI, escaping, pagination, who-knows, erasure."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from epmem.audit import AuditLog
from epmem.audit.web import PageConfig, PageRefused, choose_token, create_app
from epmem.audit.web.app import COOKIE
from epmem.policy import Policy
from testkit.clock import FakeTimer
from testkit.audit_page import BULK, CANARY, SCRIPT_Q, TOKEN, AuditData, PageProcess, build_audit, page_env
from testkit.runtime import REPO

AUTH = {"Authorization": f"Bearer {TOKEN}"}
JSON = {**AUTH, "Accept": "application/json"}


@pytest.fixture(scope="module")
def audit_data(tmp_path_factory: pytest.TempPathFactory) -> AuditData:
    return asyncio.run(build_audit(tmp_path_factory.mktemp("page")))


@pytest.fixture(scope="module")
def page(audit_data: AuditData) -> Iterator[PageProcess]:
    proc = PageProcess(audit_data)
    try:
        yield proc
    finally:
        if proc.proc.poll() is None:
            proc.stop()


def cli(data: AuditData, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args],
        capture_output=True,
        text=True,
        env=page_env(data),
        cwd=REPO,
        timeout=120,
    )


def all_rows(url: str, **params: str) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    query: dict[str, str] = dict(params)
    while True:
        got = httpx.get(url, params=query, headers=JSON).json()
        rows += got["rows"]
        if got["older_before"] is None:
            return rows
        query = {**params, "before": str(got["older_before"])}


def test_without_the_token_every_route_is_401_with_no_data(page: PageProcess, audit_data: AuditData) -> None:
    secrets = [SCRIPT_Q, "Elm Road", audit_data.script_record, "bulk question", "house hunt"]
    attempts = [
        ("GET", "", {}),
        ("GET", f"decision/{audit_data.script_record}", {}),
        ("GET", "who-knows", {}),
        ("GET", "who-knows?by=event", {"Accept": "application/json"}),
        ("GET", "no/such/page", {}),
        ("GET", "login", {}),
        ("POST", "login", {}),
        ("HEAD", "", {}),
        ("GET", "", {"Authorization": "Bearer wrong"}),
        ("GET", "", {"Authorization": TOKEN}),
        ("GET", "", {"Cookie": f"epmem_audit={TOKEN}"}),
        ("DELETE", "", {}),
        ("PUT", "who-knows", {}),
    ]
    for method, path, headers in attempts:
        data = {"token": "not-it"} if method == "POST" else None
        r = httpx.request(method, page.url + path, headers=headers, data=data)
        assert r.status_code == 401, (method, path, r.status_code)
        assert r.headers["www-authenticate"].startswith("Bearer")
        assert not any(s in r.text for s in secrets if s not in path), (method, path)  # only its own words


def test_the_login_form_sets_an_httponly_samesite_strict_cookie(page: PageProcess) -> None:
    with httpx.Client(base_url=page.url) as client:
        form = client.get("/who-knows")
        assert form.status_code == 401 and 'name="token"' in form.text and 'value="/who-knows"' in form.text
        wrong = client.post("/login", data={"token": "nope", "next": "/"})
        assert wrong.status_code == 401 and "not right" in wrong.text and not client.cookies
        ok = client.post("/login", data={"token": TOKEN, "next": "https://evil.example/"})
        assert ok.status_code == 303 and ok.headers["location"] == "/"  # never off-site
        cookie = ok.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and TOKEN.lower() not in cookie
        assert client.get("/").status_code == 200


def test_the_timeline_lists_every_decision_the_cli_lists(page: PageProcess, audit_data: AuditData) -> None:
    listed = [
        json.loads(x) for x in cli(audit_data, "audit", "list", "--json", "--limit", "100000").stdout.splitlines()
    ]
    rows = all_rows(page.url)
    assert len(rows) == len(listed) > BULK
    assert [r["id"] for r in rows] == [x["id"] for x in reversed(listed)]  # newest first
    seqs = [int(str(r["seq"])) for r in rows]
    assert seqs == sorted(seqs, reverse=True)
    kinds = {r["outcome"] for r in rows}
    assert {"answered", "deflected", "held", "attempted command", "policy change", "erasure"} <= kinds


def test_a_decision_page_shows_the_verdicts_of_audit_show(page: PageProcess, audit_data: AuditData) -> None:
    rows = [r for r in all_rows(page.url, outcome="answered") if r["contact"] != "kim"][:4]
    rows += [{"id": audit_data.held_record}]
    assert len(rows) == 5
    for row in rows:
        shown = json.loads(cli(audit_data, "audit", "show", str(row["id"])).stdout)
        twin = httpx.get(f"{page.url}decision/{row['id']}", headers=JSON).json()
        html = httpx.get(f"{page.url}decision/{row['id']}", headers=AUTH).text
        assert shown["candidates"], row
        assert [c["fact"] for c in twin["candidates"]] == [c["fact"] for c in shown["candidates"]]
        for mine, theirs in zip(twin["candidates"], shown["candidates"], strict=True):
            assert set(mine["verdicts"]) == set(theirs["verdicts"])
            for who, text in theirs["verdicts"].items():
                parts = mine["verdicts"][who]
                assert text.startswith("allow" if parts["allowed"] else "deny")
                assert f"rule {parts['rule']}, {parts['reason']}" in text
                assert (parts["exception"] is None) == ("(" not in text)
                assert f"rule {parts['rule']} ({parts['reason']})" in html.replace("&#39;", "'")
        assert twin["record"]["hash"] == shown["hash"] and f"record {shown['seq']} of the chain" in html


def test_a_script_in_a_question_is_shown_as_text(page: PageProcess, audit_data: AuditData) -> None:
    for path in ("", f"decision/{audit_data.script_record}"):
        html = httpx.get(page.url + path, headers=AUTH).text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "<script>alert(1)" not in html
    bad = httpx.get(page.url, params={"outcome": "<script>alert(2)</script>"}, headers=AUTH)
    assert bad.status_code == 400 and "<script>alert(2)" not in bad.text and "&lt;script&gt;" in bad.text
    assert "default-src 'none'" in bad.headers["content-security-policy"]


def test_pages_of_fifty_with_filters_kept(page: PageProcess) -> None:
    first = httpx.get(page.url, headers=JSON).json()
    assert len(first["rows"]) == 50 and first["newer_after"] is None and first["older_before"] is not None
    second = httpx.get(page.url, params={"before": first["older_before"]}, headers=JSON).json()
    assert second["rows"][0]["seq"] == first["rows"][-1]["seq"] - 1
    back = httpx.get(page.url, params={"after": second["newer_after"]}, headers=JSON).json()
    assert [r["id"] for r in back["rows"]] == [r["id"] for r in first["rows"]]
    html = httpx.get(page.url, params={"contact": "kim", "outcome": "deflected"}, headers=AUTH).text
    assert "contact=kim&amp;outcome=deflected&amp;before=" in html  # the older link keeps the filters
    kim = all_rows(page.url, contact="kim", outcome="deflected")
    assert len(kim) >= BULK and {(r["contact"], r["outcome"]) for r in kim} == {("kim", "deflected")}
    assert {r["platform"] for r in all_rows(page.url, platform="telegram")} == {"telegram"}
    today, yesterday = date.today(), date.today() - timedelta(days=1)
    assert httpx.get(page.url, params={"to": yesterday.isoformat()}, headers=JSON).json()["total"] == 0
    assert httpx.get(page.url, params={"from": today.isoformat()}, headers=JSON).json()["total"] == first["total"]
    assert httpx.get(page.url, params={"from": "May 1"}, headers=AUTH).status_code == 400


def test_who_knows_marks_told_may_know_and_exceptions(page: PageProcess) -> None:
    got = httpx.get(f"{page.url}who-knows", headers=JSON).json()
    rows = {r["id"]: r["cells"] for r in got["rows"]}
    assert rows["f1"]["leo"]["state"] == "told" and rows["f1"]["leo"]["told_at"]
    assert rows["f1"]["raj"]["state"] == "may not know"  # L2 life, Raj is L4; his /allow was only text
    assert rows["f2"]["raj"]["state"] == "told"  # the cover, in the group chat with Ana
    assert rows["f3"]["ana"]["state"] == "may know" and "exception" in rows["f3"]["ana"]["exception"]
    assert rows["f3"]["leo"]["exception"] == "whitelist:family"
    assert rows["f4"]["grace"]["state"] == "may not know" and rows["f4"]["grace"]["exception"] == "blacklist:grace"
    assert rows["f3"]["family"]["state"] == "may know" and rows["f4"]["family"]["state"] == "may not know"
    gone = next(r for r in got["rows"] if r["id"] == "q1")
    assert gone["text"] is None and gone["cells"]["leo"]["state"] == "told"  # forgotten, still in the ledger
    found = httpx.get(f"{page.url}who-knows", params={"q": "Retention BONUS"}, headers=JSON).json()
    assert [r["id"] for r in found["rows"]] == ["f3"] and found["total"] == 1
    assert [r["id"] for r in httpx.get(f"{page.url}who-knows", params={"q": "q1"}, headers=JSON).json()["rows"]] == [
        "q1"
    ]
    assert httpx.get(f"{page.url}who-knows", params={"page": "9"}, headers=JSON).json()["page"] == 1  # clamped
    events = httpx.get(f"{page.url}who-knows", params={"by": "event"}, headers=JSON).json()
    assert {r["id"] for r in events["rows"]} >= {"e-house", "e-bonus", "e-knee"}
    html = httpx.get(f"{page.url}who-knows", headers=AUTH).text
    assert "told (" in html and "may know" in html and "may not know" in html and "&#9733;" in html


def test_after_forget_the_page_shows_the_record_as_erased(page: PageProcess, audit_data: AuditData) -> None:
    twin = httpx.get(f"{page.url}decision/{audit_data.erased_record}", headers=JSON).json()
    assert twin["record"]["reply"] is None and twin["record"]["question"] is None
    assert set(twin["erased"]) >= {"question", "reply"} and twin["chain"]["ok"]
    html = httpx.get(f"{page.url}decision/{audit_data.erased_record}", headers=AUTH).text
    assert "erased" in html and "by console:owner" in html and CANARY not in html
    assert all(CANARY not in httpx.get(page.url + p, headers=AUTH).text for p in ("", "who-knows"))
    assert "Chain verified" in html


def test_it_reads_beside_a_writer_without_blocking_it(page: PageProcess, audit_data: AuditData) -> None:
    async def write() -> str:
        async with AuditLog(audit_data.data / "audit.sqlite") as log:
            first = httpx.get(page.url, headers=JSON).json()["rows"][0]["id"]  # a reader mid-way
            rec = await log.append(
                "reply",
                {
                    "platform": "console",
                    "question": "while the page reads?",
                    "candidates": [],
                    "disclosed": [],
                    "deflected": True,
                    "reply": "No.",
                },
                contact="ben",
            )
            assert first != rec.id
            return rec.id

    new = asyncio.run(write())
    assert httpx.get(page.url, headers=JSON).json()["rows"][0]["id"] == new


def test_it_stops_cleanly_on_sigint_and_sigterm_and_refuses_an_open_host(audit_data: AuditData) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        proc = PageProcess(audit_data)
        assert httpx.get(proc.url, headers=AUTH).status_code == 200
        code, out, err = proc.stop(sig)
        assert code == 0 and "Traceback" not in err, (sig, code, err)
        assert [x for x in proc.lines + out.splitlines() if x.startswith("audit page:")] == [f"audit page: {proc.url}"]
    generated = PageProcess(audit_data, token=None)
    token = next(x for x in generated.lines if x.startswith("audit token: ")).split(": ", 1)[1]
    assert httpx.get(generated.url, headers={"Authorization": f"Bearer {token}"}).status_code == 200
    assert httpx.get(generated.url, headers=AUTH).status_code == 401
    generated.stop()
    refused = subprocess.run(
        [sys.executable, "-m", "bot.cli", "audit", "serve", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        env=page_env(audit_data, None),
        cwd=REPO,
        timeout=60,
    )
    assert refused.returncode == 2 and "not loopback" in refused.stderr and "audit page" not in refused.stdout
    assert Path(audit_data.data / "audit.sqlite").exists()


def _sign_in(client: httpx.Client | TestClient) -> str:
    ok = client.post("/login", data={"token": TOKEN, "next": "/"})
    assert ok.status_code == 303, ok.text
    return ok.cookies[COOKIE]


def test_each_sign_in_is_a_random_session_that_logout_ends(page: PageProcess) -> None:
    """Issue 21: the cookie was a fixed hash of the token, with no logout and no expiry."""
    with httpx.Client(base_url=page.url) as first, httpx.Client(base_url=page.url) as second:
        one, two = _sign_in(first), _sign_in(second)
        assert one != two and len(one) >= 40 and TOKEN not in one
        cookie = first.post("/login", data={"token": TOKEN}).headers["set-cookie"].lower()
        assert "max-age=28800" in cookie and "secure" not in cookie  # loopback: plain http works
        assert first.get("/").status_code == 200 and second.get("/").status_code == 200
        assert 'action="/logout"' in first.get("/").text
        current = first.cookies[COOKIE]
        out = first.post("/logout")
        assert out.status_code == 401 and "signed out" in out.text and COOKIE not in first.cookies
        # the session is over on the server too: replaying the old cookie gets nothing
        replay = httpx.get(page.url, cookies={COOKIE: current})
        assert replay.status_code == 401 and "bulk question" not in replay.text
        assert second.get("/").status_code == 200  # other sign-ins are untouched


def test_a_session_expires(audit_data: AuditData) -> None:
    """`--session-hours` sets the session's length (the real command's cookie says so); the
    session ends at that length on the page's clock, moved by the test instead of waited for."""
    short = PageProcess(audit_data, "--session-hours", "0.5")
    try:
        with httpx.Client(base_url=short.url) as client:
            assert "max-age=1800" in client.post("/login", data={"token": TOKEN}).headers["set-cookie"].lower()
    finally:
        short.stop()
    clock = FakeTimer()
    config = PageConfig(
        audit_data.data / "audit.sqlite",
        audit_data.data / "state.sqlite",
        _no_policy,
        TOKEN,
        session_ttl_s=1800.0,
        clock=clock.now,
    )
    with TestClient(create_app(config), base_url="http://127.0.0.1", follow_redirects=False) as client:
        _sign_in(client)
        clock.advance(1799.0)
        assert client.get("/").status_code == 200  # a second before the end it still works
        clock.advance(1.0)
        late = client.get("/")
        assert late.status_code == 401 and "session expired" in late.text and "bulk question" not in late.text


def test_beyond_loopback_cookies_are_secure_and_short_tokens_refused(audit_data: AuditData) -> None:
    long_token = "x" * 32
    config = PageConfig(
        audit_data.data / "audit.sqlite", audit_data.data / "state.sqlite", _no_policy, long_token, secure_cookie=True
    )
    with TestClient(create_app(config), base_url="https://audit.example") as client:
        ok = client.post("/login", data={"token": long_token, "next": "/"}, follow_redirects=False)
        cookie = ok.headers["set-cookie"].lower()
        assert "secure" in cookie and "samesite=strict" in cookie and "httponly" in cookie
    with pytest.raises(PageRefused, match="has 31 characters; .* at least 32"):
        choose_token("0.0.0.0", "s" * 31)
    assert choose_token("0.0.0.0", long_token) == (long_token, False)
    assert choose_token("127.0.0.1", "short") == ("short", False)  # the owner's own machine
    refused = subprocess.run(
        [sys.executable, "-m", "bot.cli", "audit", "serve", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        env=page_env(audit_data, token="s" * 31),
        cwd=REPO,
        timeout=120,
    )
    assert refused.returncode == 2 and "at least 32" in refused.stderr and "s" * 31 not in refused.stderr
    assert "Traceback" not in refused.stderr and refused.stdout == ""


async def _no_policy() -> Policy:
    raise AssertionError("not read by these pages")


def test_bidi_controls_are_shown_visibly(page: PageProcess, audit_data: AuditData) -> None:
    """Issue 21: a right-to-left override (U+202E) in a question was shown raw."""
    for path in ("", f"decision/{audit_data.bidi_record}"):
        html = httpx.get(page.url + path, headers=AUTH).text
        assert "invoice\u27e8U+202E\u27e9gpj.exe" in html, path
        assert "\u202e" not in html, path
