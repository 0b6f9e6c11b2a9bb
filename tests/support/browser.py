"""Headless Chromium that reports whether a page ran any script it should not have.

::

    with XSSBrowser() as browser:
        hits = browser.visit("http://127.0.0.1:8000/page")   # [] when nothing ran

Before any script of the page runs, every frame gets hooks: ``alert``,
``confirm``, ``prompt`` and ``print`` record a hit instead of opening a dialog,
and a ``window.__xss`` marker (set by corpus vectors that do not call a
dialog) counts as one.  After load, every element gets focus, mouse,
pointer, keyboard, load/error and animation events dispatched (synthetic
events run inline handlers, but never follow links), elements are focused,
and every attribute that the browser resolves to a ``javascript:`` or
``vbscript:`` URL is a hit too, followed by a real click on such links.
Real dialogs, from frames the hooks missed, are hits as well.

Driver: Playwright's Python client, driving the system Chromium
(``/usr/bin/chromium``, or ``$PTL_WSGI_CHROMIUM``); ``playwright install`` is
never needed.  :func:`unavailable` says why a run cannot happen.
"""

from __future__ import annotations

import os
import shutil
from types import TracebackType
from typing import Any

import pytest

__all__ = ["BROWSER_ONLY", "XSSBrowser", "chromium_path", "unavailable", "visit_body"]

HOOKS = """
(() => {
  const hits = [];
  Object.defineProperty(window, "__ptl_hits", {value: hits});
  for (const name of ["alert", "confirm", "prompt", "print"]) {
    window[name] = function (message) { hits.push(name + "(" + String(message) + ")"); };
  }
})();
"""

# Runs after load in the top frame; returns nothing, hits land in __ptl_hits.
PROVOKE = """
async () => {
  const EVENTS = [
    "focus", "focusin", "blur", "focusout", "mouseover", "mouseenter", "mousemove",
    "mousedown", "mouseup", "mouseout", "mouseleave", "click", "dblclick", "auxclick",
    "contextmenu", "pointerover", "pointerenter", "pointerdown", "pointerup", "pointermove",
    "keydown", "keypress", "keyup", "input", "beforeinput", "change", "select", "submit",
    "reset", "invalid", "load", "error", "abort", "toggle", "begin", "end", "repeat",
    "animationstart", "animationend", "animationiteration", "transitionend",
    "transitionstart", "transitionrun", "scroll", "scrollend", "wheel", "drag",
    "dragstart", "dragend", "dragenter", "dragover", "drop", "copy", "cut", "paste",
    "play", "playing", "canplay", "loadstart", "loadeddata", "readystatechange",
    "search", "start", "finish", "bounce", "pageshow", "hashchange", "popstate",
    "message", "resize", "beforeprint", "afterprint", "touchstart", "touchend",
  ];
  const SCRIPT_SCHEMES = ["javascript:", "vbscript:"];
  const URL_ATTRIBUTES = ["href", "xlink:href", "src", "action", "formaction", "data",
                          "poster", "background", "codebase", "lowsrc", "dynsrc"];
  const hits = window.__ptl_hits;
  const elements = [window, document, ...document.querySelectorAll("*")];
  for (const element of elements) {
    for (const type of EVENTS) {
      try { element.dispatchEvent(new Event(type, {cancelable: true})); } catch (e) {}
    }
    try { if (element.focus) element.focus(); } catch (e) {}
  }
  for (const element of document.querySelectorAll("*")) {
    for (const name of URL_ATTRIBUTES) {
      const value = element.getAttribute(name);
      if (value === null) continue;
      let protocol;
      try { protocol = new URL(value, document.baseURI).protocol; } catch (e) { continue; }
      if (SCRIPT_SCHEMES.includes(protocol)) {
        hits.push("script URL in <" + element.localName + " " + name + ">");
        if (element.click && (element.localName === "a" || element.localName === "area")) {
          try { element.click(); } catch (e) {}
        }
      }
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 30));
}
"""

COLLECT = """() => {
  const hits = Array.from(window.__ptl_hits || []);
  if ("__xss" in window) hits.push("window.__xss = " + String(window.__xss));
  return hits;
}"""


def chromium_path() -> str | None:
    """The Chromium to drive: ``$PTL_WSGI_CHROMIUM``, else chromium on PATH."""
    configured = os.environ.get("PTL_WSGI_CHROMIUM")
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def unavailable() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (.venv/bin/pip install playwright)"
    if chromium_path() is None:
        return "no chromium found (apt-get install chromium, or set PTL_WSGI_CHROMIUM)"
    return None


class XSSBrowser:
    """One headless Chromium, one page, reused for every visit."""

    def __init__(self, timeout_ms: int = 10_000) -> None:
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        try:
            self._browser = self._playwright.chromium.launch(
                executable_path=chromium_path(),
                args=["--no-sandbox", "--disable-gpu", "--disable-quic",
                      "--disable-background-networking", "--disable-component-update"],
            )  # fmt: skip
            self._context = self._browser.new_context(java_script_enabled=True)
            self._context.add_init_script(HOOKS)
            self._context.set_default_timeout(timeout_ms)
            self._page = self._context.new_page()
        except BaseException:
            self._playwright.stop()
            raise
        self._dialogs: list[str] = []
        self._page.on("dialog", self._on_dialog)

    def _on_dialog(self, dialog: Any) -> None:
        self._dialogs.append(f"real {dialog.type} dialog: {dialog.message}")
        dialog.dismiss()

    def visit(self, url: str) -> list[str]:
        """Load *url*, provoke every handler, and return what executed ([] if nothing)."""
        self._dialogs.clear()
        page = self._page
        page.goto(url, wait_until="load")
        page.evaluate(PROVOKE)
        hits = list(self._dialogs)
        for frame in page.frames:
            try:
                hits.extend(frame.evaluate(COLLECT))
            except Exception:  # a frame that navigated away has nothing to say
                continue
        # A hit may have navigated the page; start the next visit from a clean one.
        if page.url != url:
            page.goto("about:blank")
        return hits

    def visit_response(self, url: str, body: bytes) -> list[str]:
        """Like :meth:`visit`, but the browser gets *body* (say, a POST's response) for *url*."""

        def fulfil(route: Any) -> None:
            route.fulfill(status=200, body=body, content_type="text/html; charset=utf-8")

        self._page.route(url, fulfil)
        try:
            return self.visit(url)
        finally:
            self._page.unroute(url, fulfil)

    def evaluate(self, expression: str) -> Any:
        """Evaluate JavaScript *expression* in the page of the last visit."""
        return self._page.evaluate(expression)

    def close(self) -> None:
        """Close the browser and stop the driver."""
        try:
            self._browser.close()
        finally:
            self._playwright.stop()

    def __enter__(self) -> XSSBrowser:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def visit_body(browser: XSSBrowser, html: str, url: str) -> list[str]:
    """The hits of *html* loaded as a page's body (UTF-8, standards mode) at *url*."""
    page = f"<!doctype html><html><head><meta charset=utf-8></head><body>{html}</body></html>"
    return browser.visit_response(url, page.encode())


#: The marks of a test that needs Chromium: slow (not in make test-fast), skipped with
#: the reason where the browser cannot run.
BROWSER_ONLY = [
    pytest.mark.slow,
    pytest.mark.skipif(unavailable() is not None, reason=str(unavailable())),
]
