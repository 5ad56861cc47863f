"""Secrets: a recognisable fake key is set, then every output is searched for it."""

from __future__ import annotations

import logging
import pickle
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator

import pytest

from harness.failover import FailoverRunner, RunStatus
from harness.providers import (
    ChainLink,
    FakeServer,
    ProviderCallError,
    ProviderRequest,
    Secret,
    client_for,
    redact,
    redact_headers,
    redact_value,
)
from harness.providers.fake_transport import fake_transport
from harness.providers.secrets import install_log_redaction, secret_from_env
from harness.store import open_store
from tests.failover.conftest import OWNER, StubEligibility, new_job
from tests.providers.conftest import make_config, sdk_base_url

CANARY = "sk-CANARY-5f1e0c2a9b8d7e6f-DO-NOT-LEAK"


@pytest.fixture
def leak_check() -> Iterator[list[str]]:
    """Collects every text the harness produced; the test fails if the key is in any of them."""
    outputs: list[str] = []
    yield outputs
    leaks = [text[:200] for text in outputs if CANARY in text]
    assert not leaks, f"the API key leaked into {len(leaks)} output(s): {leaks}"
    assert outputs, "nothing was checked"


def test_the_key_appears_in_no_output(serve: Callable[..., FakeServer], tmp_path,  # type: ignore[no-untyped-def]
                                      caplog: pytest.LogCaptureFixture,
                                      capsys: pytest.CaptureFixture[str],
                                      leak_check: list[str]) -> None:
    caplog.set_level(logging.DEBUG)  # httpx, httpcore, uvicorn and our own loggers, all of it
    env = {"PRIMARY_KEY": CANARY, "FALLBACK_KEY": CANARY}
    # A worst-case provider: it rejects the key and echoes it back in full in the 401 body.
    server = serve("openai-chat", expected_api_key="sk-the-right-one-0000")
    primary = client_for(make_config("openai-chat", sdk_base_url("openai-chat", server.url),
                                     id="primary", api_key_env="PRIMARY_KEY"), env=env)
    fallback_transport = fake_transport("anthropic-messages", expected_api_key=CANARY)
    fallback = client_for(make_config("anthropic-messages", "https://api.anthropic.test",
                                      id="fallback", api_key_env="FALLBACK_KEY"),
                          transport=fallback_transport, env=env)
    req = ProviderRequest(system="s", user="u", schema={"type": "object"})

    # 1. the exception, in every form a user or a log might see it
    with pytest.raises(ProviderCallError) as info:
        primary.complete_sync(req)
    err = info.value
    assert err.status == 401 and "Incorrect API key provided: [REDACTED]" in err.message
    leak_check += [str(err), repr(err), err.message, str(err.to_error()), str(err.args),
                   "".join(traceback.format_exception(err)), str(err.to_problem())]

    # 2. the failover runner, its store records, its summary and logs
    store = open_store(f"sqlite:///{tmp_path / 'h.db'}")
    job = new_job(store)
    runner = FailoverRunner(store, OWNER, clients={"primary": primary, "fallback": fallback},
                            eligibility=StubEligibility({"fallback"}))
    result = runner.run_sync(job.id, [ChainLink(provider="primary"),
                                      ChainLink(provider="fallback")], req)
    assert result.status is RunStatus.SUCCEEDED
    attempts = store.list_attempts(OWNER, job.id)
    leak_check += [result.summary(), repr(result), str(store.get_job(OWNER, job.id).to_json())]
    leak_check += [str(a.to_json()) for a in attempts]
    assert "[REDACTED]" in str(attempts[0].error)
    store.close()

    # 3. reprs of everything that holds or built the key
    key = secret_from_env(env, "PRIMARY_KEY")
    assert key is not None and key.reveal() == CANARY
    leak_check += [repr(primary), repr(fallback), repr(primary.cfg), primary.cfg.model_dump_json(),
                   repr(key), str(key), f"{key}", f"{key!r:>10}", repr(fallback_transport)]
    with pytest.raises(TypeError):
        pickle.dumps(key)

    # 4. what the fake providers recorded (the "cassettes" of this layer)
    leak_check += [str(d) for d in server.app.deliveries.records()]
    leak_check += [str(d) for d in fallback_transport.deliveries.records()]

    # 5. everything logged and printed
    leak_check += [caplog.text, *(r.getMessage() for r in caplog.records)]
    captured = capsys.readouterr()
    leak_check += [captured.out, captured.err]


def test_redaction_helpers(caplog: pytest.LogCaptureFixture) -> None:
    Secret(CANARY)  # registering happens when a key is read
    assert redact(f"key={CANARY}!") == "key=[REDACTED]!"
    assert redact_value({"a": [CANARY, {"b": f"x:{CANARY}"}], "n": 1}) == {
        "a": ["[REDACTED]", {"b": "x:[REDACTED]"}], "n": 1}
    headers = redact_headers([("Authorization", f"Bearer {CANARY}"), ("X-Api-Key", "short"),
                              ("X-Note", f"echo {CANARY}"), ("Content-Type", "json")])
    assert headers == {"authorization": "[REDACTED]", "x-api-key": "[REDACTED]",
                       "x-note": "echo [REDACTED]", "content-type": "json"}
    logger = logging.getLogger("some.other.library")
    caplog.set_level(logging.INFO)
    flt = install_log_redaction(logging.getLogger())  # the root logger's handlers: caplog's too
    try:
        logger.info("calling with key %s", CANARY)
    finally:
        root = logging.getLogger()
        root.removeFilter(flt)
        for handler in root.handlers:
            handler.removeFilter(flt)
    assert CANARY not in caplog.text and "calling with key [REDACTED]" in caplog.text


def test_an_inline_secret_never_reaches_a_config_error() -> None:
    from harness.domain.errors import ConfigError
    from harness.providers import parse_providers

    text = ("providers:\n  p:\n    kind: openai-chat\n    base_url: https://x.test/v1\n"
            f"    model: m\n    api_key: {CANARY}\n    tokenizer: tiktoken:cl100k_base\n"
            "    context_window: 10\n")
    with pytest.raises(ConfigError) as info:
        parse_providers(text)
    assert CANARY not in str(info.value) and CANARY not in repr(info.value)


# -- fake providers never read a real key ----------------------------------------------------
class _WatchedEnv(dict[str, str]):
    """An environment that records every variable read from it."""

    def __init__(self, *args: object, **kwargs: str) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.read: list[str] = []

    def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
        self.read.append(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> str:
        self.read.append(key)
        return super().__getitem__(key)


@pytest.mark.parametrize("kind", ["openai-chat", "anthropic-messages"])
def test_a_fake_provider_never_reads_the_real_key(kind: str) -> None:
    real_key = "sk-REAL-7a6b5c4d3e2f1a0b-NOT-FOR-FAKES"
    env = _WatchedEnv({"OPENAI_API_KEY": real_key, "ANTHROPIC_API_KEY": real_key})
    cfg = make_config(kind, "fake://conformant", api_key_env="OPENAI_API_KEY")
    client = client_for(cfg, env=env)
    reply = client.complete_sync(ProviderRequest(system="s", user="u",
                                                 schema={"type": "object"}))
    assert reply.parsed is not None
    assert env.read == []  # not even looked at
    sent = [str(d) for d in client.transport.deliveries.records()]  # type: ignore[union-attr]
    assert sent and not any(real_key in text for text in sent)
    assert real_key not in str(client._headers)


# -- DSN passwords, in both DSN forms -----------------------------------------------------------
@pytest.mark.parametrize(
    ("dsn", "shown", "password"),
    [
        ("postgresql://app:s3cr%40tPW@db:5432/jobs", "postgresql://app:[REDACTED]@db:5432/jobs",
         "s3cr@tPW"),
        ("postgresql://app@db/jobs?sslmode=require&password=hunter2pw",
         "postgresql://app@db/jobs?sslmode=require&password=[REDACTED]", "hunter2pw"),
        ("host=db port=5432 password=hunter2pw dbname=jobs",
         "host=db port=5432 password=[REDACTED] dbname=jobs", "hunter2pw"),
        ("host=db password = 'two words\\'pw' user=app",
         "host=db password = '[REDACTED]' user=app", "two words'pw"),
        ("dbname=jobs sslpassword=keyfilepw", "dbname=jobs sslpassword=[REDACTED]", "keyfilepw"),
        ("PASSWORD=UpperCasePw host=db", "PASSWORD=[REDACTED] host=db", "UpperCasePw"),
        ("postgresql://db/jobs", "postgresql://db/jobs", None),
    ],
    ids=["url", "url-query", "key-value", "quoted", "sslpassword", "uppercase", "none"],
)
def test_a_dsn_password_is_redacted_in_url_and_key_value_form(
    dsn: str, shown: str, password: str | None
) -> None:
    from harness.providers.secrets import dsn_secrets, redact_dsn

    assert redact_dsn(dsn) == shown
    if password is None:
        assert dsn_secrets(dsn) == []
    else:
        assert password in dsn_secrets(dsn)
        message = f"connection to server failed: bad password {password!r} for user"
        assert password not in redact(message, extra=dsn_secrets(dsn))


def test_a_store_error_never_shows_a_key_value_dsn_password() -> None:
    from harness.store.postgres import _safe

    dsn = "host=127.0.0.1 port=1 user=app password=kv-hunter2-pw dbname=jobs"
    driver = RuntimeError('invalid connection option: password=kv-hunter2-pw near "jobs"\nmore')
    text = _safe(driver, dsn)
    assert "kv-hunter2-pw" not in text and "[REDACTED]" in text


# -- the product's own log handlers redact --------------------------------------------------------
def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)


def test_the_cli_redacts_what_any_library_logs() -> None:
    done = _run_python(
        "import logging\n"
        "from harness.cli import main\n"
        "from harness.providers.secrets import register_secret\n"
        f"register_secret({CANARY!r})\n"
        "main(['gate', '--providers', 'no-such-providers.yaml'])\n"
        f"logging.getLogger('psycopg.pool').warning('connect failed: %s', {CANARY!r})\n"
        "try:\n"
        f"    raise ValueError({CANARY!r})\n"
        "except ValueError:\n"
        "    logging.getLogger('harness.failover').exception('run failed')\n"
    )
    assert CANARY not in done.stderr
    assert "connect failed: [REDACTED]" in done.stderr
    assert "ValueError: [REDACTED]" in done.stderr


def test_serve_logs_through_handlers_that_redact() -> None:
    done = _run_python(
        "import logging, logging.config\n"
        "from harness.commands.serve import log_config\n"
        "from harness.providers.secrets import register_dsn\n"
        "register_dsn('postgresql://app:pg-Secret-pw@db/jobs')\n"
        "logging.config.dictConfig(log_config('info'))\n"
        "logging.getLogger('harness.service').warning('store error: pg-Secret-pw refused')\n"
        "logging.getLogger('uvicorn.error').warning('worker saw pg-Secret-pw')\n"
    )
    assert "pg-Secret-pw" not in done.stderr + done.stdout
    assert done.stderr.count("[REDACTED]") == 2
