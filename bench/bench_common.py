"""What the benchmark script (scripts/bench) and the benchmark tests (test/bench) share: a
throwaway ZooKeeper server, running a benchmark program and reading its key=value line,
four-letter words. Both put this directory on sys.path and import it."""
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time


def parse(out, numbers=False):
    """The one `impl=... key=value` line a benchmark program prints, as a dict of strings; with
    numbers, numeric values become floats ("nan" becomes None)."""
    lines = [l for l in out.splitlines() if "impl=" in l]
    if len(lines) != 1:
        raise RuntimeError("expected one result line, got:\n" + out)
    kv = dict(p.split("=", 1) for p in lines[0].split() if "=" in p)
    if numbers:
        for k, v in kv.items():
            try:
                kv[k] = float(v) if v != "nan" else None
            except ValueError:
                pass
    return kv


def run(cmd, timeout=240, echo=True, log=None, heartbeat_s=30, numbers=False):
    """Runs a benchmark program to its end and returns its parsed result line (parse()).

    echo: print the command, its exit status and its output to stdout (the tests' log).
    log: a function of one line for progress (the command, and every heartbeat_s seconds a line
    while it runs; the scripts' stderr); also takes the failure report, which otherwise goes to
    stdout. Raises RuntimeError on a non-zero exit (after reporting the output and the end of
    stderr), and when the program is still running after timeout seconds (it is killed)."""
    report = log or (lambda line: print(line, flush=True))
    if log:
        log("  $ " + " ".join(cmd))
    t = time.time()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as p:
        while True:
            left = timeout - (time.time() - t)
            try:
                out, err = p.communicate(timeout=max(0.1, min(heartbeat_s, left)))
                break
            except subprocess.TimeoutExpired:  # retrying communicate() loses no output
                if time.time() - t >= timeout:
                    p.kill()
                    p.communicate()
                    raise RuntimeError("%s: no result after %.0f s" % (cmd[0], timeout))
                if log:
                    log("    ... still running (%.0f s)" % (time.time() - t))
    if echo:
        print("$ " + " ".join(cmd) + " -> %d" % p.returncode, flush=True)
        print(out, flush=True)
    if p.returncode != 0:
        if not echo:
            report(out)
        report(err[-3000:])
        raise RuntimeError("%s exited %d" % (cmd[0], p.returncode))
    return parse(out, numbers)


class Server:
    """A throwaway standalone server (scripts/zk-server.sh: a free loopback port, `key=value`
    extras into its zoo.cfg) in a new directory under $TMPDIR named by prefix. connect is its
    connect string, work its directory (for the caller's files too); stop() stops it and
    removes the directory."""

    def __init__(self, scripts, prefix, extra=()):
        self.scripts = scripts
        self.work = tempfile.mkdtemp(prefix=prefix)
        self.dir = os.path.join(self.work, "zk")
        try:
            self.connect = subprocess.check_output(
                ["bash", os.path.join(scripts, "zk-server.sh"), "start", self.dir] + list(extra),
                text=True, timeout=90).strip().splitlines()[-1]
        except BaseException:
            self.stop()
            raise

    def stop(self):
        subprocess.call(["bash", os.path.join(self.scripts, "zk-server.sh"), "stop", self.dir])
        shutil.rmtree(self.work, ignore_errors=True)


@contextlib.contextmanager
def throwaway_server(scripts, prefix, extra=()):
    """A Server for a with-block: yields (connect string, work dir); always stops it."""
    srv = Server(scripts, prefix, extra)
    try:
        yield srv.connect, srv.work
    finally:
        srv.stop()


def four_letter(connect, word):
    host, port = connect.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(word.encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return data.decode(errors="replace")


def mntr(connect):
    out = {}
    for line in four_letter(connect, "mntr").splitlines():
        parts = line.split("\t")
        if len(parts) == 2:
            out[parts[0].strip()] = parts[1].strip()
    return out
