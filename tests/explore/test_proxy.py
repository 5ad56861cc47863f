"""The holding proxy on real servers: a real redis-server and a real PostgreSQL, real clients
(redis-py, psycopg). Bytes pass unchanged, every step is held until it is granted,
PostgreSQL's backend pid is read, TLS and foreign protocols are refused with a problem."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from harness.explore.proxy import HeldStep, Link, Proxy, Upstream
from tests._imported import Imported

# the redis client library: only these tests use it, so only the worker running them imports it
redis: Any = Imported("redis")


class Holder:
    """Holds every step until the test releases it; records shapes and answers."""

    def __init__(self) -> None:
        self.cv = threading.Condition()
        self.held: list[HeldStep] = []
        self.answers: list[HeldStep] = []
        self.shapes: list[str] = []
        self.hold = True

    def submit(self, step: HeldStep) -> None:
        with self.cv:
            self.shapes.append(step.shape)
            self.held.append(step)
            step.granted = not self.hold
            self.cv.notify_all()

    def grant(self, step: HeldStep) -> None:
        with self.cv:
            step.granted = True
        step.link.wake()

    def release(self) -> None:
        """Let every held step through, and every later one."""
        with self.cv:
            self.hold = False
            for step in self.held:
                if not step.granted:
                    step.granted = True
                    step.link.wake()

    def wait_held(self, n: int) -> list[HeldStep]:
        with self.cv:
            assert self.cv.wait_for(lambda: len(self.held) >= n, timeout=10)
            return list(self.held)

    def answered(self, step: HeldStep) -> None:
        with self.cv:
            self.answers.append(step)
            self.cv.notify_all()

    def gone(self, link: Link) -> None:
        return None


Recording = Holder


@pytest.fixture
def passing() -> Recording:
    holder = Recording()
    holder.hold = False
    return holder


@pytest.fixture
def redis_proxy(redis_url: str, passing: Recording) -> Iterator[Proxy]:
    with Proxy(Upstream.parse(redis_url), hold=passing) as proxy:
        yield proxy


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_answers_through_the_proxy_as_directly(redis_url: str, redis_proxy: Proxy,
                                                     passing: Recording, protocol: int) -> None:
    def session(url: str, where: str) -> list[object]:
        r = redis.Redis.from_url(url, protocol=protocol)
        key = f"p{protocol}:{where}"
        try:
            seen: list[object] = [r.set(key, "1", nx=True, px=5000), r.get(key),
                                  r.hset(f"{key}:h", mapping={"a": "1", "b": "2"}),
                                  sorted(r.hgetall(f"{key}:h").items())]
            with r.pipeline(transaction=True) as pipe:
                pipe.incr(f"{key}:n")
                pipe.incr(f"{key}:n")
                seen.append(pipe.execute())
            with r.pipeline(transaction=False) as pipe:
                pipe.get(key)
                pipe.get(f"{key}:missing")
                seen.append(pipe.execute())
            seen.append(r.eval("return redis.call('INCRBY', KEYS[1], ARGV[1])", 1,
                               f"{key}:n", 5))
            seen.append(r.get(b"\x00\xff binary"))
            return seen
        finally:
            r.close()

    assert session(redis_proxy.url, "via") == session(redis_url, "direct")
    key = f"p{protocol}:via"
    assert f"MULTI[INCRBY {key}:n, INCRBY {key}:n]" in passing.shapes  # a transaction: one step
    assert f"GET {key} + GET {key}:missing" in passing.shapes  # a pipeline: one step
    assert passing.shapes[-1] == "GET \x00\ufffd binary"
    assert len(passing.answers) == len(passing.shapes)  # every held step was answered


def test_a_held_command_reaches_redis_only_when_granted(redis_url: str) -> None:
    holder = Recording()
    with Proxy(Upstream.parse(redis_url), hold=holder) as proxy:
        client = redis.Redis.from_url(proxy.url)
        direct = redis.Redis.from_url(redis_url)
        direct.delete("held")
        done = threading.Event()
        writer = threading.Thread(target=lambda: (client.set("held", "yes"), done.set()))
        writer.start()
        (step,) = [s for s in holder.wait_held(1) if s.shape == "SET held"] or holder.wait_held(2)
        assert direct.get("held") is None and not done.is_set()  # held at the proxy
        holder.grant(step)
        writer.join(timeout=10)
        assert done.is_set() and direct.get("held") == b"yes"
        client.close()
        direct.close()


@pytest.mark.postgres
def test_postgres_through_the_proxy_reads_the_backend_pid_and_holds_statements(
        pg_dsn: str) -> None:
    holder = Recording()
    with Proxy(Upstream.parse(pg_dsn), hold=holder) as proxy:
        conn = psycopg.connect(proxy.url, autocommit=True)
        result: list[object] = []
        reader = threading.Thread(target=lambda: result.append(
            conn.execute("SELECT pg_backend_pid(), %s::text", ("x'y",)).fetchone()))
        reader.start()
        (step,) = holder.wait_held(1)
        assert step.shape == "SELECT pg_backend_pid(), $1::text"
        assert not result
        holder.grant(step)
        reader.join(timeout=10)
        (pid, echoed), = result  # type: ignore[misc]
        assert echoed == "x'y" and step.link.pid == pid
        holder.release()
        with conn.transaction():  # BEGIN passes at once; the statement and COMMIT are steps
            conn.execute("SELECT 1")
        assert holder.shapes[-2:] == ["SELECT ?", "COMMIT"]
        conn.close()


@pytest.mark.postgres
def test_tls_is_refused_clearly(pg_dsn: str, passing: Recording) -> None:
    with Proxy(Upstream.parse(pg_dsn), hold=passing) as proxy:
        with pytest.raises(psycopg.OperationalError, match="does not support SSL"):
            psycopg.connect(proxy.url, sslmode="require")
        assert [p.kind for p in proxy.problems] == ["tls_refused"]
        assert "sslmode=disable" in proxy.problems[0].fix
        with psycopg.connect(proxy.url, sslmode="prefer") as conn:  # falls back to plain TCP
            assert conn.execute("SELECT 1").fetchone() == (1,)


def test_a_client_of_another_protocol_is_a_problem(redis_url: str, passing: Recording) -> None:
    with Proxy(Upstream.parse(redis_url), hold=passing) as proxy:
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(proxy.url.replace("redis://", "postgresql://u@").rsplit("/", 1)[0]
                            + "/db", connect_timeout=5)
        assert [p.kind for p in proxy.problems] == ["not_protocol"]
        assert "not Redis commands" in proxy.problems[0].what


def test_a_storage_server_that_is_down_is_a_problem(passing: Recording) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with Proxy(Upstream.parse(f"redis://127.0.0.1:{port}"), hold=passing) as proxy:
        with pytest.raises(redis.ConnectionError):
            redis.Redis.from_url(proxy.url).ping()
        assert [p.kind for p in proxy.problems] == ["unreachable"]
