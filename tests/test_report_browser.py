"""`modelrecord report`'s page in headless Chromium, as a person opens an attachment: from a file.

At 1280x800 (a laptop) and 390x844 (a phone): no request leaves the file (the page's own `file:` URL
and `data:` images only), no console error, the score table and the plots show, each image is drawn
(a natural width, not a broken icon), and the page itself never scrolls sideways (a wide table
scrolls inside its own box). Screenshots of both views go to a temporary directory, printed, so a
person can look at them.

Chromium is Debian's (`/usr/bin/chromium`), driven through Playwright's Python package with
`executable_path` (Playwright's own browser download is never used).
"""
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from modelrecord.cli import main
from modelrecord.sample import example_runs

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
VIEWS = {"laptop": (1280, 800), "phone": (390, 844)}
SHOTS = Path(tempfile.mkdtemp(prefix="modelrecord-report-shots-"))


@contextmanager
def chromium():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        try: yield browser
        finally: browser.close()


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    "The report of the bundled run `after` against its key, compared with `before`: every section, nine plots."
    before, after = example_runs()
    out = tmp_path_factory.mktemp("report") / "report.html"
    assert main(["report", str(after), "--key", str(after / "key.json"), "--compare", str(before),
                 "--compare-key", str(before / "key.json"), "-o", str(out), "--no-cache"]) == 0
    return out


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium")
@pytest.mark.parametrize("view", list(VIEWS))
def test_the_report_opens_from_a_file_loads_nothing_and_shows_its_tables_and_plots(report, view):
    width, height = VIEWS[view]
    with chromium() as browser:
        page = browser.new_page(viewport={"width": width, "height": height})
        requests, errors = [], []
        page.on("request", lambda request: requests.append(request.url))
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(report.as_uri(), wait_until="load")
        assert {url for url in requests if not url.startswith("data:")} == {report.as_uri()}
        assert errors == []
        score_table = page.locator("#scores table").first
        score_table.scroll_into_view_if_needed()
        assert score_table.is_visible() and score_table.locator("tbody tr").count() == 12
        images = page.locator("img")
        assert images.count() == 9
        for i in range(images.count()):
            image = images.nth(i)
            image.scroll_into_view_if_needed()
            assert image.is_visible() and image.evaluate("i => i.complete && i.naturalWidth > 0"), i
            assert image.bounding_box()["width"] <= width  # shrunk to the screen, never wider
        assert page.evaluate("document.documentElement.scrollWidth") <= width  # the page never scrolls sideways
        box = page.locator("#scores .mr-wide").first
        if view == "phone": assert box.evaluate("b => b.scrollWidth > b.clientWidth")  # the table scrolls in its box
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(SHOTS / f"report-{view}.png"))
        page.locator("#comparison").scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"report-{view}-comparison.png"))
        print(f"screenshots: {SHOTS}")
