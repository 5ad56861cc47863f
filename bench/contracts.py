"""Contract verifier benchmark: concurrent certification, and the tokenization check's overhead.

    python -m bench.contracts [--delay-ms 200] [--samples 3] [--concurrency 64] [--repeat 2000]

1. A chain of a primary and three fallbacks, fake providers answering every call after a real
   ``--delay-ms`` (``slow:<ms>``, real time, not virtual), the shipped ticket_triage contract
   (20 golden inputs) × ``--samples``: the certify run's wall time beside the sum of every
   call's latency (what a sequential run would cost), same run. Goal: the three fallbacks'
   180 calls, 36 s sequential, certified in under 2 s.
2. The tokenization check for one provider (cl100k_base) beside raw ``tiktoken`` encoding of
   the same distinct texts it tokenizes (the rendered system and user prompts and the schema).
   Goal: <= 1.2x. Reported warm (prompts already rendered for the requests, as in a certify
   run) and cold (rendering included).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from harness.contracts import render as render_module
from harness.contracts.certifier import certify, plan
from harness.contracts.checks import tokenization_check
from harness.contracts.loader import load_contract
from harness.contracts.records import Redactor
from harness.contracts.render import render_golden
from harness.contracts.tokenizers import load_tokenizer
from harness.contracts.workspace import open_workspace
from harness.domain.fingerprint import canonical_json

ROOT = Path(__file__).resolve().parents[1]
CONTRACT_DIR = ROOT / "contracts" / "ticket_triage"


def _providers(delay_ms: int) -> dict:
    def fake(kind: str) -> dict:
        return {
            "kind": kind, "base_url": f"fake://slow:{delay_ms}", "model": f"bench-{kind}",
            "temperature": 0, "max_output_tokens": 512, "tokenizer": "tiktoken:cl100k_base",
            "context_window": 8192, "timeout": {"connect": 5, "read": 30},
        }

    providers = {
        "primary": fake("openai-chat"),
        "fallback-1": fake("anthropic-messages"),
        "fallback-2": fake("openai-chat"),
        "fallback-3": fake("anthropic-messages"),
    }
    return {
        "version": 1,
        "providers": providers,
        "chains": {"ticket_triage": [{"provider": p, "failover": "auto"} for p in providers]},
    }


def bench_certify(delay_ms: int, samples: int, concurrency: int, console: Console) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-contracts-") as tmp:
        root = Path(tmp)
        shutil.copytree(CONTRACT_DIR, root / "contracts" / "ticket_triage",
                        ignore=shutil.ignore_patterns("__pycache__"))
        contract_yaml = root / "contracts" / "ticket_triage" / "contract.yaml"
        text = contract_yaml.read_text(encoding="utf-8")
        contract_yaml.write_text(text.replace("samples: 3", f"samples: {samples}"), "utf-8")
        providers_path = root / "providers.yaml"
        providers_path.write_text(yaml.safe_dump(_providers(delay_ms)), encoding="utf-8")
        ws = open_workspace(providers_path)
        targets = plan(ws.providers, ws.contracts, providers_path=str(providers_path))
        goldens = len(ws.contracts["ticket_triage"].goldens)
        total = goldens * samples * len(targets)
        with Progress(TextColumn("certifying"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=console, transient=True) as progress:
            task = progress.add_task("calls", total=total)
            result = asyncio.run(certify(
                targets, concurrency=concurrency, virtual_time=False,
                on_progress=lambda n: progress.advance(task, n),
            ))
    verdicts = {r.provider: r.verdict for r in result.records}
    fallback_calls = goldens * samples * 3
    print(f"\n1. certification: 1 primary + 3 fallbacks x {goldens} golden inputs x {samples} "
          f"samples, fakes answering in {delay_ms} ms (real time), concurrency {concurrency}")
    floor = result.calls * delay_ms / 1000
    print(f"   calls                 {result.calls} (of which fallbacks: {fallback_calls}), each a "
          "job through the failover runner")
    print(f"   sequential sum        {result.sequential_s:8.2f} s   (measured latencies, added)")
    print(f"   sequential floor      {floor:8.2f} s   (calls x {delay_ms} ms; fallbacks alone "
          f"{fallback_calls * delay_ms / 1000:.2f} s)")
    print(f"   wall                  {result.wall_s:8.2f} s   (goal < 2 s)")
    print(f"   speed-up              {floor / result.wall_s:8.1f}x vs the floor, "
          f"{result.sequential_s / result.wall_s:.1f}x vs the measured sum")
    print(f"   verdicts              {verdicts}")


def _paired(base: Callable[[], object], other: Callable[[], object], rounds: int) -> tuple:
    """Median times of ``base`` and ``other`` and the median of their per-round ratios.

    Each round times both back to back (in alternating order), so a slow moment of a shared
    machine hits the pair, not one side: the ratio stays honest when the clock speed does not.
    """
    base_t, other_t, ratios = [], [], []
    for i in range(rounds):
        pair = (base, other) if i % 2 == 0 else (other, base)
        times = {}
        for fn in pair:
            start = time.perf_counter()
            fn()
            times[fn] = time.perf_counter() - start
        base_t.append(times[base])
        other_t.append(times[other])
        ratios.append(times[other] / times[base])
    return (
        statistics.median(base_t) * 1000,
        statistics.median(other_t) * 1000,
        statistics.median(ratios),
    )


def bench_tokenization(repeat: int) -> None:
    contract = load_contract(CONTRACT_DIR)
    tokenizer = load_tokenizer("tiktoken:cl100k_base")
    encoding = tokenizer.encoding  # type: ignore[attr-defined]
    texts: list[str] = []
    for golden in contract.goldens:
        rendered = render_golden(contract, golden)
        texts += [rendered.system, rendered.user]
    distinct = [*dict.fromkeys(texts), canonical_json(contract.schema).decode()]

    def body(system: str, user: str) -> dict:
        return {"messages": [{"role": "system", "content": system},
                             {"role": "user", "content": user}]}

    def raw() -> None:
        for text in distinct:
            encoding.encode(text)

    def check() -> None:
        tokenization_check(
            contract, tokenizer=tokenizer, context_window=8192, max_output_tokens=512,
            kind="openai-chat", build_body=body, redact=Redactor(),
        )

    def cold_check() -> None:
        render_module._rendered.clear()
        check()

    for fn in (raw, check, cold_check):  # warm up caches and the allocator
        fn()
    r, c, ratio = _paired(raw, check, repeat)
    _, k, cold_ratio = _paired(raw, cold_check, repeat)
    chars = sum(len(t) for t in distinct)
    print(f"\n2. tokenization check, {len(contract.goldens)} golden inputs, cl100k_base "
          f"({len(distinct)} distinct texts, {chars} characters), {repeat} paired rounds")
    print(f"   raw tiktoken encode   {r:8.3f} ms   (Encoding.encode of each distinct text)")
    print(f"   check (warm)          {c:8.3f} ms   ratio {ratio:5.2f}x   (goal <= 1.2x)")
    print(f"   check (cold, render)  {k:8.3f} ms   ratio {cold_ratio:5.2f}x   (renders too)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay-ms", type=int, default=200)
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    console = Console(stderr=True)
    bench_certify(args.delay_ms, args.samples, args.concurrency, console)
    bench_tokenization(args.repeat)


if __name__ == "__main__":
    main()
