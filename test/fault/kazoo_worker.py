#!/usr/bin/python3
"""A fault-harness client process: kazoo Lock(extra_lock_patterns=["-lock-"]), the same
protocol as zklock_worker.cpp (see resource_client.hpp).
    kazoo_worker.py RESOURCE_PORT CONNECT PATH WHO SESSION_TIMEOUT_MS HOLD_MS loop|hold
Fencing token: the czxid of our lock node (as zklock's fencing_token(); see CuratorWorker.java).
The holder stops writing at SUSPENDED or LOST (kazoo's listener), as kazoo's docs advise.
SIGUSR1: stop acquiring (a waiting acquire is cancelled, which removes its node), report "idle".
SIGTERM: stop the client (closing the session) and exit."""
import os
import random
import signal
import socket
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import CancelledError
from kazoo.protocol.states import KazooState

port, connect, path, who = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
session_timeout, hold_ms, loop = int(sys.argv[5]), int(sys.argv[6]), sys.argv[7] == "loop"

sock = socket.create_connection(("127.0.0.1", port))
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
rfile = sock.makefile("r")
send_lock = threading.Lock()


def send(kind, token=0, extra=""):
    line = "%s %s %d %d%s\n" % (kind, who, token, time.monotonic_ns(), " " + extra if extra else "")
    with send_lock:
        sock.sendall(line.encode())
        return rfile.readline().strip()


connection_ok = True
stopping = False


def listener(state):
    global connection_ok
    connection_ok = state == KazooState.CONNECTED
    # the listener runs on kazoo's connection thread: report from another one
    threading.Thread(target=send, args=("state", 0, state), daemon=True).start()


zk = KazooClient(hosts=connect, timeout=session_timeout / 1000.0, connection_retry={"max_tries": -1, "max_delay": 1})
zk.add_listener(listener)
lock = None


def on_usr1(signum, frame):
    global stopping
    stopping = True
    if lock is not None:
        lock.cancel()


def on_term(signum, frame):
    try:
        zk.stop()
        zk.close()
    finally:
        os._exit(0)


signal.signal(signal.SIGUSR1, on_usr1)
signal.signal(signal.SIGTERM, on_term)
zk.start(timeout=60)
send("hello", 0, "0x%x" % zk.client_id[0])
lock = zk.Lock(path, who, extra_lock_patterns=["-lock-"])
while not stopping:
    send("acquire")
    try:
        if not lock.acquire():
            continue
    except CancelledError:
        break
    except Exception as e:  # connection loss, session expiry: try again
        send("acquire_error", 0, "'%s'" % type(e).__name__)
        time.sleep(0.1)
        continue
    node = "%s/%s" % (path, lock.node)
    token = 0
    try:
        st = zk.exists(node)
        token = st.czxid if st else 0
    except Exception:
        pass
    if token == 0 or not connection_ok:
        send("dead_grant", token, "'no node or not connected'")
    else:
        reply = send("grant", token, node)
        ok = reply.startswith("OK")
        pause = " PAUSE" in reply
        hold = int(reply.split("HOLD ")[1].split()[0]) if "HOLD " in reply else hold_ms
        until = time.monotonic() + hold / 1000.0
        if not ok:
            send("lost", token, "rejected")
        while ok:
            if not loop and stopping:
                break
            time.sleep(0.01)
            if not connection_ok:
                send("lost", token, "state")
                break
            if pause:
                pause = False
                os.kill(os.getpid(), signal.SIGSTOP)
            last = loop and time.monotonic() >= until
            if not send("end" if last else "write", token).startswith("OK"):
                send("lost", token, "rejected")
                break
            if last:
                break
    try:
        lock.release()
        send("released", token, "ok")
    except Exception as e:
        send("released", 0, "'%s'" % type(e).__name__)
    if not loop:
        break
    time.sleep(random.random() * 0.02)
send("idle")
while True:
    time.sleep(3600)
