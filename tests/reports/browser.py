"""Headless Chromium for the report tests: a page's rendered DOM and layout, over the DevTools
protocol on a pipe (``--remote-debugging-pipe``: no port, no network).

``rendered(url, expression)`` loads the page, waits for its load event (never a sleep) and
returns the value of a JavaScript expression evaluated in it: the report itself has no script,
the test asks the browser what it laid out.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

DEADLINE_S = 60.0


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        if os.environ.get("HARNESS_REQUIRE_CHROMIUM") == "1":
            pytest.fail("HARNESS_REQUIRE_CHROMIUM=1 but chromium is not installed")
        pytest.skip("headless Chromium is not installed (apt-get install chromium)")
    return found


FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")


def run_chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120, check=False)


class _Pipe:
    """The DevTools protocol over fds 3 (to the browser) and 4 (from it), NUL-separated JSON."""

    def __init__(self, profile: Path) -> None:
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()

        def plumb() -> None:  # in the child: the browser reads fd 3 and writes fd 4
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.process = subprocess.Popen(
            [chromium(), *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={profile}",
             "--window-size=1280,2000", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False,  # fds 3 and 4 are made in the child; os.pipe's are close-on-exec
            preexec_fn=plumb)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        reply = self.wait(lambda m: m.get("id") == self.next_id)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return dict(reply.get("result", {}))

    def wait(self, wanted: Any) -> dict[str, Any]:
        for seen in self.events:
            if wanted(seen):
                self.events.remove(seen)
                return seen
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            while b"\0" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\0", 1)
                message = json.loads(raw)
                if wanted(message):
                    return dict(message)
                self.events.append(message)
            ready, _, _ = select.select([self.from_browser], [], [], 1.0)
            if ready:
                chunk = os.read(self.from_browser, 1 << 16)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe")
                self.buffer += chunk
        raise TimeoutError("Chromium did not answer within the deadline")

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, OSError, TimeoutError):
            self.send("Browser.close")
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=20)
        os.close(self.to_browser)
        os.close(self.from_browser)


def rendered(url: str, expression: str, *, profile: Path) -> Any:
    """Load ``url`` in headless Chromium and return ``expression``'s value (JSON) once loaded."""
    pipe = _Pipe(profile)
    try:
        target = pipe.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"]
        pipe.send("Page.enable", session=session)
        pipe.send("Page.navigate", {"url": url}, session=session)
        pipe.wait(lambda m: m.get("method") == "Page.loadEventFired"
                  and m.get("sessionId") == session)
        result = pipe.send("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                           session=session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"the expression failed: {result['exceptionDetails']}")
        return result["result"].get("value")
    finally:
        pipe.close()


# What the tests ask the browser: each element's box as laid out, and its text.
LAYOUT = """JSON.stringify((() => {
  const box = (e) => { const r = e.getBoundingClientRect();
                       return {w: r.width, h: r.height, x: r.x, y: r.y}; };
  const visible = (e) => { const b = box(e); return b.w > 0 && b.h > 0; };
  return {
    verdict: document.querySelector('#verdict h1')?.textContent,
    histograms: [...document.querySelectorAll('svg.histogram')].map(svg => ({
      pattern: svg.dataset.pattern, visible: visible(svg),
      bars: [...svg.querySelectorAll('rect.bar')].map(r => ({
        answer: r.dataset.answer, count: Number(r.dataset.count), width: box(r).w,
        kind: r.classList[1]}))})),
    first_failures: [...document.querySelectorAll('.first-failure')].map(div => ({
      title: div.querySelector('h4')?.textContent,
      timeline: (() => { const svg = div.querySelector('svg.timeline');
                         return svg ? {visible: visible(svg),
                                       lanes: svg.querySelectorAll('rect.lane').length,
                                       marks: [...svg.querySelectorAll('.mark')].map(
                                         c => c.classList[1])} : null; })(),
      text: div.textContent})),
    lanes: [...document.querySelectorAll('svg.lanes')].map(svg => ({
      visible: visible(svg), marks: svg.querySelectorAll('.mark').length})),
    rates: [...document.querySelectorAll('table.rates td.rate')].map(td => td.textContent),
    problems: [...document.querySelectorAll('li.problem')].map(li => li.textContent),
    commands: document.querySelector('#commands')?.textContent ?? '',
  };
})())"""


def layout(page: Path, profile: Path) -> dict[str, Any]:
    return dict(json.loads(rendered(page.resolve().as_uri(), LAYOUT, profile=profile)))
