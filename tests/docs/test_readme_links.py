"""The README fits on a page, and what it quotes is real: every relative link (in the README and
in docs/) reaches a file of the tree (and a heading, for an anchor); every `failover-harness …`
command parses with the real argparse parser; every example script and extra it names exists.
Nothing links outside the repository."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest

from harness.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, ROOT / "examples" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text("utf-8"), flags=re.S)
    return {slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text("utf-8"), flags=re.S)
    return [m for m in LINK.findall(text) if not m.startswith(("http://", "https://", "mailto:"))]


def readme_blocks() -> list[str]:
    return re.findall(r"```[a-z]*\n(.*?)```", README.read_text("utf-8"), re.S)


def test_the_readme_fits_on_a_page() -> None:
    assert len(README.read_text("utf-8").splitlines()) <= 200


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_the_tree(page: Path) -> None:
    for link in links(page):
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.is_relative_to(ROOT), f"{page.name}: {link} leaves the repository"
        assert target.exists(), f"{page.relative_to(ROOT)}: {link} does not exist"
        if anchor and target.suffix == ".md":
            assert anchor in anchors(target), f"{page.relative_to(ROOT)}: no heading #{anchor}"


def test_nothing_points_outside_the_repository() -> None:
    for page in PAGES:
        assert "../shared" not in page.read_text("utf-8"), page


def readme_commands() -> list[list[str]]:
    """Each `failover-harness …` line of a fenced README block, as argv (comments dropped;
    output lines such as `replay: …` are not commands)."""
    found = []
    for block in readme_blocks():
        for line in block.splitlines():
            match = re.match(r"\s*(?:- run: )?(failover-harness [^#]*)", line)
            if match:
                found.append(shlex.split(match.group(1)))
    return found


def test_every_quoted_command_parses_with_the_real_parser() -> None:
    commands = readme_commands()
    assert len(commands) >= 5
    parser = build_parser()
    for argv in commands:
        try:
            args = parser.parse_args(argv[1:])
        except SystemExit:  # pragma: no cover - the message is on stderr
            pytest.fail(f"README command does not parse: {shlex.join(argv)}")
        assert getattr(args, "_run", None), shlex.join(argv)


def test_every_example_script_and_extra_it_names_exists() -> None:
    text = README.read_text("utf-8")
    scripts = set(re.findall(r"python (examples/[\w/]+\.py)", text))
    assert scripts, "the README starts an example service"
    for script in scripts:
        assert (ROOT / script).is_file(), script
    for path in re.findall(r"(examples/[\w/.-]+\.ya?ml)", text):
        assert (ROOT / path).is_file(), path
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"][
        "optional-dependencies"]
    for name in re.findall(r"failover-harness\[(\w+)\]", text):
        assert name in extras, f"README names the extra [{name}], which pyproject lacks"
    assert any(d.startswith("redis") for d in extras["explore"])  # the explore example's
