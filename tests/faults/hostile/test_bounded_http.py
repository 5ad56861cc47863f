"""Every request to a target has a total deadline and every answer a size limit
(harness.target.bounded), against a hostile probe on loopback."""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Iterator

import httpx
import psutil
import pytest

from harness.domain.interrupt import interrupt_all, resume_all
from harness.target.bounded import AnswerTooLarge, BoundedTransport, DeadlineExceeded, Interrupted
from harness.target.limits import Limits
from tests.faults.hostile.probe import Answer, Probe, endless, sized


def client(url: str, **kw: object) -> httpx.Client:
    return httpx.Client(base_url=url, transport=BoundedTransport(**kw))  # type: ignore[arg-type]


def test_headers_at_one_byte_a_second_end_at_the_deadline() -> None:
    with Probe(lambda r: Answer(head_byte_s=1.0)) as probe, client(probe.url,
                                                                   deadline_s=1.5) as http:
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded, match=r"within 1\.5 s"):
            http.get("/jobs/1")
        assert time.monotonic() - started < 2.5


def test_an_endless_chunked_body_stops_at_the_body_limit_naming_it() -> None:
    with Probe(lambda r: Answer(body=endless, chunked=True)) as probe, client(
            probe.url, deadline_s=20) as http:
        started = time.monotonic()
        with pytest.raises(AnswerTooLarge, match=r"over the limit of 1,048,576 bytes \(1.0 MiB\)"):
            http.get("/jobs/1")
        assert time.monotonic() - started < 3


def test_a_slow_endless_body_ends_at_the_deadline() -> None:
    def trickle() -> Iterator[bytes]:
        while True:
            time.sleep(0.05)  # the hostile service's pace, not a synchronisation
            yield b"z" * 100

    with Probe(lambda r: Answer(body=trickle, chunked=True)) as probe, client(
            probe.url, deadline_s=1.0) as http:
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded):
            http.get("/jobs/1")
        assert time.monotonic() - started < 2


def test_a_declared_50_mb_answer_is_refused_by_its_size_without_reading_it() -> None:
    size = 50 * 1024 * 1024
    with Probe(lambda r: Answer(headers={"Content-Length": str(size)},
                                body=lambda: sized(size))) as probe, client(probe.url) as http, \
            pytest.raises(AnswerTooLarge, match=r"52,428,800 bytes \(50.0 MiB\)"):
        http.get("/jobs/1")


def test_fifty_mb_answers_at_concurrency_keep_memory_bounded() -> None:
    size = 50 * 1024 * 1024
    process = psutil.Process()
    before = process.memory_info().rss
    peak = [before]
    with Probe(lambda r: Answer(body=lambda: sized(size), chunked=True)) as probe, client(
            probe.url, limits=httpx.Limits(max_connections=16)) as http:
        def one() -> None:
            with pytest.raises(AnswerTooLarge):
                http.get("/jobs/1")
            peak.append(process.memory_info().rss)

        threads = [threading.Thread(target=one) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert max(peak) - before < 100 * 1024 * 1024


def test_the_profile_limit_is_configurable() -> None:
    with Probe(lambda r: Answer(body=b"a" * 5000)) as probe, client(
            probe.url, bounds=Limits(body_bytes=4096)) as http, \
            pytest.raises(AnswerTooLarge, match="4,096 bytes"):
        http.get("/")
    with Probe(lambda r: Answer(body=b"a" * 5000)) as probe, client(probe.url) as http:
        assert len(http.get("/").content) == 5000


def test_an_interrupt_ends_a_blocked_request_at_once() -> None:
    with Probe(lambda r: Answer(head_byte_s=1.0)) as probe, client(probe.url,
                                                                   deadline_s=30) as http:
        errors: list[BaseException] = []

        def call() -> None:
            try:
                http.get("/")
            except Exception as exc:
                errors.append(exc)

        thread = threading.Thread(target=call)
        thread.start()
        assert probe.arrived.wait(5)
        started = time.monotonic()
        try:
            interrupt_all()  # what the CLI's signal handler calls
            thread.join(5)
            assert time.monotonic() - started < 1
            assert isinstance(errors[0], Interrupted)
            with pytest.raises(Interrupted):  # and no new request goes out
                http.get("/")
        finally:
            resume_all()
    with Probe(lambda r: Answer(body=b"ok")) as probe, client(probe.url) as http:
        assert http.get("/").content == b"ok"  # a process that goes on can ask again


def test_a_gzip_bomb_is_bounded_by_its_decoded_size() -> None:
    bomb = gzip.compress(b"\0" * (50 * 1024 * 1024))  # ~50 KB on the wire
    with Probe(lambda r: Answer(headers={"Content-Encoding": "gzip"}, body=bomb)) as probe, \
            client(probe.url) as http, pytest.raises(AnswerTooLarge, match="decoded"):
        http.get("/")
    small = json.dumps({"status": "succeeded"}).encode()
    with Probe(lambda r: Answer(headers={"Content-Encoding": "gzip"},
                                body=gzip.compress(small))) as probe, client(probe.url) as http:
        response = http.get("/")
    assert response.json() == {"status": "succeeded"}
    assert probe.requests[0].headers["accept-encoding"] == "identity"


def test_an_encoding_the_harness_cannot_bound_is_refused_by_name() -> None:
    with Probe(lambda r: Answer(headers={"Content-Encoding": "br"}, body=b"x")) as probe, \
            client(probe.url) as http, pytest.raises(AnswerTooLarge, match=r"compressed \(br\)"):
        http.get("/")
