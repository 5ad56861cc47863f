"""The example services' provider calls: the official ``openai`` and ``anthropic`` SDKs, or plain
httpx on the wire, each call ending in an answer, a definite failure or an unknown outcome.

How an error is classified (DESIGN.md rule 9): the request never left (connect error) or the
provider refused it (4xx, 429, 5xx other than 504) -> :class:`Failed`, safe to try elsewhere;
a read timeout, a reset after the request was sent, a 504 or a stream that broke off ->
:class:`Unknown`: the provider may have done (and billed) the work.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

import httpx
from jobkit import (
    FALLBACK_MODEL,
    PRIMARY_MODEL,
    Store,
    anthropic_base_url,
    api_key,
    missing_extra,
    openai_base_url,
)

try:  # the official SDKs: the [examples] extra
    import anthropic
    import openai
except ImportError as exc:
    missing_extra("examples", exc)


#: one TLS context for the plain httpx clients of a service's worker threads: httpx otherwise
#: loads the CA bundle again for every client it makes (tens of milliseconds of CPU each)
TLS = ssl.create_default_context()


class Failed(Exception):
    """The provider did not do the work: safe to try another one."""


class Unknown(Exception):
    """The provider may have done the work: a timeout, a reset, a cut stream."""


def classify(exc: Exception) -> Exception:
    """The error a provider call ended with, as :class:`Failed` or :class:`Unknown`."""
    if isinstance(exc, openai.APIStatusError | anthropic.APIStatusError):
        if exc.status_code == 504:
            return Unknown(f"HTTP 504: {exc}")
        return Failed(f"HTTP {exc.status_code}")
    if isinstance(exc, openai.APITimeoutError | anthropic.APITimeoutError | httpx.TimeoutException):
        return Unknown("timed out")
    cause = exc.__cause__ if isinstance(exc, openai.APIConnectionError
                                        | anthropic.APIConnectionError) else exc
    if isinstance(cause, httpx.ConnectError):
        return Failed(f"not sent: {cause}")
    return Unknown(f"{type(exc).__name__}: {exc}")


def openai_client(timeout: float, *, max_retries: int = 0) -> openai.OpenAI:
    """The primary's client. ``max_retries=0``: the SDK's default (2) re-sends a timed-out call."""
    return openai.OpenAI(base_url=openai_base_url(), api_key=api_key("OPENAI_API_KEY"),
                         timeout=timeout, max_retries=max_retries)


def anthropic_client(timeout: float) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=anthropic_base_url(),
                               api_key=api_key("ANTHROPIC_API_KEY"), timeout=timeout,
                               max_retries=0)


def ask_openai(client: openai.OpenAI, prompt: str, *, stream: bool = False) -> str:
    """The primary's answer text; a stream counts only when it ended with a finish reason."""
    messages: Any = [{"role": "user", "content": prompt}]
    try:
        if not stream:
            reply = client.chat.completions.create(model=PRIMARY_MODEL, messages=messages)
            if not hasattr(reply, "choices"):  # not JSON: a broken answer
                raise Unknown(f"not a chat completion: {str(reply)[:80]!r}")
            return reply.choices[0].message.content or ""
        parts, finished = [], False
        for chunk in client.chat.completions.create(model=PRIMARY_MODEL, messages=messages,
                                                    stream=True):
            for choice in chunk.choices:
                parts.append(choice.delta.content or "")
                finished = finished or choice.finish_reason is not None
        if not finished:
            raise Unknown("the stream ended without a finish reason (cut)")
        return "".join(parts)
    except (Unknown, Failed):
        raise
    except Exception as exc:
        raise classify(exc) from exc


def ask_anthropic(client: anthropic.Anthropic, prompt: str) -> str:
    """The fallback's answer text."""
    try:
        reply = client.messages.create(model=FALLBACK_MODEL, max_tokens=512,
                                       messages=[{"role": "user", "content": prompt}])
        return "".join(getattr(block, "text", "") for block in reply.content)
    except Exception as exc:
        raise classify(exc) from exc


def wire_openai(http: httpx.Client, prompt: str) -> str:
    """The primary on the wire with plain httpx (no SDK): ``POST {OPENAI_BASE_URL}/chat/…``."""
    base = (openai_base_url() or "https://api.openai.com/v1").rstrip("/")
    body = {"model": PRIMARY_MODEL, "messages": [{"role": "user", "content": prompt}]}
    answer = _post(http, f"{base}/chat/completions",
                   {"Authorization": f"Bearer {api_key('OPENAI_API_KEY')}"}, body)
    return str(answer["choices"][0]["message"]["content"] or "")


def wire_anthropic(http: httpx.Client, prompt: str) -> str:
    """The fallback on the wire: ``POST {ANTHROPIC_BASE_URL}/v1/messages``."""
    base = (anthropic_base_url() or "https://api.anthropic.com").rstrip("/")
    body = {"model": FALLBACK_MODEL, "max_tokens": 512,
            "messages": [{"role": "user", "content": prompt}]}
    answer = _post(http, f"{base}/v1/messages", {"x-api-key": api_key("ANTHROPIC_API_KEY"),
                                                 "anthropic-version": "2023-06-01"}, body)
    return "".join(block.get("text", "") for block in answer["content"])


def _post(http: httpx.Client, url: str, headers: dict[str, str], body: Any) -> Any:
    try:
        reply = http.post(url, headers=headers, json=body)
        if reply.status_code != 200:
            raise (Unknown if reply.status_code == 504 else Failed)(f"HTTP {reply.status_code}")
        return reply.json()
    except (Unknown, Failed):
        raise
    except Exception as exc:
        raise classify(exc) from exc


def in_turn(store: Store, job: dict[str, Any], asks: list[tuple[str, Callable[[], str]]], *,
            overwrite: bool = False) -> None:
    """Ask each provider in turn until one answers, and claim its answer (compare-and-swap; or
    write it over whatever is there, ``overwrite``). A timeout leaves its attempt unknown and the
    job running; the job fails only when every provider refused."""
    refused = 0
    for provider, ask in asks:
        attempt = store.start_attempt(job["id"], provider)
        try:
            text = ask()
        except Failed as exc:
            store.end_attempt(attempt, "failed", str(exc))
            refused += 1
            continue
        except Unknown as exc:  # a timeout is not a failure: the job stays running
            store.end_attempt(attempt, "unknown", str(exc))
            continue
        if overwrite:
            store.write_result(attempt, text)
        else:
            store.claim(attempt, text)
        return
    if refused == len(asks):
        store.set_status(job["id"], "failed", "every provider refused")
