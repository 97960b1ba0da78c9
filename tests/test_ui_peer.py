"""Who owns the client's end of a loopback connection (ui/peer.py), asked of this machine's kernel."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator

import pytest

from memlikehuman.ui.peer import foreign, listed

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's socket owners: Linux")


@pytest.fixture
def connection() -> Iterator[tuple[tuple[str, int], tuple[str, int]]]:
    """A live loopback connection: the client's address and the server's."""
    with socket.create_server(("127.0.0.1", 0)) as server, socket.create_connection(server.getsockname()) as client:
        accepted, _ = server.accept()
        with accepted:
            yield client.getsockname(), server.getsockname()


def test_a_connection_from_a_socket_of_this_user_is_not_foreign(connection) -> None:
    client, server = connection
    assert not foreign(client, server, os.geteuid())
    assert foreign(client, server, os.geteuid() + 1)  # as seen by a UI another user started


def test_a_connection_the_kernel_shows_at_neither_end_is_left_to_the_token(connection) -> None:
    client, server = connection
    unseen = (client[0], 1 if client[1] != 1 else 2)
    assert not foreign(unseen, (server[0], 3 if server[1] != 3 else 4), os.geteuid())
    # No client address, or one that is not IPv4 (the UI listens on 127.0.0.1): refused.
    assert foreign(None, server, os.geteuid()) and foreign(("::1", client[1]), server, os.geteuid())


def test_the_socket_table_names_the_clients_owner_and_shows_the_servers_end(connection) -> None:
    client, server = connection
    assert listed(client, server) == (os.geteuid(), True)
    assert listed(server, client) == (os.geteuid(), True)
    assert listed((client[0], 1 if client[1] != 1 else 2), server) == (None, False)
