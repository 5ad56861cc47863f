"""The CI recipes ``export github-workflow`` and ``export gitlab-ci`` write: a run split over a
CI matrix of N shards (``--shard K/N``), each uploading its report folder, then one job that
downloads them, merges them (``failover-harness merge``: one report folder, and for ``certify``
one lock), gates, and publishes the JUnit and the HTML. docs/ci.md shows them for 4 shards of
``certify`` (tests/docs/test_ci_sharded.py holds the page equal to what this module writes, and
runs the steps)."""

from __future__ import annotations

import shlex

from harness.domain.errors import ConfigError

DEFAULT_RUN = "certify --adaptive"
MAX_SHARDS = 256  # GitHub's matrix takes at most 256 jobs; GitLab's parallel: at most 200

_GITHUB = """\
# .github/workflows/failover-sharded.yml: `failover-harness @RUN@` split over @N@ jobs
# (`failover-harness export github-workflow --shards @N@`; see docs/ci.md).
name: failover @JOB@ (@N@ shards)
on:
  schedule: [{cron: "17 3 * * *"}]      # every night
  workflow_dispatch: {}
jobs:
  shard:
    runs-on: ubuntu-latest
    strategy:
      fail-fast: false                  # every shard runs: the merge judges the whole
      matrix:
        shard: [@MATRIX@]
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with: {python-version: "3.11"}
      - run: pip install failover-harness
      - name: failover-harness @JOB@, shard ${{ matrix.shard }}/@N@
        run: >-
          failover-harness @RUN@ --shard ${{ matrix.shard }}/@N@
          --report-dir reports --no-progress
@ENV@      - name: Upload the shard's report folder
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: failover-shard-${{ matrix.shard }}
          path: reports/
  merge:
    needs: shard
    if: ${{ !cancelled() }}              # also when a shard found a problem: merge judges it
    runs-on: ubuntu-latest
@PERMISSIONS@    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with: {python-version: "3.11"}
      - run: pip install failover-harness
      - name: Download the shards' report folders
        uses: actions/download-artifact@v4
        with:
          pattern: failover-shard-*
          path: shards/                 # one folder per shard: shards/failover-shard-K/
      - name: Merge the shards
        run: failover-harness merge shards/* --report-dir reports --junit reports/junit.xml
@GATE@      - name: Summary
        if: always()
        run: cat reports/latest/summary.md >> "$GITHUB_STEP_SUMMARY"
      - name: Upload the merged report (index.html, results.json, junit.xml)
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: failover-report
          path: reports/
      - name: Publish junit.xml
        if: always()
        uses: mikepenz/action-junit-report@v4
        with:
          report_paths: reports/junit.xml
@COMMIT@"""

_GITHUB_ENV = """\
        env:
          OPENAI_API_KEY: ${{ secrets.OPENAI_API_KEY }}
          ANTHROPIC_API_KEY: ${{ secrets.ANTHROPIC_API_KEY }}
"""

_GITHUB_PERMISSIONS = """\
    permissions: {contents: write}      # to commit the merged lock
"""

_GITHUB_GATE = """\
      - name: Gate on the merged lock
        run: failover-harness gate --providers providers.yaml --report-dir reports/gate
"""

_GITHUB_COMMIT = """\
      - name: Commit the merged lock
        if: always()
        run: |
          git config user.name "failover-recertify" && git config user.email "ci@localhost"
          git add providers.lock.json && git commit -m "re-certification" && git push || true
"""

_GITLAB = """\
# .gitlab-ci.yml: `failover-harness @RUN@` split over @N@ jobs
# (`failover-harness export gitlab-ci --shards @N@`; see docs/ci.md).
stages: [shard, merge]

failover-shard:
  stage: shard
  image: python:3.11
  parallel: @N@                          # CI_NODE_INDEX / CI_NODE_TOTAL name the shard
  script:
    - pip install failover-harness
    - failover-harness @RUN@ --report-dir "reports/shard-$CI_NODE_INDEX" --no-progress
  allow_failure:
    exit_codes: [1, 3]                  # a problem found: the merge judges the whole
  artifacts:
    when: always
    paths: [reports/]

failover-merge:
  stage: merge
  image: python:3.11
  needs: [failover-shard]               # every shard's report folder, as artifacts
  when: always
  script:
    - pip install failover-harness
    - failover-harness merge reports/shard-* --report-dir merged --junit merged/junit.xml
@GATE@  artifacts:
    when: always
    paths: [merged/@LOCK@]
    reports:
      junit: merged/junit.xml
    expose_as: failover report
"""


def _check(shards: int, run: str) -> tuple[str, str]:
    """The run's words (``certify --adaptive``) and its command name, or a ConfigError."""
    if not 1 <= shards <= MAX_SHARDS:
        raise ConfigError(f"--shards {shards}: a matrix has 1 to {MAX_SHARDS} jobs",
                          field="--shards", fix="pass --shards N with N from 1 to 256")
    words = shlex.split(run)
    if not words or words[0] not in ("certify", "check", "scenarios", "explore", "drill"):
        raise ConfigError(f"--run {run!r}: not a command that splits into shards",
                          field="--run", fix="--run 'certify …', 'check …', 'scenarios run …', "
                                             "'explore …' or 'drill …'")
    if any(w == "--shard" or w.startswith("--shard=") or w == "--report-dir" for w in words):
        raise ConfigError(f"--run {run!r}: the recipe passes --shard and --report-dir itself",
                          field="--run", fix="leave --shard and --report-dir out of --run")
    return shlex.join(words), words[0]


def github_workflow(shards: int, run: str = DEFAULT_RUN) -> str:
    """The GitHub Actions workflow: a matrix of ``shards`` jobs running ``run``, then merge."""
    text, job = _check(shards, run)
    certify = job == "certify"
    return (_GITHUB.replace("@RUN@", text).replace("@JOB@", job).replace("@N@", str(shards))
            .replace("@MATRIX@", ", ".join(str(k) for k in range(1, shards + 1)))
            .replace("@ENV@", _GITHUB_ENV if certify else "")
            .replace("@PERMISSIONS@", _GITHUB_PERMISSIONS if certify else "")
            .replace("@GATE@", _GITHUB_GATE if certify else "")
            .replace("@COMMIT@", _GITHUB_COMMIT if certify else ""))


def gitlab_ci(shards: int, run: str = DEFAULT_RUN) -> str:
    """The GitLab CI file: ``parallel: shards`` jobs running ``run``, then a merge job."""
    text, job = _check(shards, run)
    certify = job == "certify"
    gate = ("    - failover-harness gate --providers providers.yaml --report-dir merged/gate\n"
            if certify else "")
    return (_GITLAB.replace("@RUN@", text).replace("@N@", str(shards))
            .replace("@GATE@", gate).replace("@LOCK@", ", providers.lock.json" if certify else ""))
