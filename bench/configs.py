"""Config reading benchmark: what every command pays before it starts its work.

    python -m bench.configs [--rounds 7] [--repeat 5]
    python -m bench.configs --smoke    (tiny sizes: CI checks that it runs; no ratio judged)

1. YAML: every shipped YAML file (scenarios, contracts, examples, ``providers.yaml``) read by
   ``harness.yamlsrc.compose_checked`` (libyaml's parser under the harness's composer, limits and
   constructor) beside the same with PyYAML's pure-Python loader alone; CPU seconds, rounds
   interleaved, the median of the per-round ratios. Goal: >= 3x faster.
2. Judging an answer: the key of the contract schema's validator, the C JSON encoder's sorted
   text (``harness.contracts.outputs._schema_key``) beside the schema's RFC 8785 form (what it
   was). Goal: >= 3x faster.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from harness import yamlsrc
from harness.contracts.loader import load_contracts
from harness.contracts.outputs import _schema_key
from harness.domain.fingerprint import canonical_json

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted([*ROOT.glob("scenarios/**/*.yaml"), *ROOT.glob("contracts/**/*.yaml"),
                *ROOT.glob("examples/**/*.yaml"), ROOT / "providers.yaml"])


def cpu(work: Callable[[], object], repeat: int) -> float:
    started = time.process_time()
    for _ in range(repeat):
        work()
    return time.process_time() - started


def read_all(texts: list[tuple[str, str]]) -> None:
    for source, text in texts:
        yamlsrc.compose_checked(text, source)


def python_only(texts: list[tuple[str, str]]) -> None:
    fast = yamlsrc._fast
    yamlsrc._fast = lambda text: False  # type: ignore[assignment]
    try:
        read_all(texts)
    finally:
        yamlsrc._fast = fast  # type: ignore[assignment]


def compare(name: str, ours: Callable[[], object], before: Callable[[], object], rounds: int,
            repeat: int, goal: float, smoke: bool) -> bool:
    ratios, times = [], []
    for _ in range(rounds):  # interleaved: the machine's pace moves both alike
        now, then = cpu(ours, repeat), cpu(before, repeat)
        times.append((now, then))
        ratios.append(then / now if now else float("inf"))
    ratio = statistics.median(ratios)
    now, then = (statistics.median(t[i] for t in times) / repeat for i in (0, 1))
    met = ratio >= goal
    verdict = "smoke: not judged" if smoke else ("met" if met else "MISSED")
    print(f"{name}: {now * 1e3:.2f} ms vs {then * 1e3:.2f} ms of CPU: {ratio:.1f}x "
          f"(goal >= {goal:g}x: {verdict})")
    return met or smoke


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args(argv)
    rounds, repeat = (1, 1) if args.smoke else (args.rounds, args.repeat)
    texts = [(str(path), path.read_text("utf-8")) for path in FILES]
    schema = next(iter(load_contracts(ROOT / "contracts").values())).schema
    ok = compare(f"YAML, {len(texts)} shipped files", lambda: read_all(texts),
                 lambda: python_only(texts), rounds, repeat, 3.0, args.smoke)
    ok &= compare("200 judged answers' validator keys",
                  lambda: [_schema_key(schema) for _ in range(200)],
                  lambda: [canonical_json(schema) for _ in range(200)], rounds, repeat,
                  3.0, args.smoke)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
