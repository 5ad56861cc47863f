"""A flawed twin of correct_service.py: the primary is not aborted after the fallback answered,
and its late answer replaces the reply the user already got.

FastAPI on uvicorn (the ``[serve]`` extra), asyncio, and the official async SDKs
(``openai.AsyncOpenAI`` for the primary, ``anthropic.AsyncAnthropic`` for the fallback, both
with ``max_retries=0``). The worker hedges like the correct service: if the primary has not
answered after ``--timeout`` seconds the job stays ``running`` and the fallback starts; at most
2 calls, so at most 2 billed. But it waits with ``asyncio.wait(..., FIRST_COMPLETED)``, takes
the first answer, and neither cancels the other task nor guards its write: each task that
finishes writes its answer as the job's result. The bug people report: "a fallback that does
not abort the orphaned primary, whose late answer then emits a second reply". Broken promise:
one winner (a result observed complete changes).

Run: ``OPENAI_BASE_URL=http://127.0.0.1:9001/v1 ANTHROPIC_BASE_URL=http://127.0.0.1:9002
python examples/drill/no_abort_service.py --port 8903 --timeout 0.5``.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import anthropic
import jobkit
import llm
import openai
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse


class HedgeWithoutAbort:
    def __init__(self, store: jobkit.Store, timeout: float, abandon_after: float) -> None:
        self.store, self.timeout = store, timeout
        self.primary = openai.AsyncOpenAI(base_url=jobkit.openai_base_url(),
                                          api_key=jobkit.api_key("OPENAI_API_KEY"),
                                          timeout=abandon_after, max_retries=0)
        self.fallback = anthropic.AsyncAnthropic(base_url=jobkit.anthropic_base_url(),
                                                 api_key=jobkit.api_key("ANTHROPIC_API_KEY"),
                                                 timeout=abandon_after, max_retries=0)
        self.tasks: set[asyncio.Task[None]] = set()

    def start(self, job: dict[str, Any]) -> None:
        task = asyncio.get_running_loop().create_task(self.run(job))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def run(self, job: dict[str, Any]) -> None:
        prompt = job["text"]
        primary = asyncio.create_task(self.ask(job, "openai", prompt))
        done, _ = await asyncio.wait({primary}, timeout=self.timeout)
        if done and self.store.is_complete(job["id"]):
            return
        fallback = asyncio.create_task(self.ask(job, "anthropic", prompt))
        # THE BUG: the first answer is taken, and the other task is left running, unguarded
        await asyncio.wait({primary, fallback}, return_when=asyncio.FIRST_COMPLETED)
        await asyncio.gather(primary, fallback)

    async def ask(self, job: dict[str, Any], provider: str, prompt: str) -> None:
        attempt = self.store.start_attempt(job["id"], provider)
        messages: Any = [{"role": "user", "content": prompt}]
        try:
            if provider == "openai":
                reply = await self.primary.chat.completions.create(
                    model=jobkit.PRIMARY_MODEL, messages=messages)
                text = reply.choices[0].message.content or ""
            else:
                answer = await self.fallback.messages.create(
                    model=jobkit.FALLBACK_MODEL, max_tokens=512, messages=messages)
                text = "".join(getattr(block, "text", "") for block in answer.content)
        except Exception as exc:
            error = llm.classify(exc)
            state = "failed" if isinstance(error, llm.Failed) else "unknown"
            self.store.end_attempt(attempt, state, str(error))
            return
        self.store.write_result(attempt, text)  # no claim: THE BUG


def app_for(store: jobkit.Store, worker: HedgeWithoutAbort) -> FastAPI:
    app = FastAPI()

    def reply(answer: jobkit.Reply) -> JSONResponse:
        status, headers, body = answer
        return JSONResponse(body, status_code=status, headers=headers)

    @app.post("/jobs")
    async def create(request: Request) -> JSONResponse:
        try:
            body = await request.json()
        except ValueError:
            body = None
        return reply(jobkit.create(store, request.headers.get("x-owner"),
                                   request.headers.get("idempotency-key"), body, worker.start))

    @app.get("/{path:path}")
    async def read(path: str, request: Request) -> JSONResponse:
        return reply(jobkit.read(store, request.headers.get("x-owner"), "/" + path))

    return app


def main() -> None:
    args = jobkit.arguments(__doc__, abandon_after=(float, 0.0, "seconds before a provider "
                                                    "call is abandoned (default 3 x timeout)"))
    store = jobkit.store_of(args)
    worker = HedgeWithoutAbort(store, args.timeout, args.abandon_after or 3 * args.timeout)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(128)  # connections wait in the backlog until uvicorn accepts them
    print(f"listening on http://{args.host}:{sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app_for(store, worker), log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
