"""A real browser for the report tests: headless Chromium driven over the DevTools protocol.

Chromium's ``--remote-debugging-pipe`` speaks the Chrome DevTools Protocol over two pipes (it reads
commands on fd 3 and writes answers and events on fd 4, each message a JSON object ending in a NUL
byte), so the standard library is enough: no WebSocket client, no driver download. The flags are
the ones a closed machine needs (no background networking, component updates or sync; a fresh
profile directory), plus ``--no-sandbox`` since tests may run as root.

:class:`Browser` starts one Chromium, opens pages at a given window width, collects script errors
and console errors, evaluates expressions and takes screenshots; :meth:`Browser.close` ends the
process it started (by its pid) and removes its profile, also when a test fails.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--hide-scrollbars", "--remote-debugging-pipe")


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(RuntimeError):
    pass


class Browser:
    def __init__(self, executable: str, timeout_s: float = 60.0) -> None:
        self.timeout_s = timeout_s
        self.profile = tempfile.mkdtemp(prefix="groupspec-chromium-")
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()

        def wire() -> None:  # in the child: fd 3 is what it reads, fd 4 what it writes
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.proc = subprocess.Popen([executable, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, pass_fds=(3, 4),  # kept past close_fds,
                                     preexec_fn=wire)  # which runs after preexec_fn: only dup2, safe before exec
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._out = os.fdopen(to_browser_w, "wb", buffering=0)
        self._in = os.fdopen(from_browser_r, "rb", buffering=0)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    # ------------------------------------------------------------------ protocol

    def _read_message(self) -> dict[str, Any]:
        import select

        deadline = time.monotonic() + self.timeout_s
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("no answer from Chromium in time")
            ready, _, _ = select.select([self._in], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._in.fileno(), 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium closed the pipe (exit code {self.proc.poll()})")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)  # type: ignore[no-any-return]

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        self._next_id += 1
        ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        self._out.write(json.dumps(message).encode() + b"\0")
        while True:
            answer = self._read_message()
            if answer.get("id") == ident:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                return answer.get("result", {})  # type: ignore[no-any-return]
            self.events.append(answer)

    def wait_for(self, method: str, session: str) -> dict[str, Any]:
        for i, event in enumerate(self.events):
            if event.get("method") == method and event.get("sessionId") == session:
                return self.events.pop(i)
        while True:
            event = self._read_message()
            if event.get("method") == method and event.get("sessionId") == session:
                return event
            self.events.append(event)

    # ------------------------------------------------------------------ pages

    def open(self, url: str, width: int = 1400, height: int = 900) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.send(domain, session=session)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=session)
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_for("Page.loadEventFired", session)
        return Page(self, session, target)

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                with contextlib.suppress(BrowserError, OSError):
                    self.send("Browser.close")
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
        finally:
            for fh in (self._out, self._in):
                with contextlib.suppress(OSError):
                    fh.close()
            shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    def __init__(self, browser: Browser, session: str, target: str) -> None:
        self.browser = browser
        self.session = session
        self.target = target

    def evaluate(self, expression: str) -> Any:
        result = self.browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                                   session=self.session)
        if "exceptionDetails" in result:
            raise BrowserError(f"script failed: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def errors(self) -> list[str]:
        """Uncaught script errors, console errors and error log entries of this page so far."""
        out = []
        for event in self.browser.events:
            if event.get("sessionId") != self.session:
                continue
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                out.append(details.get("exception", {}).get("description") or details.get("text", "exception"))
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                out.append("console.error: " + " ".join(str(a.get("value")) for a in params.get("args", [])))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append("log: " + params["entry"].get("text", ""))
        return out

    def screenshot(self, path: Path, selector: str | None = None) -> Path:
        """A PNG of the whole page, or of the first element ``selector`` matches."""
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": True}
        if selector is not None:
            box = self.evaluate(f"(() => {{const r = document.querySelector({json.dumps(selector)})"
                                f".getBoundingClientRect(); return [r.x + scrollX, r.y + scrollY, r.width, "
                                f"r.height];}})()")
            params["clip"] = {"x": box[0], "y": box[1], "width": box[2], "height": box[3], "scale": 1}
        else:
            size = self.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": size[0], "height": min(size[1], 16000), "scale": 1}
        data = self.browser.send("Page.captureScreenshot", params, session=self.session)["data"]
        path.write_bytes(base64.b64decode(data))
        return path
