#!/usr/bin/env python3
"""Ctrl-C while code runs in the REPL stops that code with E0112 and keeps the session."""
import argparse, os, pty, select, sys, time

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pxl", required=True)
    pxl = ap.parse_args().pxl
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["HOME"] = "/nonexistent-home-for-test"
        os.execv(pxl, ["pxl"])

    def read_until(needle, timeout=20.0):
        out, end = "", time.time() + timeout
        while time.time() < end and needle not in out:
            r, _, _ = select.select([fd], [], [], 0.1)
            if r:
                try:
                    out += os.read(fd, 4096).decode(errors="replace")
                except OSError:
                    break
        return out

    read_until(">>> ")
    os.write(fd, b"while True: pass\n\n")
    time.sleep(0.5)
    os.write(fd, b"\x03")
    out = read_until("interrupted")
    if "E0112" not in out:
        sys.exit("no E0112 after Ctrl-C:\n" + out)
    os.write(fd, b"print(40 + 2)\n")
    out = read_until("42")
    if "42" not in out:
        sys.exit("the session did not survive the interrupt:\n" + out)
    os.write(fd, b":quit\n")
    _, status = os.waitpid(pid, 0)
    if os.WEXITSTATUS(status) != 0:
        sys.exit(f"pxl exited with {os.WEXITSTATUS(status)}")
    print("ok")

main()
