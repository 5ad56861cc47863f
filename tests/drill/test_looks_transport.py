"""The drill's looks at a job ride kept-alive connections that the service may close at any
moment (uvicorn does, right after a handler raised): a look written to such a connection never
reaches the service, and is sent again on a new one, so that a client-side artefact never
becomes an *unknown* (or a verdict) about the service. A submit is never sent twice."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from harness.drill.client import ServiceClient, clients_of
from harness.target.drill_profile import load_drill
from tests.detection.conftest import example
from tests.drill.test_judge_promises import PROFILE as JUDGED
from tests.scenarios.test_transport import REPORT_MS, Server

PROFILE = JUDGED.replace("HEDGE", "false")  # a jobs service's drill profile


def service(seen: list[str]) -> Any:
    """``POST /jobs`` raises the first time (Starlette's 500, then uvicorn closes the kept-alive
    connection ``REPORT_MS`` later), then answers a job; ``GET /jobs/{id}`` raises the first time
    too, then answers the job done. What each handler was asked is in ``seen``."""
    async def create(request: Request) -> Response:
        seen.append("POST")
        if seen.count("POST") == 1:
            raise RuntimeError("the handler raised")
        return JSONResponse({"id": "job-1", "status": "running"}, status_code=202)

    async def look(request: Request) -> Response:
        seen.append("GET")
        if seen.count("GET") == 1:
            raise RuntimeError("the handler raised")
        return JSONResponse({"id": request.path_params["job"], "status": "done",
                             "result": "ok"})

    inner = Starlette(routes=[Route("/jobs", create, methods=["POST"]),
                              Route("/jobs/{job}", look, methods=["GET"])])
    return example("jobs_app").served(inner, report_ms=REPORT_MS)


@pytest.fixture
def drilled(tmp_path: Path) -> Iterator[tuple[ServiceClient, list[str]]]:
    seen: list[str] = []
    server = Server(service(seen))
    seen.clear()  # the server's readiness probe
    path = tmp_path / "p.yaml"
    path.write_text(PROFILE, encoding="utf-8")
    try:
        with clients_of(server.url, 10.0, None) as clients:
            yield ServiceClient(load_drill(path), {}, clients, lambda: 0.0, threading.Event(),
                                5.0), seen
    finally:
        server.stop()


def test_a_look_the_closed_connection_swallowed_is_sent_again(
        drilled: tuple[ServiceClient, list[str]]) -> None:
    client, seen = drilled
    first = client.observe("job-1")
    assert (first.status, first.http_status) == ("error", 500)  # what the service answered
    # the same kept-alive connection, which the service is closing: sent again on a new one
    second = client.observe("job-1")
    assert (second.status, second.raw_status, second.result) == ("succeeded", "done", "ok"), \
        second.error
    assert seen == ["GET", "GET"]  # the look that was re-sent ran once


def test_a_submit_the_closed_connection_swallowed_is_not_sent_again(
        drilled: tuple[ServiceClient, list[str]]) -> None:
    client, seen = drilled
    assert client.submit("drill-0123456789ab", "k-1").status == 500
    lost = client.submit("drill-0123456789ab", "k-1")  # a second intent would be a double click
    assert lost.status is None and lost.job_id is None and lost.error
    assert seen == ["POST"]  # the service never saw it, and the drill did not send it again
