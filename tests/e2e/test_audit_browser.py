"""The audit page in a real browser: headless Chromium (Debian's chromium and chromium-driver)
signs in through the form, loads the timeline, follows a row to its decision, opens who-knows,
and takes a screenshot of each that must not be blank.

``EPMEM_SCREENSHOT_DIR=docs`` saves the three screenshots there (the README shows them). It is
read at import: the suite's autouse fixture clears EPMEM_* variables before each test.
"""

from __future__ import annotations

import asyncio
import io
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.audit_page import SCRIPT_Q, TOKEN, AuditData, PageProcess, PageThread, build_audit
from testkit.clock import FakeTimer
from testkit.house import HOUSE_Q

SCREENSHOT_DIR = os.environ.get("EPMEM_SCREENSHOT_DIR")
CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)",
)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PageProcess, AuditData]]:
    data = asyncio.run(build_audit(tmp_path_factory.mktemp("browser")))
    proc = PageProcess(data)
    try:
        yield proc, data
    finally:
        proc.stop()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'chromium'}",
        "--window-size=1280,860",
        "--hide-scrollbars",
    ):
        options.add_argument(arg)
    options.binary_location = str(CHROMIUM)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def not_blank(png: bytes) -> tuple[float, int]:
    """(share of pixels that are not the background, number of distinct colours)."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    background = image.getpixel((image.width - 1, image.height - 1))
    counts: dict[Any, int] = {colour: n for n, colour in image.getcolors(image.width * image.height) or []}
    total = image.width * image.height
    return 1 - counts.get(background, 0) / total, len(counts)


def shoot(driver: Any, name: str, tmp_path: Path) -> bytes:
    png: bytes = driver.get_screenshot_as_png()
    ink, colours = not_blank(png)
    assert ink > 0.02 and colours > 16, (name, ink, colours)
    for folder in filter(None, (tmp_path, Path(SCREENSHOT_DIR) if SCREENSHOT_DIR else None)):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"audit-{name}.png").write_bytes(png)
    return png


def test_timeline_decision_and_who_knows_in_chromium(
    page: tuple[PageProcess, AuditData], browser: Any, tmp_path: Path
) -> None:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    proc, data = page
    wait = WebDriverWait(browser, 20)
    browser.get(proc.url)
    wait.until(ec.presence_of_element_located((By.ID, "token"))).send_keys(TOKEN)
    browser.find_element(By.CSS_SELECTOR, "form.login button").click()
    table = wait.until(ec.presence_of_element_located((By.ID, "timeline")))
    assert "Chain verified" in browser.find_element(By.ID, "chain").text
    links = [a.text for a in table.find_elements(By.CSS_SELECTOR, "a.decision")]
    assert len(links) == 50 and SCRIPT_Q in links  # the script is text on the page...
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # ...and never ran  # noqa: B018
    cookie = next(c for c in browser.get_cookies() if c["name"] == "epmem_audit")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    shoot(browser, "timeline", tmp_path)

    rows = table.find_elements(By.CSS_SELECTOR, "tbody tr")
    group = next(
        r
        for r in rows
        if r.find_elements(By.TAG_NAME, "td")[2].text == "ana"
        and r.find_element(By.CSS_SELECTOR, "a.decision").text == HOUSE_Q
    )
    record_id = group.get_attribute("data-id")
    group.find_element(By.CSS_SELECTOR, "a.decision").click()
    candidates = wait.until(ec.presence_of_element_located((By.ID, "candidates")))
    assert record_id in browser.find_element(By.TAG_NAME, "h1").text
    text = candidates.text
    assert "raj: deny, rule 4 (fact deeper than recipient)" in text and "disclosed" in text
    assert "verified" in browser.find_element(By.ID, "chain-position").text
    shoot(browser, "decision", tmp_path)

    browser.find_element(By.LINK_TEXT, "Who knows").click()
    matrix = wait.until(ec.presence_of_element_located((By.ID, "matrix")))
    assert "told (" in matrix.text and "may not know" in matrix.text
    shoot(browser, "who-knows", tmp_path)

    browser.get(f"{proc.url}decision/{data.erased_record}")
    assert "erased" in wait.until(ec.presence_of_element_located((By.TAG_NAME, "main"))).text


def test_sign_in_sign_out_and_expiry_in_chromium(page: tuple[PageProcess, AuditData], browser: Any) -> None:
    """Issue 21: a random session per sign-in, a way to sign out, and an end to every session.
    The page is served in-process on a clock the test moves: the session ends on the server
    while the browser still holds its cookie, so the form comes back from the server's check."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    _, data = page
    clock = FakeTimer()
    short = PageThread(data, clock.now, ttl_s=3600.0)
    try:
        wait = WebDriverWait(browser, 20)

        def sign_in() -> str:
            browser.get(short.url)
            wait.until(ec.presence_of_element_located((By.ID, "token"))).send_keys(TOKEN)
            browser.find_element(By.CSS_SELECTOR, "form.login button").click()
            wait.until(ec.presence_of_element_located((By.ID, "timeline")))
            cookie = next(c for c in browser.get_cookies() if c["name"] == "epmem_audit")
            assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and "expiry" in cookie
            return str(cookie["value"])

        first = sign_in()
        browser.find_element(By.ID, "logout").click()
        note = wait.until(ec.presence_of_element_located((By.ID, "note")))
        assert "signed out" in note.text and not [c for c in browser.get_cookies() if c["name"] == "epmem_audit"]
        browser.get(short.url)
        wait.until(ec.presence_of_element_located((By.ID, "token")))  # the form, not the timeline
        assert not browser.find_elements(By.ID, "timeline")

        second = sign_in()
        assert second != first  # a new random session, not a hash of the token
        clock.advance(3600.0)
        browser.get(short.url)
        note = wait.until(ec.presence_of_element_located((By.ID, "note")))
        assert "session expired" in note.text and browser.find_elements(By.ID, "token")
        assert not browser.find_elements(By.ID, "timeline")  # expired: signed out
    finally:
        short.stop()
