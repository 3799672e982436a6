"""Headless Chromium driven over the DevTools protocol on a pipe (no driver, no extra package): navigate,
run script in the page, wait for loads, take screenshots."""

from __future__ import annotations

import base64
import json
import os
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any


class BrowserError(RuntimeError):
    """The browser answered a command with an error, or did not answer in time."""


class Browser:
    """One headless Chromium with one page; `with Browser(executable, profile) as page: ...`."""

    def __init__(self, executable: str, profile: Path, *, width: int = 1400, height: int = 1000) -> None:
        self.executable, self.profile, self.size = executable, profile, (width, height)
        self._next_id = 0
        self._answers: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._events: queue.Queue[dict[str, Any]] = queue.Queue()
        self._lock = threading.Lock()
        self.dialogs: list[str] = []  # messages of alert/confirm/prompt dialogs the page opened

    def __enter__(self) -> Browser:
        commands_read, self._commands = os.pipe()
        self._answers_read, answers_write = os.pipe()

        def wire() -> None:
            # The child reads commands on fd 3 and writes answers on fd 4; copies first, so that neither end
            # is overwritten by the other's dup2. Both stay open: pass_fds keeps 3 and 4 past the closing.
            reads, writes = os.dup(commands_read), os.dup(answers_write)
            os.dup2(reads, 3)
            os.dup2(writes, 4)

        self._process = subprocess.Popen(
            [self.executable, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
             "--disable-extensions", f"--user-data-dir={self.profile}", "about:blank"],
            pass_fds=(3, 4), preexec_fn=wire,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(commands_read)
        os.close(answers_write)
        threading.Thread(target=self._read, daemon=True).start()
        page = next(target for target in self.send("Target.getTargets")["targetInfos"] if target["type"] == "page")
        self._session = self.send("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        for method in ("Page.enable", "Runtime.enable"):
            self.send(method, session=True)
        width, height = self.size
        self.send("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except BrowserError:
            pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        os.close(self._commands)

    def _read(self) -> None:
        buffer = b""
        with os.fdopen(self._answers_read, "rb", buffering=0) as answers:
            while chunk := answers.read(65536):
                buffer += chunk
                while b"\0" in buffer:
                    raw, buffer = buffer.split(b"\0", 1)
                    message = json.loads(raw)
                    if "id" in message:
                        with self._lock:
                            waiting = self._answers.get(message["id"])
                        if waiting is not None:
                            waiting.put(message)
                    else:
                        if message.get("method") == "Page.javascriptDialogOpening":
                            self.dialogs.append(message["params"].get("message", ""))
                        self._events.put(message)

    def send(self, method: str, *, session: bool = False, timeout: float = 60, **params: Any) -> dict[str, Any]:
        with self._lock:
            self._next_id += 1
            number = self._next_id
            answer: queue.Queue[dict[str, Any]] = queue.Queue()
            self._answers[number] = answer
        message: dict[str, Any] = {"id": number, "method": method, "params": params}
        if session:
            message["sessionId"] = self._session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        try:
            reply = answer.get(timeout=timeout)
        except queue.Empty:
            raise BrowserError(f"{method}: no answer in {timeout} s") from None
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    def _drain(self) -> None:
        while not self._events.empty():
            self._events.get_nowait()

    def _wait_for(self, method: str, timeout: float = 30) -> dict[str, Any]:
        try:
            while True:
                event = self._events.get(timeout=timeout)
                if event.get("method") == method:
                    return event
        except queue.Empty:
            raise BrowserError(f"no {method} in {timeout} s") from None

    def goto(self, url: str) -> None:
        """Open `url` and wait until the page has loaded."""
        self._drain()
        self.send("Page.navigate", session=True, url=url)
        self._wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The value of a script expression in the page."""
        result = self.send("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def act_and_wait(self, expression: str) -> None:
        """Run a script that makes the page navigate (a click, a form submission) and wait for the new page."""
        self._drain()
        self.evaluate(expression)
        self._wait_for("Page.loadEventFired")

    def screenshot(self, path: Path) -> Path:
        """The whole page as a PNG file."""
        data = self.send("Page.captureScreenshot", session=True, format="png", captureBeyondViewport=True)["data"]
        path.write_bytes(base64.b64decode(data))
        return path
