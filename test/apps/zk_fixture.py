"""The fixture of the apps tests (zklock_cli_test.py, examples_test.py, locks_test.py,
lock_delay_cli_test.py).

The cases' server: a chroot of their own on the server a ctest run's tests share (ctest's fixture
zk_shared_server, test/support/shared_server.py), or, for cases marked @own_server (they pause
the server, or look at all of it) and when no fixture published a shared server (a
test run by hand), a throwaway ZooKeeper of their own (scripts/zk-server.sh, free loopback port,
tickTime=500 so that short session timeouts are not clamped up), always stopped: also on
failure, on the test deadline and on SIGTERM. Every process a case starts through its Case is
killed and reaped before the next.
"""
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import shared_server  # noqa: E402


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def wait_for(cond, timeout, what):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise Failure(f"timed out after {timeout}s waiting for {what}")


def run(argv, timeout, **kwargs):
    """Runs a program to completion within `timeout` seconds; its stdout and stderr as text."""
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kwargs)


def program(directory, name):
    """The path of a built program; fails the case when it is not there."""
    p = os.path.join(directory, name)
    check(os.path.exists(p), f"{p} not built")
    return p


@contextlib.contextmanager
def kazoo_client(connect, **kwargs):
    """A started KazooClient, stopped and closed afterwards; None when kazoo is not installed."""
    try:
        from kazoo.client import KazooClient
    except ImportError:
        yield None
        return
    zk = KazooClient(hosts=connect, **kwargs)
    zk.start(timeout=10)
    try:
        yield zk
    finally:
        zk.stop()
        zk.close()


def own_server(fn):
    """Marks a case that needs a server of its own (it pauses it, or reads all of it)."""
    fn.own_server = True
    return fn


def session_timeout_bounds(zoo_cfg):
    """The session timeouts (seconds) a server with this zoo.cfg grants: (min, max), ZooKeeper's
    defaults (2 and 20 ticks) unless the file sets them."""
    cfg = {}
    with open(zoo_cfg) as f:
        for line in f:
            key, _, value = line.strip().partition("=")
            cfg[key] = value
    tick = int(cfg.get("tickTime", 2000))
    return (int(cfg.get("minSessionTimeout", 2 * tick)) / 1000, int(cfg.get("maxSessionTimeout", 20 * tick)) / 1000)


class Server:
    """The cases' server (`connect`): with share, a chroot of their own on the shared server
    when there is one; otherwise a throwaway server of their own in `dir`."""

    def __init__(self, scripts, share=False):
        self.scripts = scripts
        self.share = share
        self.shared = False
        self.dir = None
        self.connect = None
        self.session_timeouts = None  # (min, max) seconds

    def start(self):
        connect = shared_server.chroot_connect() if self.share else None
        if connect:
            self.connect = connect
            self.shared = True
            self.session_timeouts = session_timeout_bounds(shared_server.zoo_cfg())
            log(f"server: {self.connect}, a chroot on the shared server")
            return
        self.dir = tempfile.mkdtemp(prefix="zk-apps-test-")
        out = run(["bash", os.path.join(self.scripts, "zk-server.sh"), "start", self.dir, "tickTime=500"], 60)
        if out.returncode != 0:
            raise Failure(f"zk-server.sh start failed: {out.stderr}")
        self.connect = out.stdout.strip().splitlines()[-1]
        self.session_timeouts = session_timeout_bounds(os.path.join(self.dir, "zoo.cfg"))
        log(f"server {self.connect} in {self.dir}")

    def pid(self):
        """The server's process (to stop or pause it): a server of the case's own only."""
        check(not self.shared, "the server's pid on the server the tests share: mark the case @own_server")
        with open(os.path.join(self.dir, "pid")) as f:
            return int(f.read())

    def stop(self):
        if self.dir:  # the shared server's chroot stays: the server goes at the end of the run
            subprocess.run(["bash", os.path.join(self.scripts, "zk-server.sh"), "stop", self.dir], timeout=30)
            shutil.rmtree(self.dir, ignore_errors=True)


class Case:
    """What a test case gets: the server, a scratch dir (or None), and the processes it starts."""

    def __init__(self, server, work):
        self.server = server
        self.work = work
        self.procs = []

    def path(self, name):
        return os.path.join(self.work, name)

    def popen(self, argv, **kwargs):
        """Starts a program with its stdout and stderr as text pipes; cleanup() kills it."""
        p = subprocess.Popen(argv, **{"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, **kwargs})
        self.procs.append(p)
        return p

    def cleanup(self):
        # SIGTERM first: zklock passes it to its command, so that no command outlives the case
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                    os.kill(p.pid, signal.SIGTERM)
                    p.wait(timeout=5)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    p.kill()
            try:
                p.communicate(timeout=10)
            except Exception:
                pass


def run_cases(cases, names, scripts, deadline_s, case_type=Case, work_dirs=True):
    """Runs the cases `names` (of `cases`: name -> function of a Case) against one server (a
    chroot on the shared one unless a case is marked @own_server), each with its own Case (and
    scratch dir), within deadline_s seconds per case; the server is always stopped. Returns the
    exit status: 1 when any case (or the set-up) failed."""
    def on_deadline(signum, frame):
        raise Failure(f"test deadline ({deadline_s}s) or signal {signum}")

    signal.signal(signal.SIGALRM, on_deadline)
    signal.signal(signal.SIGTERM, on_deadline)
    signal.alarm(deadline_s * len(names))
    failed = []
    server = Server(scripts, share=not any(getattr(cases[name], "own_server", False) for name in names))
    try:
        server.start()
        for name in names:
            work = tempfile.mkdtemp(prefix=f"zklock-{name}-") if work_dirs else None
            c = case_type(server, work)
            log(f"=== {name}")
            try:
                cases[name](c)
                log(f"=== {name}: ok")
            except Exception:
                traceback.print_exc()
                failed.append(name)
                log(f"=== {name}: FAILED")
            finally:
                c.cleanup()
                if work:
                    shutil.rmtree(work, ignore_errors=True)
    except Exception:
        traceback.print_exc()
        failed.append("setup")
    finally:
        signal.alarm(0)
        server.stop()
    if failed:
        print("FAILED: " + " ".join(failed))
        return 1
    return 0
