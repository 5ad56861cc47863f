"""`--service-cmd` runs the service with the harness's own interpreter, whatever `python` the PATH
would find: a leading `python`/`python3`, or `{python}` anywhere."""

from __future__ import annotations

import sys

import pytest

from harness.domain.errors import ConfigError
from harness.explore.service import service_argv

PROXY = "redis://127.0.0.1:4242/0"


def test_a_leading_python_is_the_harness_interpreter() -> None:
    argv = service_argv("python examples/redis_lock_service.py --redis {proxy}", PROXY)
    assert argv == [sys.executable, "examples/redis_lock_service.py", "--redis", PROXY]
    assert service_argv("python3 app.py", PROXY)[0] == sys.executable


def test_the_python_placeholder_is_the_harness_interpreter() -> None:
    argv = service_argv("env FOO=1 {python} -m myservice --store {proxy}", PROXY)
    assert argv == ["env", "FOO=1", sys.executable, "-m", "myservice", "--store", PROXY]


def test_another_program_is_left_alone() -> None:
    assert service_argv("./run-service --redis {proxy}", PROXY) == ["./run-service", "--redis",
                                                                   PROXY]
    assert service_argv("python2.7 app.py", PROXY)[0] == "python2.7"


def test_an_unsplittable_command_names_the_option_and_the_fix() -> None:
    with pytest.raises(ConfigError) as caught:
        service_argv("python 'app.py", PROXY)
    assert "--service-cmd" in str(caught.value) and "balance its quotes" in str(caught.value)
