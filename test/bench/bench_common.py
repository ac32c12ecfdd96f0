"""What the benchmark tests share: a throwaway server, running a benchmark program and reading
its key=value line, four-letter words."""
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile


def parse(out):
    """The one `impl=... key=value` line a benchmark program prints, as a dict."""
    lines = [l for l in out.splitlines() if "impl=" in l]
    if len(lines) != 1:
        raise AssertionError("expected one result line, got:\n" + out)
    return dict(p.split("=", 1) for p in lines[0].split())


def run(cmd, echo=True, timeout=240):
    """Runs a benchmark program; fails on a non-zero exit; returns its parsed line."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if echo:
        print("$ " + " ".join(cmd) + " -> %d" % p.returncode, flush=True)
        print(p.stdout, flush=True)
    if p.returncode != 0:
        if not echo:
            print(p.stdout, flush=True)
        print(p.stderr[-3000:], flush=True)
        raise AssertionError("%s exited %d" % (cmd[0], p.returncode))
    return parse(p.stdout)


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


@contextlib.contextmanager
def throwaway_server(scripts, prefix):
    """Starts scripts/zk-server.sh on a free loopback port; yields (connect string, work dir);
    always stops it and removes the dir."""
    work = tempfile.mkdtemp(prefix=prefix)
    srv = os.path.join(work, "zk")
    try:
        connect = subprocess.check_output(["bash", os.path.join(scripts, "zk-server.sh"), "start", srv],
                                          text=True, timeout=90).strip().splitlines()[-1]
        yield connect, work
    finally:
        subprocess.call(["bash", os.path.join(scripts, "zk-server.sh"), "stop", srv])
        shutil.rmtree(work, ignore_errors=True)
