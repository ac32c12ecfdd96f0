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


def percentile(values, p):
    """Nearest rank, as the benchmark programs (nan for no values)."""
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(-(-p * len(v) // 100)) - 1))]


def mutex_run(bench, connect, path, contenders, cycles, extra, cdf, log):
    """One zklock-bench mutex run (10 solo cycles) with `extra` options: its result line and
    its handoff samples (us); exits if it saw two holders at once."""
    kv = run([bench, "--connect", connect, "--path", path, "--contenders", str(contenders), "--cycles", str(cycles),
              "--solo-cycles", "10", "--cdf", cdf] + list(extra), echo=False, log=log, numbers=True)
    if kv.get("violations") not in (0, 0.0, None):
        raise SystemExit("mutual exclusion violated: %s" % kv)
    with open(cdf) as f:
        return kv, [float(x) for x in f if x.strip()]


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


# ---- the election phase's kill measurement (scripts/bench, test/bench) ------------------------

def _die_with_parent():
    """preexec_fn: the child gets SIGKILL when this process dies (PR_SET_PDEATHSIG), so a driver
    that is killed leaves no candidate leading."""
    import ctypes
    import signal
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1


class Candidate:
    """One candidate process of the kill measurement (zklock-election-bench, the Curator or the
    kazoo election peer, each with --mode candidate --id NAME). A thread reads its stdout lines:
    "connected negotiated_ms=T", "queued", "leader id=NAME t_ns=NS" (CLOCK_MONOTONIC, the clock of
    time.monotonic_ns()). stderr goes to a file, quoted when something fails."""

    def __init__(self, cmd, name, work):
        import threading
        self.name = name
        self.negotiated_ms = None
        self.leader_ns = None
        self.queued = threading.Event()
        self.leading = threading.Event()
        self.exited = threading.Event()
        self.err_path = os.path.join(work, "candidate-%s.err" % name)
        self.lines = []
        with open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(cmd + ["--id", name], stdout=subprocess.PIPE, stderr=err, text=True,
                                         preexec_fn=_die_with_parent)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        try:
            for line in self.proc.stdout:
                self.lines.append(line.rstrip("\n"))
                words = dict(w.split("=", 1) for w in line.split() if "=" in w)
                try:
                    if line.startswith("connected"):
                        self.negotiated_ms = float(words.get("negotiated_ms", "nan"))
                    elif line == "queued\n":
                        self.queued.set()
                    elif line.startswith("leader"):
                        self.leader_ns = int(words["t_ns"])
                        self.leading.set()
                except (KeyError, ValueError):
                    self.lines.append("(bad line above)")  # wait_for reports it when the event never comes
        finally:
            self.exited.set()

    def wait_for(self, event, timeout, what):
        """Waits for one of the events; raises with the process's output when it exits or times out."""
        t_end = time.time() + timeout
        while not event.wait(0.05):
            if self.exited.is_set() or time.time() > t_end:
                raise RuntimeError("candidate %s: no %s after %.0f s (exit %s); stdout %s; stderr %s" % (
                    self.name, what, timeout, self.proc.poll(), self.lines[-5:], self.stderr_tail()))

    def stderr_tail(self):
        try:
            return open(self.err_path).read()[-1500:]
        except OSError:
            return ""

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def stop(self):
        """SIGTERM (it resigns or closes its session), SIGKILL after 10 s."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def kill_failover(cmd, path, work, settle_s=0.3, start_timeout=90):
    """One kill -9 failover: candidate A leads, candidate B queues behind it, then the driver takes
    time.monotonic_ns() and sends A SIGKILL; B's "leader" line gives the moment B's code ran.
    cmd: the implementation's candidate command without --id (it includes --connect, --path,
    --session-timeout-ms). Returns {"failover_ms", "negotiated_ms"} (negotiated: what A reported,
    None when the implementation does not say). Both processes are gone afterwards."""
    tag = "%s-%d" % (os.path.basename(path), os.getpid())
    a = b = None
    try:
        a = Candidate(cmd, "a-" + tag, work)
        a.wait_for(a.leading, start_timeout, "leadership")
        b = Candidate(cmd, "b-" + tag, work)
        b.wait_for(b.queued, start_timeout, "queued line")
        time.sleep(settle_s)  # its watch on A's node is set a round trip after its node exists
        if b.leading.is_set():
            raise RuntimeError("candidate B leads while A is alive: %s" % b.lines)
        t_kill = time.monotonic_ns()
        os.kill(a.proc.pid, 9)
        b.wait_for(b.leading, 120, "leadership after the kill")
        return {"failover_ms": (b.leader_ns - t_kill) / 1e6, "negotiated_ms": a.negotiated_ms}
    finally:
        if a:
            a.kill()
        if b:
            b.stop()
