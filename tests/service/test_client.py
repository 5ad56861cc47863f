"""The client: its public surface, replies for every status, and transport failures classified
as never-sent or maybe-applied — over real sockets."""

from __future__ import annotations

import socket
import threading
from collections import Counter
from collections.abc import Iterator

import pytest

import harness.service
from harness.service import AsyncHarnessClient, HarnessClient, Reply, TransportFailure
from tests.service.apihelp import INTENT, new_key
from tests.service.serving import ALICE_TOKEN, ServeProcess, free_port


def test_the_package_exports_exactly_the_client_surface() -> None:
    assert harness.service.__all__ == sorted(harness.service.__all__)
    assert set(harness.service.__all__) == {
        "AsyncHarnessClient", "HarnessClient", "Reply", "TransportFailure",
    }


def test_reply_properties() -> None:
    problem = {"type": "t", "title": "x", "status": 409, "detail": "d", "code": "job_completed"}
    assert Reply(409, problem, {}).code == "job_completed"
    assert Reply(409, problem, {}).problem == problem and not Reply(409, problem, {}).ok
    assert Reply(200, {"code": "not-a-problem"}, {}).code is None
    assert Reply(200, {}, {"idempotent-replayed": "true"}).replayed
    assert not Reply(201, {}, {}).replayed
    assert Reply(502, "<html>bad gateway</html>", {}).code is None


def test_a_refused_connection_was_never_sent() -> None:
    with HarnessClient(f"http://127.0.0.1:{free_port()}", ALICE_TOKEN) as api, \
            pytest.raises(TransportFailure) as caught:
        api.create_job(new_key(), INTENT)
    assert caught.value.maybe_applied is False
    assert ALICE_TOKEN not in str(caught.value)


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A real listening socket that accepts, reads, and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted: list[socket.socket] = []
    done = threading.Event()

    def serve() -> None:
        server.settimeout(5)
        try:
            conn, _ = server.accept()
            accepted.append(conn)
            conn.recv(65536)
            done.wait(10)
        except OSError:
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    done.set()
    thread.join(10)
    for conn in accepted:
        conn.close()
    server.close()


@pytest.mark.anyio
async def test_a_read_timeout_may_have_been_applied(silent_server: int) -> None:
    async with AsyncHarnessClient(f"http://127.0.0.1:{silent_server}", ALICE_TOKEN,
                                  timeout=0.5) as api:
        with pytest.raises(TransportFailure) as caught:
            await api.create_job(new_key(), INTENT)
    assert caught.value.maybe_applied is True


def test_one_sync_client_shared_by_threads_makes_one_job(loopback_server: ServeProcess) -> None:
    key, threads = new_key(), 16
    barrier = threading.Barrier(threads, timeout=30)  # breaks instead of hanging
    replies: list[Reply] = []

    with HarnessClient(loopback_server.url, ALICE_TOKEN) as api:
        def click() -> None:
            barrier.wait()
            replies.append(api.create_job(key, INTENT))

        workers = [threading.Thread(target=click) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=60)
        assert not any(worker.is_alive() for worker in workers), "a create_job call hung"
    assert Counter(r.status for r in replies) == {201: 1, 200: threads - 1}
    assert len({r.body["id"] for r in replies}) == 1
