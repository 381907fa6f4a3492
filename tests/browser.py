"""A real headless browser for tests of HTML pages (the HTML reports): rendered DOM, JavaScript
errors, counts of rendered plots, full-page screenshots.

Chromium runs headless and is driven by selenium through Debian's ``chromedriver`` (given by its
path, so Selenium Manager never looks for or downloads a driver). One browser serves the whole
test session: it starts on first use (about 0.6 s) and quits at exit; a page with plotly.js
embedded is loaded, rendered and settled in about 2 s the first time and 1 s after that (0.5 s
of it the wait for the page to stay unchanged).

    from browser import open_page  # as tests import pg_helpers; `from tests.browser import ...`
                                    # works only under `python -m pytest` (tests/ has no __init__)

    def test_report(tmp_path):
        page = open_page(write_report(tmp_path))  # skips (or fails under CI=true) without a browser
        assert page.errors == []
        assert page.plotly_divs == page.plotly_rendered > 0, page.unrendered_plots
        page.screenshot(tmp_path / "report.png")

``page.errors`` are what the DevTools console recorded at level SEVERE while the page loaded and
settled: uncaught exceptions and unhandled promise rejections (source ``javascript``),
``console.error`` (``console-api``) and resources that failed to load (``network``), each as
``"source: message"``; ``page.console`` has every entry (warnings and logs too).

``.ci/run`` installs ``chromium`` and ``chromium-driver`` with apt; when ``CI`` is ``true`` a missing
browser fails the tests that need it instead of skipping them.
"""

from __future__ import annotations

import atexit
import base64
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

#: Browser executables looked for on PATH, in this order.
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome")
#: Where Debian's chromium-driver puts the driver (besides PATH).
DRIVER_PATHS = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")
INSTALL_HINT = (
    "apt-get install -y chromium chromium-driver (and pip install -e '.[dev]' for selenium)"
)

# Headless as root (--no-sandbox), software rendering; WebGL (plotly's *gl traces) on SwiftShader,
# which Chromium now wants asked for explicitly. The pages are local test files, hence trusted.
CHROMIUM_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--enable-unsafe-swiftshader",
    "--hide-scrollbars",
    "--mute-audio",
    "--no-first-run",
    "--disable-extensions",
)

# One round trip: the counts the tests assert on. Plotly marks a div it plots `js-plotly-plot`;
# plotly.io writes the div as `plotly-graph-div` before plotly.js runs, so a figure whose script
# failed still counts among the divs, just not among the rendered ones.
_STATE_JS = """
const divs = Array.from(document.querySelectorAll('.plotly-graph-div, .js-plotly-plot'));
const unrendered = divs.filter(d => !d.querySelector('.main-svg'));
const root = document.documentElement, body = document.body;
return {
    ready: document.readyState,
    plotly_divs: divs.length,
    plotly_rendered: divs.length - unrendered.length,
    unrendered: unrendered.map(d => d.id || d.className),
    main_svgs: document.querySelectorAll('svg.main-svg').length,
    canvases: document.querySelectorAll('canvas').length,
    scroll_width: Math.max(root.scrollWidth, body ? body.scrollWidth : 0),
    scroll_height: Math.max(root.scrollHeight, body ? body.scrollHeight : 0),
};
"""


def find_browser() -> str | None:
    """Path of a Chromium/Chrome executable on PATH, or None."""
    for name in BROWSER_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def find_chromedriver() -> str | None:
    """Path of ``chromedriver`` (PATH first, then Debian's locations), or None."""
    path = shutil.which("chromedriver")
    if path:
        return path
    return next((p for p in DRIVER_PATHS if os.access(p, os.X_OK)), None)


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return f"selenium is not installed ({INSTALL_HINT})"
    if find_browser() is None:
        return f"no browser on PATH (looked for {', '.join(BROWSER_NAMES)}; {INSTALL_HINT})"
    if find_chromedriver() is None:
        return f"no chromedriver (PATH, {', '.join(DRIVER_PATHS)}; {INSTALL_HINT})"
    return None


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


def require_browser() -> None:
    """Skip the calling test when no browser is installed; fail instead when ``CI`` is ``true``,
    so that CI cannot silently skip the browser tests."""
    reason = browser_missing()
    if reason is None:
        return
    if in_ci():
        pytest.fail(
            f"CI=true but the browser tests cannot run: {reason}; .ci/run installs it",
            pytrace=False,
        )
    pytest.skip(f"browser tests need a headless Chromium: {reason}")


@dataclass(frozen=True)
class ConsoleEntry:
    """One DevTools console entry: level (SEVERE, WARNING, INFO, ...), source (javascript,
    console-api, network, rendering, ...) and the message, which starts with the URL and
    line:column it came from."""

    level: str
    source: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


@dataclass
class Page:
    """A page as the browser rendered it, after its JavaScript ran and the page settled."""

    path: Path
    url: str
    width: int
    height: int
    #: ``document.documentElement.outerHTML`` after the scripts ran
    dom: str
    #: the visible text (``document.body.innerText``)
    text: str
    #: the SEVERE console entries, as "source: message" (exceptions, console.error, failed loads)
    errors: list[str]
    #: every console entry (errors, warnings, logs)
    console: list[ConsoleEntry]
    #: plotly figure divs (``.plotly-graph-div`` or ``.js-plotly-plot``)
    plotly_divs: int
    #: how many of them hold a rendered ``.main-svg``
    plotly_rendered: int
    #: id (or class) of each figure div without a rendered ``.main-svg``
    unrendered_plots: list[str]
    #: ``svg.main-svg`` elements (a rendered plotly figure has two or three)
    main_svgs: int
    #: ``canvas`` elements (WebGL traces, other canvas charts)
    canvases: int
    #: the document's full size in CSS pixels
    scroll_width: int
    scroll_height: int
    #: seconds from navigation to settled
    load_s: float
    _browser: Browser = field(repr=False)
    _serial: int = field(repr=False)

    def _ensure_current(self) -> None:
        """The shared browser may have opened another page since: load this one again."""
        if self._browser.serial != self._serial:
            again = self._browser.open(self.path, width=self.width, height=self.height)
            self._serial = again._serial
            self.scroll_height = again.scroll_height

    def screenshot(self, path: str | os.PathLike) -> Path:
        """Write a PNG of the whole page (full document height, ``width`` pixels wide)."""
        self._ensure_current()
        return self._browser.screenshot(Path(path), width=self.width)

    def evaluate(self, script: str, *args: Any) -> Any:
        """Run JavaScript in the page (``return ...`` gives a value back)."""
        self._ensure_current()
        return self._browser.driver.execute_script(script, *args)


class Browser:
    """A headless Chromium driven by selenium + chromedriver. Use :func:`open_page`, which shares
    one for the whole session, unless a test needs a browser of its own."""

    def __init__(self, browser_path: str | None = None, driver_path: str | None = None):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        browser_path = browser_path or find_browser()
        driver_path = driver_path or find_chromedriver()
        if not browser_path or not driver_path:
            raise RuntimeError(browser_missing() or "no browser")
        options = webdriver.ChromeOptions()
        options.binary_location = browser_path
        for arg in CHROMIUM_ARGS:
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        start = time.perf_counter()
        # An explicit driver path: Selenium Manager is skipped (it would try the network).
        self.driver = webdriver.Chrome(
            service=Service(executable_path=driver_path), options=options
        )
        self.startup_s = time.perf_counter() - start
        self.driver.set_page_load_timeout(60)
        self.serial = 0

    def _drain_log(self) -> list[ConsoleEntry]:
        return [
            ConsoleEntry(e.get("level", ""), e.get("source", ""), e.get("message", ""))
            for e in self.driver.get_log("browser")
        ]

    def _state(self) -> dict:
        return self.driver.execute_script(_STATE_JS)

    def open(
        self,
        html_path: str | os.PathLike,
        width: int = 1300,
        height: int = 900,
        wait_s: float = 10.0,
        settle_s: float = 0.5,
    ) -> Page:
        """Load a local HTML file and wait until it settled: loaded, every plotly div rendered (or
        ``wait_s`` passed) and nothing changed for ``settle_s``."""
        path = Path(html_path).resolve()
        if not path.is_file():
            raise FileNotFoundError(path)
        self._drain_log()  # whatever the previous page left
        self.serial += 1
        self.driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        start = time.perf_counter()
        self.driver.get(path.as_uri())  # returns after the load event
        deadline = start + wait_s
        state, stable_since = self._state(), time.perf_counter()
        while True:
            time.sleep(0.1)
            now_state, now = self._state(), time.perf_counter()
            if now_state != state:
                state, stable_since = now_state, now
            done = state["ready"] == "complete" and state["plotly_rendered"] == state["plotly_divs"]
            if (done and now - stable_since >= settle_s) or now >= deadline:
                break
        load_s = time.perf_counter() - start
        console = self._drain_log()
        return Page(
            path=path,
            url=path.as_uri(),
            width=width,
            height=height,
            dom=self.driver.execute_script("return document.documentElement.outerHTML"),
            text=self.driver.execute_script("return document.body ? document.body.innerText : ''"),
            errors=[str(e) for e in console if e.level == "SEVERE"],
            console=console,
            plotly_divs=state["plotly_divs"],
            plotly_rendered=state["plotly_rendered"],
            unrendered_plots=list(state["unrendered"]),
            main_svgs=state["main_svgs"],
            canvases=state["canvases"],
            scroll_width=state["scroll_width"],
            scroll_height=state["scroll_height"],
            load_s=load_s,
            _browser=self,
            _serial=self.serial,
        )

    def screenshot(self, path: Path, width: int) -> Path:
        """PNG of the current page, its whole height, ``width`` CSS pixels wide (scale 1)."""
        height = self._state()["scroll_height"]
        shot = self.driver.execute_cdp_cmd(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
            },
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def quit(self) -> None:
        try:
            self.driver.quit()
        except Exception:  # at exit the driver may be gone already
            pass

    def alive(self) -> bool:
        try:
            self.driver.execute_script("return 1")
            return True
        except Exception:
            return False


_shared: Browser | None = None


def shared_browser() -> Browser:
    """The session's browser, started on first use (skips/fails via :func:`require_browser`)."""
    global _shared
    require_browser()
    if _shared is None:
        _shared = Browser()
        atexit.register(_shared.quit)
    return _shared


def open_page(
    html_path: str | os.PathLike,
    width: int = 1300,
    height: int = 900,
    wait_s: float = 10.0,
    settle_s: float = 0.5,
) -> Page:
    """Render a local HTML file in the session's headless Chromium (viewport ``width`` x
    ``height``) and return what it shows; waits until every plotly div has rendered (at most
    ``wait_s``) and the page stayed unchanged for ``settle_s``. Skips the test when no browser is
    installed, and fails it instead when ``CI`` is ``true``."""
    global _shared
    browser = shared_browser()
    try:
        return browser.open(html_path, width, height, wait_s, settle_s)
    except Exception:
        if browser.alive():
            raise
        # the browser died (a crashed tab, a killed driver): one try with a fresh one
        browser.quit()
        _shared = None
        return shared_browser().open(html_path, width, height, wait_s, settle_s)
