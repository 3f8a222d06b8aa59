"""A client of `pxl --batch` (repl/batch.hpp) for the test runners: programs run
one after another in one pxl process, which pays the CUDA driver's start-up once.
Python stdlib only."""
import os
import select
import signal
import subprocess
import threading
import time


class BatchPxl:
    """One `pxl --batch` process, restarted after a crash or a timeout."""

    def __init__(self, pxl, env=None):
        self.pxl, self.env, self.proc = pxl, env, None

    def _start(self):
        self.proc = subprocess.Popen([self.pxl, "--batch"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=self.env, start_new_session=True)
        self.buf = b""

    def close(self):
        if self.proc:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None

    def _read(self, n, deadline):
        while len(self.buf) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                raise EOFError
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def run(self, cwd, args, devices=None, timeout=60):
        """(exit status or None on timeout, stdout bytes, stderr bytes) of `pxl ARGS` run
        in `cwd` with PXL_DEVICES=devices (None: unset). A crash gives -signal."""
        if any("\t" in a or "\n" in a for a in [str(cwd)] + list(args)):
            raise ValueError("a batch request cannot hold tabs or newlines")
        if not self.proc:
            self._start()
        line = "\t".join([str(cwd), devices or ""] + list(args)) + "\n"
        deadline = time.monotonic() + timeout
        try:
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
            header = b""
            while not header.endswith(b"\n"):
                header += self._read(1, deadline)
            tag, status, n_out, n_err = header.decode().split()
            assert tag == "pxl-batch", header
            out = self._read(int(n_out), deadline)
            err = self._read(int(n_err), deadline)
            return int(status), out, err
        except TimeoutError:
            self.close()
            return None, b"", f"timed out after {timeout} s".encode()
        except (EOFError, BrokenPipeError):
            code = self.proc.wait()
            self.proc = None
            return code if code < 0 else -1, b"", b"pxl --batch ended during this program"


_PER_THREAD = threading.local()


def thread_batch(pxl, env):
    """The calling thread's own `pxl --batch` (a test runner's worker), started on first use."""
    if not hasattr(_PER_THREAD, "pxl"):
        _PER_THREAD.pxl = BatchPxl(pxl, env)
    return _PER_THREAD.pxl
