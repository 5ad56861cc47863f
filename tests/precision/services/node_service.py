"""Start one of the Node services of ``tests/precision/node/`` as the precision fleet starts
its Python ones: ``python -m tests.precision.services.node_service --script NAME --port 0
--tokens-file F [its own options…]``. The tokens file (``{token: owner}``, YAML) is handed to
Node as JSON in ``PRECISION_TOKENS``; the process is replaced by ``node`` (its stdout, where it
prints ``listening on <url>``, is this process's).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

import yaml

NODE_DIR = Path(__file__).resolve().parents[1] / "node"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--script", required=True, help="the service, a .js file in node/")
    parser.add_argument("--tokens-file", type=Path, default=None)
    args, rest = parser.parse_known_args()
    node = shutil.which("node")
    if node is None:
        sys.exit("node is not installed: the Node services need node 18 or later")
    tokens = {}
    if args.tokens_file is not None:
        raw = yaml.safe_load(args.tokens_file.read_text(encoding="utf-8")) or {}
        tokens = {str(token): str(owner) for token, owner in raw.items()}
    env = {**os.environ, "PRECISION_TOKENS": json.dumps(tokens)}
    script = NODE_DIR / args.script
    os.execve(node, [node, str(script), *rest], env)


if __name__ == "__main__":
    main()
