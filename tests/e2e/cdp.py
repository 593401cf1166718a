"""Headless Chromium (Debian's `chromium`) driven through its DevTools
protocol over --remote-debugging-pipe: JSON messages, each ended by a NUL
byte, written to the browser's fd 3 and read from its fd 4. No WebSocket
and no npm package: the protocol's own transport, from the standard
library. A page is opened, navigated, asked to evaluate JavaScript and to
take screenshots; its uncaught exceptions and console errors are kept, so
that a test can fail on them."""

import base64
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import time

CHROMIUM = shutil.which("chromium")


class CdpError(AssertionError):
    pass


class Browser:
    """One headless Chromium with one page (a tab) of width x height."""

    def __init__(self, profile_dir, log_path, width=1400, height=1000):
        # to_browser: we write, it reads (its fd 3); from_browser: the other way (its fd 4).
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()

        def child_fds():
            # Through fds above 4 first: the pipe may be fds 3 and 4 already,
            # and dup2 of an fd onto itself would keep its close-on-exec.
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_r, from_w)]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        args = [CHROMIUM, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update",
                "--disable-dev-shm-usage", "--mute-audio", f"--user-data-dir={profile_dir}",
                f"--window-size={width},{height}", "about:blank"]
        with open(log_path, "w") as log:
            # Its own process group: the browser's helpers (zygote, renderer,
            # GPU) go with it at close.
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, close_fds=False,
                                         preexec_fn=child_fds, start_new_session=True)
        for fd in (to_r, from_w):
            os.close(fd)
        self.out, self.inp = to_w, from_r
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        self.call("Runtime.enable")
        self.call("Log.enable")
        self.call("Page.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def _read_message(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError("chromium did not answer in time")
            ready, _, _ = select.select([self.inp], [], [], left)
            if ready:
                chunk = os.read(self.inp, 1 << 20)
                if not chunk:
                    raise CdpError(f"chromium closed its pipe (exit {self.proc.poll()})")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, timeout=30.0, **params):
        """Sends a command (to the page once attached) and returns its result."""
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if self.session is not None and not method.startswith(("Target.", "Browser.")):
            msg["sessionId"] = self.session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self.out, data):]
        deadline = time.monotonic() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise CdpError(f"{method}: {m['error']}")
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def navigate(self, url):
        self.call("Page.navigate", url=url)

    def eval(self, expression, timeout=30.0):
        """The value of a JavaScript expression in the page (promises
        awaited); an exception in it fails."""
        r = self.call("Runtime.evaluate", timeout=timeout, expression=expression,
                      returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise CdpError(f"{expression!r} threw: {d.get('exception', {}).get('description', d)}")
        return r["result"].get("value")

    def page_errors(self):
        """The page's uncaught exceptions, console.error lines and the
        browser's own errors about it (a file that failed to load, a
        Content-Security-Policy violation) so far."""
        self.call("Runtime.evaluate", expression="0")  # collect the events up to now
        out = []
        for e in self.events:
            if e["method"] == "Runtime.exceptionThrown":
                d = e["params"]["exceptionDetails"]
                out.append(d.get("exception", {}).get("description") or d.get("text"))
            elif e["method"] == "Runtime.consoleAPICalled" and e["params"]["type"] == "error":
                out.append(" ".join(str(a.get("value", a.get("description")))
                                    for a in e["params"]["args"]))
            elif e["method"] == "Log.entryAdded" and e["params"]["entry"]["level"] == "error":
                entry = e["params"]["entry"]
                out.append(f"{entry['text']} ({entry.get('url', '')})")
        return out

    def screenshot(self, path):
        """The whole page as a PNG at path."""
        r = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))
        return path

    def close(self):
        try:
            self.call("Browser.close", timeout=5.0)
        except (CdpError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        # What is left of the browser's own process group, by its id.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.proc.poll() is None:
            self.proc.wait()
        for fd in (self.out, self.inp):
            try:
                os.close(fd)
            except OSError:
                pass
