"""Shards: K/N as people write it, the CI systems' indexes, two stable splits, and the stamp a
merge compares."""

from __future__ import annotations

import pytest

from harness.domain.shard import Shard, ShardError, ShardStamp, missing, shard_from_env


def test_parse_reads_k_of_n() -> None:
    assert Shard.parse("2/3") == Shard(2, 3)
    assert Shard.parse(" 1 / 1 ") == Shard.ALL
    assert str(Shard.parse("7/7")) == "7/7"
    assert Shard.ALL.whole and not Shard(1, 2).whole


@pytest.mark.parametrize("text", ["4/3", "0/3", "0/0"])
def test_parse_refuses_an_index_outside_the_total(text: str) -> None:
    with pytest.raises(ShardError) as caught:
        Shard.parse(text)
    assert caught.value.message == f"--shard: expected K/N with 1 ≤ K ≤ N, got '{text}'"
    assert caught.value.exit_code == 2


@pytest.mark.parametrize("text", ["", "2", "2/", "a/b", "-1/3", "1/3/4", "1.5/3"])
def test_parse_refuses_what_is_not_k_of_n(text: str) -> None:
    with pytest.raises(ShardError, match=r"--shard: expected K/N .*for example 2/3.*got"):
        Shard.parse(text)


@pytest.mark.parametrize("total", [1, 2, 3, 7])
def test_round_robin_gives_each_position_to_exactly_one_shard(total: int) -> None:
    shards = [Shard(k, total) for k in range(1, total + 1)]
    for position in range(50):
        owners = [s for s in shards if s.owns(position)]
        assert owners == [Shard(position % total + 1, total)]


def test_round_robin_is_fixed_not_hashed() -> None:
    # the published split: a change here re-deals every user's matrix
    assert [p for p in range(10) if Shard(2, 3).owns(p)] == [1, 4, 7]
    assert all(Shard.ALL.owns(p) for p in range(10))


@pytest.mark.parametrize("total", [1, 2, 3, 7])
@pytest.mark.parametrize("items", [0, 1, 5, 6, 100])
def test_ranges_cover_the_items_in_order_once(total: int, items: int) -> None:
    ranges = [Shard(k, total).range(items) for k in range(1, total + 1)]
    assert [i for r in ranges for i in r] == list(range(items))
    lengths = [len(r) for r in ranges]
    assert max(lengths) - min(lengths) <= 1


def test_range_of_the_whole_run_is_everything() -> None:
    assert Shard.ALL.range(12) == range(12)
    assert Shard(2, 3).range(10) == range(3, 6)


def test_gitlab_index_is_one_based() -> None:
    assert shard_from_env({"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "3"}) == Shard(1, 3)
    assert shard_from_env({"CI_NODE_INDEX": "3", "CI_NODE_TOTAL": "3"}) == Shard(3, 3)


def test_a_gitlab_job_that_is_not_parallel_is_the_whole_run() -> None:
    # GitLab sets CI_NODE_TOTAL=1 on every job without `parallel:`, and no CI_NODE_INDEX
    assert shard_from_env({"GITLAB_CI": "true", "CI_NODE_TOTAL": "1",
                           "CI_JOB_NAME": "failover"}) is None


def test_a_gitlab_parallel_job_is_told_apart_from_a_matrix_job_by_its_name() -> None:
    shard = {"CI_NODE_INDEX": "2", "CI_NODE_TOTAL": "4"}
    assert shard_from_env({**shard, "CI_JOB_NAME": "failover-shard 2/4"}) == Shard(2, 4)
    # parallel: matrix: sets both too; its jobs are named after the matrix's values
    assert shard_from_env({**shard, "CI_JOB_NAME": "failover: [openai, gpt-4o]"}) is None


def test_buildkite_index_is_zero_based() -> None:
    env = {"BUILDKITE_PARALLEL_JOB": "0", "BUILDKITE_PARALLEL_JOB_COUNT": "4"}
    assert shard_from_env(env) == Shard(1, 4)
    env = {"BUILDKITE_PARALLEL_JOB": "3", "BUILDKITE_PARALLEL_JOB_COUNT": "4"}
    assert shard_from_env(env) == Shard(4, 4)


def test_no_ci_index_is_no_shard() -> None:
    assert shard_from_env({}) is None
    assert shard_from_env({"GITHUB_ACTIONS": "true", "CI": "true"}) is None


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"CI_NODE_INDEX": "4", "CI_NODE_TOTAL": "3"}, "CI_NODE_INDEX/CI_NODE_TOTAL"),
        ({"CI_NODE_INDEX": "0", "CI_NODE_TOTAL": "3"}, "CI_NODE_INDEX/CI_NODE_TOTAL"),
        ({"CI_NODE_TOTAL": "3"}, "CI_NODE_INDEX/CI_NODE_TOTAL"),
        ({"BUILDKITE_PARALLEL_JOB": "4", "BUILDKITE_PARALLEL_JOB_COUNT": "4"},
         "BUILDKITE_PARALLEL_JOB/BUILDKITE_PARALLEL_JOB_COUNT"),
        ({"BUILDKITE_PARALLEL_JOB": "x", "BUILDKITE_PARALLEL_JOB_COUNT": "4"},
         "BUILDKITE_PARALLEL_JOB/BUILDKITE_PARALLEL_JOB_COUNT"),
    ],
)
def test_a_wrong_ci_index_is_an_error_naming_the_variables(
    env: dict[str, str], named: str
) -> None:
    with pytest.raises(ShardError, match=named):
        shard_from_env(env)


def _stamp(shard: Shard, **inputs: str) -> ShardStamp:
    return ShardStamp.of(shard, "check", {"harness": "1.0", "settings": "{}", **inputs})


def test_stamps_of_one_run_have_one_digest() -> None:
    one, two = _stamp(Shard(1, 2), config="a"), _stamp(Shard(2, 2), config="a")
    assert one.run_digest == two.run_digest
    assert one.differences(two) == []


def test_stamps_name_what_differs() -> None:
    one = _stamp(Shard(1, 2), config="a")
    assert one.differences(_stamp(Shard(2, 2), config="b")) == ["config"]
    assert one.differences(_stamp(Shard(2, 3), config="a")) == ["shard total"]
    other_job = ShardStamp.of(Shard(2, 2), "explore", {"harness": "1.0", "settings": "{}",
                                                       "config": "a"})
    assert one.differences(other_job) == ["job"]
    assert one.run_digest != _stamp(Shard(1, 2), config="b").run_digest


def test_a_stamp_reads_back_what_it_wrote() -> None:
    stamp = _stamp(Shard(3, 7), config="a")
    assert ShardStamp.from_json(stamp.to_json(), where="x") == stamp
    with pytest.raises(ShardError, match=r"results\.json: 'shard' is not a shard stamp"):
        ShardStamp.from_json({"index": 1}, where="results.json")


def test_missing_names_the_absent_indexes() -> None:
    assert missing([Shard(1, 4), Shard(3, 4)], 4) == [2, 4]
    assert missing([Shard.ALL], 1) == []
