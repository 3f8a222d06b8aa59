#!/usr/bin/env python3
"""Drives the interactive pxl REPL through a pseudo-terminal, as a user would:
a multi-line def, a call, tab completion, an error the session survives, :type,
Ctrl-C, persistent history and :quit. Python stdlib only."""
import argparse
import os
import pty
import re
import select
import signal
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = float(os.environ.get("PXL_PTY_TIMEOUT", "30"))


class Session:
    def __init__(self, argv, env):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve(argv[0], argv, env)
        self.transcript = b""
        self.pos = 0  # start of the output not yet matched by expect()

    def send(self, text):
        os.write(self.fd, text.encode())

    def expect(self, pattern, what):
        """Waits until `pattern` (a regex) appears in the new output."""
        deadline = time.monotonic() + TIMEOUT
        regex = re.compile(pattern.encode())
        while True:
            m = regex.search(self.transcript, self.pos)
            if m:
                self.pos = m.end()
                return m
            left = deadline - time.monotonic()
            if left <= 0:
                self.fail(f"timed out waiting for {what} ({pattern!r})")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    data = os.read(self.fd, 4096)
                except OSError:  # EIO: the child closed the terminal
                    data = b""
                if not data:
                    self.fail(f"pxl exited while waiting for {what} ({pattern!r})")
                self.transcript += data

    def fail(self, message):
        print(f"FAIL: {message}\n--- transcript ---\n"
              + self.transcript.decode("utf-8", "replace"), file=sys.stderr)
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        sys.exit(1)

    def wait(self):
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
            try:  # keep draining so pxl never blocks on a full terminal
                if select.select([self.fd], [], [], 0.05)[0]:
                    self.transcript += os.read(self.fd, 4096)
            except OSError:
                pass
        self.fail("pxl did not exit after :quit / exit()")


PROMPT = r">>> "
MORE = r"\.\.\. "


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pxl", default=str(REPO / "build" / "bin" / "pxl"))
    ap.add_argument("--show", action="store_true", help="print the transcript")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pxl-pty-") as home:
        env = {k: v for k, v in os.environ.items() if k != "PXL_DEVICES"}
        env.update(HOME=home, TERM="dumb", LC_ALL="C.UTF-8", INPUTRC="/dev/null")
        s = Session([opts.pxl], env)
        s.expect(r"Type :help", "the banner")
        s.expect(PROMPT, "the first prompt")

        s.send("def twice(x):\r")
        s.expect(MORE, "the continuation prompt after a block header")
        s.send("\treturn x * 2\r")  # TAB at the start of a line indents
        s.expect(MORE, "the continuation prompt inside the block")
        s.send("\r")  # a blank line ends the block
        s.expect(PROMPT, "the prompt after the block")
        s.send("twice(21)\r")
        s.expect(r"\r?\n42\r?\n", "the echo of twice(21)")
        s.expect(PROMPT, "the prompt after the call")

        s.send("np.aran\t")
        s.expect(r"np\.aran(\x07)?ge", "tab completion of np.aran to np.arange")
        s.send("(3).tolist()\r")
        s.expect(r"\[0, 1, 2\]", "the echo of np.arange(3).tolist()")
        s.expect(PROMPT, "the prompt after the completed call")

        s.send("undefined_name + 1\r")
        s.expect(r"error\[E0100\].*undefined_name", "the diagnostic for an undefined name")
        s.expect(PROMPT, "the prompt after an error (the session survives)")
        s.send("twice(5)\r")
        s.expect(r"\r?\n10\r?\n", "twice() still defined after the error")
        s.expect(PROMPT, "the prompt")

        s.send(":ty\t")
        s.expect(r":ty(\x07)?pe", "tab completion of the command :ty to :type")
        s.send(" np.ones((2, 3))\r")
        s.expect(r"float32\[2, ?3\]", ":type of an array")
        s.expect(PROMPT, "the prompt after :type")

        s.send("1 + ")
        s.expect(r"1 \+ ", "the echo of a half-typed line")
        s.send("\x03")  # Ctrl-C clears the input
        s.expect(r"KeyboardInterrupt", "Ctrl-C")
        s.expect(PROMPT, "the prompt after Ctrl-C")
        s.send("def unfinished():\r")
        s.expect(MORE, "the continuation prompt")
        s.send("\x03")  # Ctrl-C also abandons a half-entered block
        s.expect(r"KeyboardInterrupt", "Ctrl-C in a block")
        s.expect(PROMPT, "the primary prompt after Ctrl-C in a block")
        s.send("7\r")
        s.expect(r"\r?\n7\r?\n", "a clean input after Ctrl-C")
        s.expect(PROMPT, "the prompt")

        s.send(":quit\r")
        code = s.wait()
        if code != 0:
            s.fail(f"exit status {code} after :quit, expected 0")
        history = Path(home, ".pxl_history")
        if not history.exists() or "np.arange(3).tolist()" not in history.read_text():
            s.fail("~/.pxl_history does not hold the completed line np.arange(3).tolist()")
    if opts.show:
        print(s.transcript.decode("utf-8", "replace"))
    # exit(n) ends the interactive session with status n, as in Python's REPL.
    with tempfile.TemporaryDirectory(prefix="pxl-pty-") as home:
        env.update(HOME=home)
        s = Session([opts.pxl], env)
        s.expect(PROMPT, "the first prompt")
        s.send("exit(3)\r")
        code = s.wait()
        if code != 3:
            s.fail(f"exit status {code} after exit(3), expected 3")
    print("pty REPL test passed")


if __name__ == "__main__":
    main()
