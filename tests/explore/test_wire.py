"""The protocol readers of the holding proxy: where Redis commands and replies end (RESP2 and
RESP3), how steps are cut and named, and PostgreSQL's messages, statements and startup."""

from __future__ import annotations

import struct

import pytest

from harness.explore import pg_wire, redis_wire
from harness.explore.through import elide


def resp(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def test_commands_are_read_whole_or_not_at_all() -> None:
    raw = resp(b"SET", b"idem:k:lock", b"1", b"NX", b"PX", b"30000")
    for cut in range(len(raw)):
        assert redis_wire.parse_command(raw[:cut]) is None
    command, end = redis_wire.parse_command(raw + b"rest") or (None, 0)
    assert command is not None and end == len(raw)
    assert command.shape() == "SET idem:k:lock NX"
    assert redis_wire.parse_command(b"PING\r\n") == (redis_wire.Command((b"PING",)), 6)


@pytest.mark.parametrize("garbage", [b"\x16\x03\x01\x00\xa5", b"\x00\x00\x00\x08\x04\xd2\x16/",
                                     b"*1\r\n:5\r\n"])
def test_bytes_that_are_not_redis_commands_are_refused(garbage: bytes) -> None:
    with pytest.raises(redis_wire.NotRedis):
        redis_wire.parse_command(garbage)


@pytest.mark.parametrize(("command", "shape"), [
    ((b"DEL", b"a", b"b"), "DEL a b"),
    ((b"MSET", b"a", b"1", b"b", b"2"), "MSET a b"),
    ((b"EVAL", b"return 1", b"2", b"k1", b"k2", b"arg"), "EVAL e0e1f9fa k1 k2"),
    ((b"EVALSHA", b"abcdef0123456789", b"1", b"k1"), "EVALSHA abcdef012345 k1"),
    ((b"get", b"x"), "GET x"),
    ((b"PING",), "PING"),
])
def test_shapes_name_the_command_and_its_keys_never_values(command: tuple[bytes, ...],
                                                           shape: str) -> None:
    assert redis_wire.Command(command).shape() == shape


@pytest.mark.parametrize("reply", [
    b"+OK\r\n", b"-ERR no\r\n", b":42\r\n", b"$-1\r\n", b"$3\r\nabc\r\n", b"*-1\r\n", b"*0\r\n",
    b"*2\r\n$1\r\na\r\n*1\r\n:1\r\n", b"_\r\n", b",3.14\r\n", b"#t\r\n", b"(123456789\r\n",
    b"!5\r\nERR x\r\n", b"=7\r\ntxt:abc\r\n", b"%1\r\n+k\r\n:1\r\n", b"~2\r\n:1\r\n:2\r\n",
    b"|1\r\n+ttl\r\n:3\r\n+OK\r\n",  # an attribute, then the reply it annotates
])
def test_every_resp2_and_resp3_reply_type_ends_where_it_should(reply: bytes) -> None:
    for cut in range(len(reply)):
        assert redis_wire.reply_end(reply[:cut]) is None
    assert redis_wire.reply_end(reply + b"+NEXT\r\n") == (len(reply), False)


def test_a_push_is_out_of_band() -> None:
    push = b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"
    assert redis_wire.reply_end(push) == (len(push), True)


def test_a_transaction_is_one_step_at_its_exec() -> None:
    framer = redis_wire.RedisFramer()
    multi = [redis_wire.Command((b"MULTI",)), redis_wire.Command((b"SET", b"a", b"1"))]
    assert framer.step(multi) == (None, 2)  # queued: nothing happens until EXEC
    assert framer.step([redis_wire.Command((b"SET", b"b", b"2")),
                        redis_wire.Command((b"EXEC",))]) == ("MULTI[SET a, SET b]", 2)
    pipeline = [redis_wire.Command((b"GET", b"a")), redis_wire.Command((b"CLIENT", b"SETNAME")),
                redis_wire.Command((b"GET", b"b"))]
    assert framer.step(pipeline) == ("GET a + GET b", 3)
    assert framer.step([redis_wire.Command((b"HELLO", b"3"))]) == (None, 1)


def pg_message(kind: bytes, payload: bytes) -> bytes:
    return kind + struct.pack("!i", len(payload) + 4) + payload


def test_an_extended_query_is_one_step_up_to_its_sync() -> None:
    parse = pg_message(b"P", b"\0SELECT body FROM r WHERE key = $1 AND n > 10\0\0\0")
    bind = pg_message(b"B", b"\0\0" + b"\0" * 6)
    execute = pg_message(b"E", b"\0\0\0\0\0")
    sync = pg_message(b"S", b"")
    framer = pg_wire.PgFramer()
    raw = parse + bind + execute
    assert framer.cut(raw) == ([], 0)  # its Sync is still on the way
    steps, used = framer.cut(raw + sync + b"P")
    assert used == len(raw + sync)
    assert steps == [pg_wire.PgStep(raw + sync, "SELECT body FROM r WHERE key = $1 AND n > ?", 1)]
    begin = pg_message(b"Q", b"BEGIN ISOLATION LEVEL SERIALIZABLE\0")
    commit = pg_message(b"Q", b"COMMIT\0")
    steps, _ = framer.cut(begin + commit)
    assert [(s.shape, s.answers) for s in steps] == [(None, 1), ("COMMIT", 1)]


def test_a_prepared_statement_is_named_by_its_text_when_it_runs_again() -> None:
    framer = pg_wire.PgFramer()
    framer.cut(pg_message(b"P", b"_pg3_0\0INSERT INTO t VALUES ($1)\0\0\0")
               + pg_message(b"S", b""))
    bind = pg_message(b"B", b"\0_pg3_0\0" + b"\0" * 6)
    steps, _ = framer.cut(bind + pg_message(b"E", b"\0\0\0\0\0") + pg_message(b"S", b""))
    assert steps[0].shape == "INSERT INTO t VALUES ($1)"


@pytest.mark.parametrize(("sql", "shape"), [
    ("SELECT * FROM t WHERE k = 'alice''s key' AND n = 42;",
     "SELECT * FROM t WHERE k = ? AND n = ?"),
    ("insert  into t1\n values (E'x', -3.5e2)", "insert into t1 values (?, ?)"),
])
def test_statement_shapes_elide_literals(sql: str, shape: str) -> None:
    assert pg_wire.statement_shape(sql) == shape


def test_housekeeping_statements_are_control() -> None:
    assert pg_wire.is_control("BEGIN; SET LOCAL lock_timeout = 0")
    assert pg_wire.is_control("")
    assert not pg_wire.is_control("BEGIN; INSERT INTO t VALUES (1)")
    assert not pg_wire.is_control("COMMIT")


def test_startup_tells_postgres_from_anything_else() -> None:
    assert pg_wire.startup(struct.pack("!ii", 8, pg_wire.SSL_REQUEST)) == (8, pg_wire.SSL_REQUEST)
    assert pg_wire.startup(b"\x00\x00") is None
    with pytest.raises(pg_wire.NotPostgres):
        pg_wire.startup(b"*1\r\n$4\r\nPING\r\n")


def test_shapes_read_the_same_in_every_schedule() -> None:
    assert elide("GET idem:alice:1f2e3d4c.17-k1:resp", "1f2e3d4c.17") == "GET idem:alice:*-k1:resp"
    assert elide("GET job:9f86d081884c7d659a2feaa0c55ad015", "t") == "GET job:*"
    assert elide("DEL lock:k1", "t0") == "DEL lock:k1"


def test_the_public_surface_is_its_sorted_all() -> None:
    import harness.explore as explore

    assert explore.__all__ == sorted(explore.__all__, key=lambda n: (not n.isupper(), n))
    assert all(hasattr(explore, name) for name in explore.__all__)
