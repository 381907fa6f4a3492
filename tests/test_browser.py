"""The headless-browser harness (tests/browser.py) on pages written here: plotly figures render,
JavaScript errors are reported, screenshots cover the whole page, and a missing browser skips
locally but fails under CI=true."""

import struct

import browser
import pytest
from browser import open_page


def _png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])  # IHDR: width, height


def _figure(gl: bool = False):
    """A small plotly figure (plotly comes with the report's dependencies)."""
    go = pytest.importorskip("plotly.graph_objects")
    trace = (go.Scattergl if gl else go.Scatter)(x=[1, 2, 3], y=[3, 1, 2])
    return go.Figure(trace, layout={"height": 400})


def test_plotly_figure_renders_without_errors(tmp_path):
    html = tmp_path / "figure.html"
    pytest.importorskip("plotly.io").write_html(_figure(), html, include_plotlyjs=True)
    page = open_page(html)
    assert page.errors == []
    assert page.plotly_divs == page.plotly_rendered == 1, page.unrendered_plots
    assert page.main_svgs >= 1 and "main-svg" in page.dom
    assert page.canvases == 0


def test_report_with_plotlyjs_embedded_once(tmp_path):
    """The report's pattern: plotly.js with the first figure, later figures without it (a WebGL
    trace among them draws on canvases)."""
    body = _figure().to_html(full_html=False, include_plotlyjs=True) + _figure(gl=True).to_html(
        full_html=False, include_plotlyjs=False
    )
    html = tmp_path / "report.html"
    html.write_text(
        f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{body}</body></html>"
    )
    page = open_page(html)
    assert page.errors == []
    assert page.plotly_divs == page.plotly_rendered == 2, page.unrendered_plots
    assert page.main_svgs >= 2 and page.canvases >= 1


def test_figure_without_plotlyjs_is_reported_unrendered(tmp_path):
    html = tmp_path / "no_plotlyjs.html"
    pytest.importorskip("plotly.io").write_html(_figure(), html, include_plotlyjs=False)
    page = open_page(html, wait_s=1.0)
    assert page.plotly_divs == 1 and page.plotly_rendered == 0
    assert len(page.unrendered_plots) == 1
    assert any("Plotly is not defined" in e for e in page.errors), page.errors


def test_uncaught_exceptions_are_errors(tmp_path):
    html = tmp_path / "throws.html"
    html.write_text(
        "<html><body><p>before</p>"
        "<script>throw new Error('boom')</script>"
        "<script>Promise.reject(new Error('rejected'))</script></body></html>"
    )
    page = open_page(html)
    assert any(e.startswith("javascript:") and "Uncaught Error: boom" in e for e in page.errors)
    assert any("rejected" in e for e in page.errors), page.errors
    assert page.text.strip() == "before"


def test_console_error_is_an_error_but_warnings_and_logs_are_not(tmp_path):
    html = tmp_path / "console.html"
    html.write_text(
        "<html><body><script>console.log('a log'); console.warn('a warning');"
        "console.error('x marks the error')</script></body></html>"
    )
    page = open_page(html)
    assert len(page.errors) == 1 and page.errors[0].startswith("console-api:")
    assert "x marks the error" in page.errors[0]
    levels = {entry.level for entry in page.console}
    assert {"INFO", "WARNING", "SEVERE"} <= levels


def test_clean_page_has_no_errors(tmp_path):
    html = tmp_path / "clean.html"
    html.write_text(
        "<html><body><div id='out'></div>"
        "<script>document.getElementById('out').textContent = 'ran'</script></body></html>"
    )
    page = open_page(html)
    assert page.errors == [] and page.plotly_divs == 0
    assert '<div id="out">ran</div>' in page.dom  # the DOM after the script ran


def test_screenshot_is_a_png_of_the_whole_page(tmp_path):
    tall = tmp_path / "tall.html"
    tall.write_text(
        "<html><body style='margin:0'><div style='height:3000px'>top</div>"
        "<p>bottom</p></body></html>"
    )
    short = tmp_path / "short.html"
    short.write_text("<html><body>short</body></html>")
    page = open_page(tall, width=1000, height=700)
    assert page.scroll_height > 3000
    open_page(short)  # the shared browser moves on; the screenshot loads `tall` again
    width, height = _png_size(page.screenshot(tmp_path / "shots" / "tall.png"))
    assert (width, height) == (1000, page.scroll_height)


def test_missing_browser_skips_locally_and_fails_in_ci(monkeypatch):
    monkeypatch.setattr(browser, "find_browser", lambda: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        browser.require_browser()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="no browser on PATH"):
        browser.require_browser()
