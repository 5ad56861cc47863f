"""``failover-harness fake-provider``: serve a fake OpenAI or Anthropic endpoint on loopback.

It is the recording fake (:class:`~harness.providers.recording.RecordingFake`): it answers
streamed requests (``stream: true``, SSE on both wire formats) and keeps what it received —
``GET /_fake/received`` while it runs (what a gateway in front of it actually sent), and with
``--log FILE`` one JSON line per request when it stops. Its control endpoints
(``/_fake/received``, ``/_fake/script``, ``/_fake/reset``) answer only requests carrying the
header ``x-fake-control-token`` with the run's token: printed at start, or the value of
``FAILOVER_FAKE_TOKEN`` when set (``certify`` through a gateway sends it from there). Whatever
the gateway in front sends on the provider's path cannot change a script or the log.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from pathlib import Path

from harness import contracts  # lazy: only --answers-from loads a contract
from harness.commands._serving import stopped_by_uvicorn
from harness.domain.errors import ConfigError
from harness.domain.words import counted
from harness.providers.behaviours import ALL_BEHAVIOURS, Behaviour, BehaviourError
from harness.providers.fake_answers import load_answers
from harness.providers.recording import CONTROL_HEADER, TOKEN_ENV, RecordingFake

HELP = ("Serve a fake LLM provider (OpenAI or Anthropic wire format) with a chosen "
        "behaviour")
EXITS = {0: "stopped cleanly (Ctrl-C)"}
EXAMPLES = (
    ("an OpenAI-style provider answering each golden input with its expectation",
     "failover-harness fake-provider --kind openai-chat --answers-from contracts/ticket_triage"),
    ("an Anthropic-style provider that hangs", "failover-harness fake-provider --kind "
     "anthropic-messages --behaviour hang --port 8900"),
)

KINDS = ("openai-chat", "anthropic-messages")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", required=True, choices=KINDS, help="the wire format to speak")
    parser.add_argument("--port", type=int, default=0,
                        help="TCP port on the loopback interface (0: any free port; printed)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--behaviour", "--behavior", default="conformant", metavar="B",
                        help="how to answer: " + ", ".join(ALL_BEHAVIOURS)
                        + " (a request may override it with the header x-fake-behaviour)")
    answers = parser.add_mutually_exclusive_group()
    answers.add_argument("--answers", metavar="FILE",
                         help="YAML/JSON answers: [{user, system?, answer}] (default: a minimal "
                              "instance of the request's schema)")
    answers.add_argument("--answers-from", metavar="DIR",
                         help="a contract folder (contracts/<id>): answer each golden input, "
                              "rendered with the contract's prompts, with its golden expectation")
    parser.add_argument("--log", type=Path, default=None, metavar="FILE",
                        help="when stopped, write every request received (headers with keys "
                             "masked, body, outcome) to FILE, one JSON object a line")
    parser.add_argument("--expect-api-key-env", metavar="NAME",
                        help="answer 401 unless the request carries the key held in env NAME")


def run(args: argparse.Namespace) -> int:
    from harness.providers.fake_server import bind_socket, uvicorn_server  # optional extra: serve

    try:
        behaviour = Behaviour.parse(args.behaviour)
    except BehaviourError as exc:
        raise ConfigError(str(exc), field="--behaviour",
                          fix="e.g. --behaviour conformant, slow:250 or status:429") from None
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"port {args.port} is out of range", field="--port",
                          fix="use 1–65535, or 0 for any free port")
    answer = load_answers(args.answers) if args.answers else None
    answers_from = None
    if args.answers_from:
        contract = contracts.load_contract(Path(args.answers_from))
        answer = contracts.golden_answer(contract)
        answers_from = f"golden {contract.id}"
    expected = None
    if args.expect_api_key_env:
        expected = os.environ.get(args.expect_api_key_env)
        if not expected:
            raise ConfigError(f"environment variable {args.expect_api_key_env} is not set",
                              field="--expect-api-key-env",
                              fix=f"export {args.expect_api_key_env}=<key> first")
    token = os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(18)
    app = RecordingFake(args.kind, str(behaviour), answer, answers_from=answers_from,
                        token=token)
    app.expected_api_key = expected  # checked on every non-streamed request
    sock = bind_socket(args.host, args.port)
    host, port = sock.getsockname()[:2]
    url = f"http://{host}:{port}"
    sdk_base = f"{url}/v1" if args.kind == "openai-chat" else url
    source = f"; answers: {answers_from}" if answers_from else ""
    print(f"fake-provider {args.kind} ({behaviour}{source}) listening on {url}  "
          f"(SDK/providers.yaml base_url: {sdk_base})", flush=True)
    shown = f"${TOKEN_ENV}" if os.environ.get(TOKEN_ENV) else token
    print(f"control endpoints (/_fake/received, /_fake/script, /_fake/reset) need the header "
          f"{CONTROL_HEADER}: {shown}", flush=True)
    # Ctrl-C and SIGTERM both stop the server gracefully and end with exit code 0.
    try:
        with stopped_by_uvicorn():
            uvicorn_server(app).run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn re-raises the signal it shut down for
    finally:
        sock.close()
    received = app.received()
    if args.log is not None:
        args.log.write_text("".join(json.dumps(r.to_json(), ensure_ascii=False) + "\n"
                                    for r in received), encoding="utf-8")
    print(f"fake-provider stopped after {counted(app.deliveries.total, 'delivery', 'deliveries')} "
          f"({counted(len(received), 'request')} received"
          + (f", logged to {args.log})" if args.log else ")"),
          file=sys.stderr)
    return 0

