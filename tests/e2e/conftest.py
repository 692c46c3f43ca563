"""Browser-test harness: one Streamlit server per session, Debian's chromium through Playwright.

Playwright never downloads a browser here: it drives ``/usr/bin/chromium`` (or ``chromium`` on the
PATH, or ``$CHROMIUM``). Without it the tests are skipped with a message, except under ``CI=true``
where a missing browser fails the run.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"
from harness import CHROMIUM_ARGS, IDLE, WS_TAP_JS, chromium_path, free_port, start_server  # noqa: E402,F401

#: Page script: the time of the last rerun the page asked for and of the last script run that finished
#: (``harness.WS_TAP_JS``), so a wait knows that the run an action asked for has not come back yet even while
#: the app still says "not running" (a busy server starts it late).
RUNS_JS = (
    WS_TAP_JS
    + r"""
(() => {
  const R = (window.__attnRuns = { asked: 0, finished: 0 });
  window.__wsTaps.push((dir, f, t) => {
    if (dir === 'out' && f.includes(11)) R.asked = t;
    else if (dir === 'in' && f.includes(6)) R.finished = t;
  });
})();
"""
)
#: The app is idle: no run in progress or asked for, no status widget, no chart waiting to be drawn (ui.plotly_live).
SETTLED_JS = (
    "() => { const R = window.__attnRuns;"
    f' return !!document.querySelector("{IDLE}") && (!R || R.finished >= R.asked)'
    " && !document.querySelector('[data-testid=\"stStatusWidget\"]')"
    " && !document.documentElement.dataset.attnDrawing; }"
)
#: Each part of :data:`SETTLED_JS` on its own, and the status widget's text (a timed-out wait reports them).
UNSETTLED_JS = (
    "() => { const R = window.__attnRuns || {}; const app = document.querySelector('[data-testid=\"stApp\"]');"
    " const status = document.querySelector('[data-testid=\"stStatusWidget\"]');"
    " return { script_state: app && app.dataset.testScriptState, asked_ms: R.asked, finished_ms: R.finished,"
    " now_ms: performance.now(), status_widget: status && status.innerText,"
    " drawing: document.documentElement.dataset.attnDrawing || null,"
    " exceptions: document.querySelectorAll('[data-testid=\"stException\"]').length }; }"
)
#: Resolves once nothing in the page changed for ``quiet`` ms (React's last renders after a run), or after ``cap`` ms.
QUIET_JS = """([quiet, cap]) => new Promise((done) => {
  const start = performance.now();
  let timer = null;
  const end = () => { obs.disconnect(); clearTimeout(timer); done(performance.now() - start); };
  const obs = new MutationObserver(() => {
    clearTimeout(timer);
    timer = performance.now() - start > cap ? (end(), null) : setTimeout(end, quiet);
  });
  obs.observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
  timer = setTimeout(end, quiet);
})"""


@pytest.fixture(scope="session")
def browser_exe() -> str:
    exe = chromium_path()
    if exe is None:
        msg = "Debian's chromium is not installed: sudo apt-get install chromium fonts-noto-cjk (or make browser)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return exe


@pytest.fixture(scope="session")
def server(browser_exe):
    SHOTS.mkdir(parents=True, exist_ok=True)
    proc, url = start_server()
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="session")
def browser(browser_exe):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=browser_exe, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


class PageWatch:
    """A Playwright page plus what it logged: console errors, page errors, requests and dialogs."""

    def __init__(self, page, base_url: str):
        self.page, self.base_url = page, base_url
        page.add_init_script(RUNS_JS)
        self.console_errors: list[str] = []
        self.page_errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.failed: list[str] = []
        page.on("response", lambda r: self.failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        page.on("console", lambda m: self.console_errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.page_errors.append(str(e)))
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))

    def open(self, path: str = "", timeout: float = 60_000, chart: bool = True) -> None:
        """Load a page and wait for its first run; with ``chart``, also for plotly (lazy-loaded) to draw."""
        self.page.goto(self.base_url + "/" + path.lstrip("/"))
        self.page.wait_for_selector("[data-testid='stMain'] h1", timeout=timeout)
        self.wait_idle(timeout)
        if chart:
            self.page.wait_for_selector(".js-plotly-plot .main-svg", timeout=timeout)
            self.wait_idle(timeout)

    def open_sidebar(self) -> None:
        """Unfold the sidebar (the app starts with it folded, so that a page's first screen is its chart)."""
        button = self.page.locator("[data-testid='stExpandSidebarButton']")
        if button.count() and button.first.is_visible():
            button.first.click()
            self.page.wait_for_timeout(500)  # its sliding animation

    def open_sections(self, *titles: str) -> None:
        """Open the page's section expanders (``ui.section_box``: computed and sent while open) by their titles, or
        by their numbers ("3" for saturation's "3 · ..."), one by one, each drawn before the next."""
        for title in titles:
            text = f"{title} · " if title.isdigit() else title
            summary = self.page.locator("[data-testid='stExpander'] summary", has_text=text).first
            summary.scroll_into_view_if_needed()
            summary.click()
            self.wait_idle()

    def wait_idle(self, timeout: float = 60_000) -> None:
        """Wait until the run the last action asked for has finished, the charts are drawn and the page stopped
        changing.

        An action sends its rerun at once (a key press on a slider, a click); the app says "running" only once the
        server answers, so the websocket tells that a run was asked for and not finished yet (:data:`RUNS_JS`).
        """
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        self.page.wait_for_timeout(100)  # the action's rerun request leaves
        try:
            self.page.wait_for_function(SETTLED_JS, timeout=timeout)
            self.page.evaluate(QUIET_JS, [150, 3000])
            self.page.wait_for_function(SETTLED_JS, timeout=timeout)
        except PlaywrightTimeout as e:
            raise AssertionError(f"the page did not settle in {timeout / 1000:.0f} s: {self.unsettled()}") from e

    def unsettled(self) -> dict:
        """What keeps :data:`SETTLED_JS` false (for a wait that timed out), with a screenshot of the page."""
        state = self.page.evaluate(UNSETTLED_JS)
        try:
            state["screenshot"] = str(self.shot("unsettled-" + str(int(time.time()))))
        except Exception as e:  # noqa: BLE001 - a diagnosis must not hide the timeout it explains
            state["screenshot"] = f"not taken: {e}"
        state["console_errors"] = self.console_errors[-5:]
        state["page_errors"] = self.page_errors[-5:]
        return state

    def real_console_errors(self) -> list[str]:
        """Console errors, less Streamlit's own base-path probes.

        Opened at a deep link such as ``/heatmaps``, Streamlit's frontend first asks
        ``/heatmaps/_stcore/health`` and ``/heatmaps/_stcore/host-config`` to find the
        base path; those 404s are expected and logged as "Failed to load resource".
        """
        probes = [
            f for f in self.failed if f.startswith("404 ") and f.endswith(("/_stcore/health", "/_stcore/host-config"))
        ]
        errors = list(self.console_errors)
        for _ in probes:
            for i, e in enumerate(errors):
                if e.startswith("Failed to load resource") and "404" in e:
                    del errors[i]
                    break
        return errors

    def exceptions(self) -> list[str]:
        return self.page.locator("[data-testid='stException']").all_inner_texts()

    def chart_fingerprints(self) -> list[str]:
        """A string per plotly chart that changes when its data changes."""
        return self.page.evaluate(
            """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(el => {
                   // plotly 7 sends arrays as {dtype, bdata}: hash the JSON of every trace's data
                   const txt = JSON.stringify((el.data || []).map(t => [t.x, t.y, t.z]))
                       + JSON.stringify(((el.layout && el.layout.annotations) || []).map(a => a.text))
                       + JSON.stringify(((el.layout && el.layout.shapes) || []).map(s => [s.x0, s.x1, s.y0, s.y1]));
                   let h = 0;
                   for (let i = 0; i < txt.length; i++) { h = (h * 31 + txt.charCodeAt(i)) | 0; }
                   return txt.length + ':' + h;
               })"""
        )

    def pushed_margins(self) -> list[str]:
        """Charts whose margins plotly had to widen (``automargin``): each such chart was laid out twice.

        The builders reserve the room their labels need (:mod:`attn_core.figures.margins`), so the
        final margins (``_fullLayout._size``) are the ones the figure asked for.
        """
        return self.page.evaluate(
            """() => Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap(gd => {
                   const m = gd.layout.margin || {}, s = gd._fullLayout._size;
                   const off = ['l', 'r', 'b'].filter(k => Math.round(s[k]) !== Math.round(m[k] ?? -1));
                   const box = gd.closest('[data-testid="stElementContainer"]');
                   const key = box ? [...box.classList].find(c => c.startsWith('st-key-')) : '?';
                   return off.length ? [key + ': ' + off.map(k => k + ' ' + m[k] + ' -> ' + s[k]).join(', ')] : [];
               })"""
        )

    def press_slider(self, key: str, presses: int = 1, keyname: str = "ArrowRight") -> None:
        thumb = self.page.locator(f".st-key-{key} input[type='range']").first
        thumb.focus()
        for _ in range(presses):
            thumb.press(keyname)
        self.wait_idle()

    def shot(self, name: str) -> Path:
        """Save a PNG of the whole page (Streamlit scrolls inside its main container, so grow the viewport)."""
        return self.shot_to(SHOTS / f"{name}.png")

    def shot_to(self, path: Path) -> Path:
        """:meth:`shot` to the file ``path``."""
        size = self.page.viewport_size
        height = self.page.evaluate(
            "() => { const m = document.querySelector('[data-testid=\"stMain\"]');"
            " return m ? m.scrollHeight : document.body.scrollHeight; }"
        )
        self.page.set_viewport_size({"width": size["width"], "height": int(min(max(height, size["height"]), 8000))})
        self.page.wait_for_timeout(400)
        self.page.screenshot(path=str(path))
        self.page.set_viewport_size(size)
        return path


@pytest.fixture
def watch(browser, server, request):
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000}, device_scale_factor=1, accept_downloads=True)
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    w = PageWatch(page, server)
    yield w
    ctx.close()
    # a message the frontend could not process ends its websocket: the page stays "running" from then on
    broken = [e for e in w.console_errors if "Failed to process a Websocket message" in e]
    assert not broken, f"the browser's websocket failed: {broken[0][:300]}"
