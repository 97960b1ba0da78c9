"""Who is at the other end of a loopback TCP connection: the user that owns the client's socket.

Every local user can connect to a port on 127.0.0.1, and a browser sends its cookies for 127.0.0.1 to
every port there, so a listener of another user on another port receives this UI's cookie. On Linux
the kernel names the owner of both ends of a loopback connection: the UI serves only connections whose
client socket is its own user's, and then neither the token nor a cookie works for anyone else.

The kernel is asked for the one socket through sock_diag (netlink, what `ss` uses; about 30 µs, open to
every user). Where that finds nothing (the module is missing, or the client cannot be seen) the table
``/proc/net/tcp`` is read instead (about 9 ms on a machine with a large socket hash). Elsewhere (no
netlink, no table) the owner cannot be known and the token and the session cookie are the only keys.
"""

from __future__ import annotations

import socket
import struct
import sys
from pathlib import Path

TABLE = Path("/proc/net/tcp")  # IPv4: the UI listens on 127.0.0.1 only
TIME_WAIT = 6  # an earlier connection's end, owned by nobody (shown as uid 0)
NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 1
NLMSG_ERROR = 2
HEADER = struct.Struct("=IHHII")  # struct nlmsghdr
NO_COOKIE = 0xFFFFFFFF
UID_AT = HEADER.size + 4 + 48 + 12  # inet_diag_msg: family, state, timer, retrans; the socket ID; 3 counters


def foreign(client: tuple[str, int] | None, server: tuple[str, int] | None, uid: int) -> bool:
    """Whether the connection from ``client`` to ``server`` certainly comes from a socket another user owns.

    False when the client's socket is ``uid``'s, and when this cannot be known: not Linux, or a kernel
    that shows neither end of this very connection. Seen from the server's end but not from the
    client's, it counts as foreign: the client is nowhere to be seen.
    """
    if client is None or server is None or not (_ipv4(client[0]) and _ipv4(server[0])):
        return True
    owner = _asked(client, server)
    if owner is None:
        found = listed(client, server)
        if found is None:
            return False
        owner, seen = found
        if owner is None:
            return seen
    return owner != uid


def _asked(client: tuple[str, int], server: tuple[str, int]) -> int | None:
    """The owner of the socket bound to ``client`` and connected to ``server``, from sock_diag; None when
    the kernel finds none (or cannot be asked)."""
    if not hasattr(socket, "AF_NETLINK"):
        return None
    ends = struct.pack("!HH16s16s", client[1], server[1], _raw(client[0]), _raw(server[0]))
    request = struct.pack("=BBBxI", socket.AF_INET, socket.IPPROTO_TCP, 0, 0xFFFFFFFF) + ends
    request += struct.pack("=III", 0, NO_COOKIE, NO_COOKIE)  # any interface, any socket cookie
    message = HEADER.pack(HEADER.size + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, 1, 0) + request
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as diag:
            diag.settimeout(1)
            diag.send(message)
            answer = diag.recv(8192)
    except OSError:
        return None
    if len(answer) < UID_AT + 4 or HEADER.unpack_from(answer)[1] == NLMSG_ERROR:
        return None
    if answer[HEADER.size + 1] == TIME_WAIT:
        return None
    return int(struct.unpack_from("=I", answer, UID_AT)[0])


def _ipv4(host: str) -> bool:
    try:
        socket.inet_aton(host)
    except OSError:
        return False
    return True


def _raw(host: str) -> bytes:
    return socket.inet_aton(host) + bytes(12)  # an IPv4 address in the 16 bytes of an IPv6 one


def listed(client: tuple[str, int], server: tuple[str, int]) -> tuple[int | None, bool] | None:
    """From /proc/net/tcp: the owner of the client's end (None when not listed) and whether the server's end
    is listed at all; None when there is no table."""
    try:
        lines = TABLE.read_text(encoding="ascii", errors="replace").splitlines()[1:]
    except OSError:
        return None
    near, far = _address(*client), _address(*server)
    owner, seen = None, False
    for line in lines:
        fields = line.split()
        if len(fields) < 8:
            continue
        if fields[1] == near and fields[2] == far and int(fields[3], 16) != TIME_WAIT:
            owner = int(fields[7])
        elif fields[1] == far and fields[2] == near:
            seen = True
    return owner, seen


def _address(host: str, port: int) -> str:
    """An address as the table writes it: the IPv4 address's 32 bits in host byte order, then the port, in hex."""
    return f"{int.from_bytes(socket.inet_aton(host), sys.byteorder):08X}:{port:04X}"
