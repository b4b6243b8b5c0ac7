"""`modelrecord explore` in a real browser: serve the example tree, drive headless Chromium, stop with Ctrl-C.

Chromium is Debian's (`/usr/bin/chromium`), driven through Playwright's Python package with
`executable_path`: Playwright's own browser download is never used. The page must load nothing from
another host than 127.0.0.1. Screenshots go to `test-artifacts/explore-<width>-<tab>.png`.
"""
import signal
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from modelrecord.sample import example_tree
from modelrecord.tables import load
from processes import alive, descendants, explore_server, free_port

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium")]


def listening_addresses(port: int) -> set:
    "The local addresses (hex, as /proc/net/tcp* spells them) of the sockets listening on `port`."
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try: rows = Path(table).read_text().splitlines()[1:]
        except OSError: continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port: found.add(address)
    return found


@pytest.fixture
def server():
    "`modelrecord explore` of the example tree on a free port: `(url, process, port, lines)`; always stopped by PID afterwards."
    port = free_port()
    ARTIFACTS.mkdir(exist_ok=True)
    with open(ARTIFACTS / "explore-server.log", "w") as log, \
         explore_server(log, str(example_tree()), "--port", str(port), wait=300) as (url, process, lines):
        assert urlsplit(url).hostname == "127.0.0.1" and urlsplit(url).port == port
        yield url, process, port, lines


ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]

# Elements wider than their box, outside the pieces that scroll inside themselves (the grid, the summary
# table, a long result): what would make the page itself scroll sideways.
OVERFLOWING = """() => Array.from(document.querySelectorAll('body *')).filter(e => {
    if (e.closest('.mr-grid-view, .mr-scroll, .mr-pre, .lm-TabBar')) return false;
    const style = getComputedStyle(e);
    return (style.overflowX === 'auto' || style.overflowX === 'scroll') && e.scrollWidth > e.clientWidth + 1;
}).map(e => e.className || e.tagName)"""


def no_sideways_scroll(page):
    "Neither the page nor any box outside the grid and the summary scrolls sideways."
    width = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert width[0] <= width[1], width
    assert page.evaluate(OVERFLOWING) == []


def open_tab(page, title: str):
    page.click(f".mr-tabs .lm-TabBar-tab:has-text('{title}')")
    page.wait_for_function(f"() => document.querySelector('.mr-tabs .lm-TabBar-tab.lm-mod-current').textContent.includes('{title}')")


def grid_column(page, head: str) -> list:
    "The texts of the column `head` in the rows the grid shows."
    return page.evaluate("""head => {
        const heads = Array.from(document.querySelector('.mr-grid-view thead tr').children).map(th => th.textContent.trim());
        const at = heads.indexOf(head);
        return Array.from(document.querySelectorAll('.mr-grid-view tbody tr')).map(tr => tr.children[at].textContent.trim());
    }""", head)


# Whether the grid's rows show their costs in order (descending when `arg`): the grid draws a page once Python sorted it.
COSTS_SORTED = """down => {
    const heads = Array.from(document.querySelector('.mr-grid-view thead tr').children).map(th => th.textContent.trim());
    const at = heads.indexOf('cost');
    const costs = Array.from(document.querySelectorAll('.mr-grid-view tbody tr'), tr => tr.children[at].textContent.trim())
        .filter(text => text.startsWith('$')).map(text => parseFloat(text.slice(1)));
    return costs.length > 1 && costs.every((cost, i) => i === 0 || (down ? costs[i - 1] >= cost : costs[i - 1] <= cost)); }"""


def test_explore_page_in_chromium(server):
    from playwright.sync_api import sync_playwright
    url, process, port, lines = server
    addresses = listening_addresses(port)
    assert addresses and addresses <= {"0100007F", "0000000000000000FFFF00000100007F"}, addresses  # 127.0.0.1 only
    tables = load(example_tree())
    malformed = tables.attempts[tables.attempts.ended_by == "malformed"]

    elsewhere, failed, errors = [], [], []
    with sync_playwright() as playwright:
        for width in (1280, 1920):
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
            try:
                page = browser.new_page(viewport={"width": width, "height": 1000})
                page.on("request", lambda r: urlsplit(r.url).scheme in ("http", "https", "ws", "wss")
                        and urlsplit(r.url).hostname != "127.0.0.1" and elsewhere.append(r.url))
                page.on("requestfailed", lambda r: failed.append(f"{r.url}: {r.failure}"))
                page.on("console", lambda m: m.type == "error" and errors.append(m.text))
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(url, timeout=90_000)  # the first view waits for the kernel warming as the server starts

                # The page, loaded: the status, the summary and the plots in the Overview.
                page.wait_for_selector(".mr-summary table", timeout=120_000)
                assert f"{len(tables.attempts)} attempts" in page.inner_text(".mr-status")
                for name in ("endings_by_model", "tokens_by_model", "cost_by_model", "latency_by_model", "cumulative_cost"):
                    page.wait_for_selector(f".mr-plot-{name} img", timeout=30_000)
                plot_before = page.get_attribute(".mr-plot-endings_by_model img", "src")
                no_sideways_scroll(page)
                page.screenshot(path=str(ARTIFACTS / f"explore-{width}-overview.png"))

                # Choose an ending: the Overview follows, then the grid of the Attempts tab.
                option = page.eval_on_selector(".mr-endings select",
                                               "s => Array.from(s.options).map(o => o.value).find(v => v.startsWith('malformed'))")
                page.select_option(".mr-endings select", value=option)
                page.wait_for_function("before => document.querySelector('.mr-plot-endings_by_model img').src !== before",
                                       arg=plot_before, timeout=30_000)
                assert "openai:gpt-5" in page.inner_text(".mr-summary")
                open_tab(page, "Attempts")
                page.wait_for_function(f"() => document.querySelector('.mr-grid-label').textContent.includes('{len(malformed)} attempts')",
                                       timeout=30_000)
                page.wait_for_function(f"() => document.querySelectorAll('.mr-grid-view tbody tr').length === {len(malformed)}",
                                       timeout=30_000)
                assert set(grid_column(page, "ended by")) == {"malformed"}
                no_sideways_scroll(page)

                # Sort the grid by cost, twice: dearest first.
                heading = page.locator(".mr-grid-view thead th", has_text="cost").first  # the header row on screen
                heading.click()
                page.wait_for_selector(".mr-grid-view thead th.dt-ordering-asc", timeout=10_000)
                page.wait_for_function(COSTS_SORTED, arg=False, timeout=10_000)  # the page of rows Python sorted, drawn
                heading.click()
                page.wait_for_selector(".mr-grid-view thead th.dt-ordering-desc", timeout=10_000)
                page.wait_for_function(COSTS_SORTED, arg=True, timeout=10_000)
                costs = [float(text.lstrip("$")) for text in grid_column(page, "cost") if text.startswith("$")]
                assert costs == sorted(costs, reverse=True) and len(costs) > 1, costs
                page.screenshot(path=str(ARTIFACTS / f"explore-{width}-attempts.png"))

                # Click the first row: its conversation opens, turn by turn.
                attempt_id = grid_column(page, "attempt")[0]
                page.click(".mr-grid-view tbody tr:first-child td:first-child")
                page.wait_for_selector(".mr-conversation h3", timeout=30_000)
                conversation = page.inner_text(".mr-conversation")
                assert attempt_id in conversation and "malformed" in conversation
                assert "Stimulus" in conversation and "turn 1" in conversation and "not parsed" in conversation
                assert "Conversation" in page.inner_text(".mr-tabs .lm-TabBar-tab.lm-mod-current")
                no_sideways_scroll(page)
                page.screenshot(path=str(ARTIFACTS / f"explore-{width}-conversation.png"))

                # Back to the Overview: still the malformed attempts only.
                open_tab(page, "Overview")
                assert "over_budget" in page.inner_text(".mr-summary")  # the column, with zeros
                no_sideways_scroll(page)

                # Every attempt: the grid draws a page of them, with its controls; its search (Python's) finds one.
                page.click(".mr-clear-button")
                open_tab(page, "Attempts")
                page.wait_for_function(f"() => document.querySelectorAll('.mr-grid-view tbody tr').length === 25"
                                       f" && document.querySelector('.mr-grid-view .dt-info').textContent.includes('{len(tables.attempts)}')",
                                       timeout=30_000)
                page.fill(".mr-grid-view input[type=search]", attempt_id)
                page.wait_for_function("""id => { const rows = Array.from(document.querySelectorAll('.mr-grid-view tbody tr'));
                    return rows.length > 0 && rows.every(tr => tr.children[0].textContent.trim() === id); }""",
                                       arg=attempt_id, timeout=10_000)
            finally:
                browser.close()
    assert elsewhere == [], f"the page asked another host than 127.0.0.1 for: {elsewhere}"
    assert failed == [], f"requests failed: {failed}"
    assert errors == [], f"the browser console reported errors: {errors}"

    # Ctrl-C stops the server cleanly: status 0, no process of it left, the port closed.
    children = descendants(process.pid)
    assert children, "voila (and its kernel) run as children of the command"
    process.send_signal(signal.SIGINT)
    assert process.wait(30) == 0
    time.sleep(0.5)
    assert [pid for pid in children if alive(pid)] == []
    with socket.socket() as probe: assert probe.connect_ex(("127.0.0.1", port)) != 0
    said = []
    while not lines.empty(): said.append(lines.get())
    assert any("stopped" in line for line in said), said


def test_compare_tab_and_salvage_banner_in_chromium(tmp_path):
    """A tree with a bad line: the banner shows above the tabs; the Compare tab renders, two models picked show their p-value,
    and a click on a disagreeing case opens its conversation."""
    import shutil
    from playwright.sync_api import sync_playwright
    from modelrecord.compare import compare_models
    tree = tmp_path / "salvaged"
    shutil.copytree(example_tree(), tree)
    shard = sorted(tree.rglob("modeleval-*.jsonl"))[0]
    with shard.open("a") as file: file.write('{"schema":1,"type":"attempt","attempt":{"id":"a","case":"c","model":"m","repeat":1,"ended_by":"done"}}\n')
    a, b = "anthropic:claude-sonnet-4;effort=high", "fake:perfect"
    expected = compare_models(load(example_tree()), a, b)
    p_text = "< 0.001" if expected.p_value < 0.001 else f"{expected.p_value:.2g}"
    ARTIFACTS.mkdir(exist_ok=True)
    errors = []
    with open(ARTIFACTS / "explore-compare-server.log", "w") as log, \
         explore_server(log, str(tree), "--port", str(free_port()), wait=300) as (url, process, lines), sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.on("console", lambda m: m.type == "error" and errors.append(m.text))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url, timeout=90_000)
            page.wait_for_selector(".mr-summary table", timeout=120_000)
            banner = page.inner_text(".mr-banner")
            assert "1 line could not be read" in banner and f"{shard.relative_to(tree).as_posix()}, line" in banner, banner
            assert "attempt.ended_by" in banner and page.is_visible(".mr-banner")

            open_tab(page, "Compare")
            page.wait_for_selector(".mr-compare-view .mr-p-value", timeout=30_000)  # the first two models, compared
            page.select_option(".mr-compare-a select", label=a)
            page.select_option(".mr-compare-b select", label=b)
            page.wait_for_function(f"() => document.querySelector('.mr-compare-view .mr-p-value').textContent === 'p = {p_text}'",
                                   timeout=30_000)
            assert expected.test in page.inner_text(".mr-compare-view")
            no_sideways_scroll(page)
            page.screenshot(path=str(ARTIFACTS / "explore-1280-compare.png"), full_page=True)

            link = page.locator(".mr-compare-view .mr-disagreements [data-open]").first
            attempt = link.get_attribute("title")
            link.click()
            page.wait_for_function("() => document.querySelector('.mr-tabs .lm-TabBar-tab.lm-mod-current').textContent.includes('Conversation')",
                                   timeout=30_000)
            page.wait_for_function(f"() => document.querySelector('.mr-conversation').textContent.includes({attempt!r})", timeout=30_000)
            assert page.is_visible(".mr-conversation h3")
            page.screenshot(path=str(ARTIFACTS / "explore-1280-compare-conversation.png"))
        finally:
            browser.close()
    assert errors == [], f"the browser console reported errors: {errors}"


WIDE_BOX = """e => { const box = e.closest('.mr-wide'); return {scroll: box.scrollWidth, client: box.clientWidth,
    bar: box.offsetHeight - box.clientHeight, overflow: getComputedStyle(box).overflowX}; }"""


def test_wide_tables_scroll_visibly_answers_first_at_1400_px():
    "The served example (scored by its key): at 1400 px the Score table's verdicts show first, a wide table scrolls visibly."
    from playwright.sync_api import sync_playwright
    ARTIFACTS.mkdir(exist_ok=True)
    with open(ARTIFACTS / "explore-wide-server.log", "w") as log, explore_server(log, wait=300) as (url, _, _), \
         sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS,
                                             ignore_default_args=["--hide-scrollbars"])  # scrollbars drawn, as on screen
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url, timeout=90_000)
            page.wait_for_selector(".mr-summary table", timeout=120_000)
            for label in ("outcome", "clean", "model"):  # the filters' labels are whole
                assert page.eval_on_selector(f".mr-{label} label", "e => e.scrollWidth <= e.clientWidth"), label
            open_tab(page, "Score")
            page.wait_for_selector(".mr-score-view table", timeout=60_000)
            page.screenshot(path=str(ARTIFACTS / "explore-1400-score.png"))
            heads = page.eval_on_selector_all(".mr-score-view th", "ths => ths.map(th => th.textContent)")
            assert heads[:3] == ["model", "surface", "Clean"] and heads[-1] == "attempts"
            right = page.eval_on_selector(".mr-score-view th:nth-child(3)", "e => e.getBoundingClientRect().right")
            assert right <= 1400  # the first verdict is on screen
            for table in (".mr-score-view table", ".mr-summary table"):
                box = page.eval_on_selector(table, WIDE_BOX)
                assert box["overflow"] == "auto", (table, box)
                if box["scroll"] > box["client"]: assert box["bar"] > 0, (table, box)  # a scrollbar that shows
            no_sideways_scroll(page)
        finally:
            browser.close()
