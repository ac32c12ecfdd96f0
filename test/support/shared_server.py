"""The server a ctest run's tests share, for the Python tests (the apps' and the interop tests).

ctest's fixture zk_shared_server (shared_server.sh) starts it and writes "127.0.0.1:PORT" to the
file ZKLOCK_TEST_SHARED_SERVER names (and the server's dir to FILE.dir). A test takes a chroot of
its own there, /zklock-test/<pid>-<n>, as zk_server.cpp does for the C++ tests, and puts it at the
end of its connect string; the server's root is made read-only, so a session that left the
chroot out can create nothing beside another test's nodes.

    address()               "127.0.0.1:PORT", or None when no fixture published one (run by hand)
    zoo_cfg()               the shared server's zoo.cfg
    make_chroot(address)    a new chroot's path
    chroot_connect()        address() and a new chroot: "127.0.0.1:PORT/zklock-test/<pid>-<n>",
                            or None

The few requests a chroot needs are made on a plain socket (ZooKeeper's wire protocol: connect,
create, setACL, close), not with a client library: a test pays no library's import and threads.
"""
import os
import socket
import struct

ROOT = "/zklock-test"

_CREATE, _SET_ACL, _CLOSE = 1, 7, -11
_OK, _NO_AUTH, _NODE_EXISTS = 0, -102, -110
_PERM_READ, _PERM_ALL = 1, 31


def _published():
    path = os.environ.get("ZKLOCK_TEST_SHARED_SERVER")
    if not path or not os.path.exists(path):
        return None
    return path


def address():
    """The shared server's "127.0.0.1:PORT", or None when there is none."""
    path = _published()
    if not path:
        return None
    with open(path) as f:
        text = f.read().strip()
    return text or None


def zoo_cfg():
    """The path of the shared server's zoo.cfg (shared_server.sh starts it in FILE.dir's dir)."""
    with open(_published() + ".dir") as f:
        return os.path.join(f.read().strip(), "server", "zoo.cfg")


def _string(s):
    b = s.encode()
    return struct.pack(">i", len(b)) + b


def _world_acl(perms):
    return struct.pack(">ii", 1, perms) + _string("world") + _string("anyone")


class _Session:
    """One session, one request at a time, each waited for."""

    def __init__(self, addr, timeout=15):
        host, port = addr.rsplit(":", 1)
        self.where = addr
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.xid = 0
        # ConnectRequest: protocol version, last zxid seen, session timeout (ms), session id,
        # password, read-only
        self._send(struct.pack(">iqiq", 0, 0, 10000, 0) + struct.pack(">i", 16) + bytes(16) + b"\0")
        _, negotiated, _ = struct.unpack_from(">iiq", self._recv())
        if negotiated <= 0:
            raise RuntimeError(f"shared ZooKeeper {addr}: no session")

    def _send(self, payload):
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def _read(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise RuntimeError(f"shared ZooKeeper {self.where}: connection closed")
            buf += chunk
        return buf

    def _recv(self):
        return self._read(struct.unpack(">i", self._read(4))[0])

    def call(self, op, body):
        """The request's error code (0: done)."""
        self.xid += 1
        self._send(struct.pack(">ii", self.xid, op) + body)
        while True:
            xid, _, err = struct.unpack_from(">iqi", self._recv())
            if xid == self.xid:
                return err

    def create(self, path):
        return self.call(_CREATE, _string(path) + struct.pack(">i", 0) + _world_acl(_PERM_ALL) + struct.pack(">i", 0))

    def close(self):
        try:
            self.call(_CLOSE, b"")
        finally:
            self.sock.close()


def chroot_connect():
    """A connect string to a new chroot of the caller's own on the shared server, or None when
    there is no shared server."""
    addr = address()
    return addr + make_chroot(addr) if addr else None


def make_chroot(addr):
    """Creates this test's chroot on the shared server at `addr`, /zklock-test/<pid>-<n>, and
    makes the server's root read-only; returns the chroot's path."""
    s = _Session(addr)
    try:
        # Once the root is read-only, creating the dir again is refused (not authenticated) and
        # so is changing the root's ACL: both mean another test did them.
        rc = s.create(ROOT)
        if rc not in (_OK, _NODE_EXISTS, _NO_AUTH):
            raise RuntimeError(f"shared ZooKeeper {addr}: create {ROOT}: error {rc}")
        if rc != _NO_AUTH:
            rc = s.call(_SET_ACL, _string("/") + _world_acl(_PERM_READ) + struct.pack(">i", -1))
            if rc not in (_OK, _NO_AUTH):
                raise RuntimeError(f"shared ZooKeeper {addr}: setACL /: error {rc}")
        n = 0
        while True:
            n += 1
            path = f"{ROOT}/{os.getpid()}-{n}"
            rc = s.create(path)
            if rc == _OK:
                return path
            if rc != _NODE_EXISTS:
                raise RuntimeError(f"shared ZooKeeper {addr}: create {path}: error {rc}")
    finally:
        s.close()
