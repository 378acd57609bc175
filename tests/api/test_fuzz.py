"""Fuzzing: Schemathesis sends generated requests, valid and invalid, to every operation of a live server.

Bounded (a fixed number of examples per operation), seeded (derandomised, so a
failure reproduces) and sent to SQLite and to PostgreSQL with two workers.  Every
answer must be below 500, carry a documented status code and content type, and
match the documented schema.  Requests go to a real ladder with real players
(``fuzz``), with the server admin key, so they reach the code behind the checks.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

from app.core.config import Settings
from app.core.migrate import upgrade
from devtools.server import ADMIN_KEY, live_server

EXAMPLES = 25
PLAYERS = ["ann", "bob", "cy", "dee"]
KINDS = ["sqlite", "postgresql"]
_names = itertools.count()


@contextmanager
def _fuzz_server(request, tmp_path_factory, kind: str) -> Iterator[str]:
    """A live server over a fresh database of ``kind``, with the ``fuzz`` ladder and its players."""
    if kind == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'melo.db'}"
    else:
        server = request.getfixturevalue("postgres")
        name = f"melo_fuzz_{next(_names)}"
        url = server.create_database(name)
    upgrade(Settings(database_url=url).sqlalchemy_url)
    with live_server(url, workers=2 if kind == "postgresql" else 1) as base:
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        with httpx.Client(base_url=base, headers=admin) as http:
            assert http.post("/v1/ladders", json={"slug": "fuzz", "k": 2}).status_code == 201
            for a, b in itertools.combinations(PLAYERS, 2):
                game = {"sides": [{"players": [a], "rank": 1}, {"players": [b], "rank": 2}]}
                assert http.post("/v1/ladders/fuzz/games", json=game).status_code == 201
        yield base


@pytest.fixture(scope="module")
def fuzz_servers(request, tmp_path_factory) -> Iterator[dict[str, str]]:
    """A server of each kind, both up for the module: the schema-driven fuzzing sends each generated request to
    both (generating them took most of its time, twice when each kind had a test of its own)."""
    with ExitStack() as stack:
        yield {kind: stack.enter_context(_fuzz_server(request, tmp_path_factory, kind)) for kind in KINDS}


@pytest.fixture(params=KINDS)
def fuzz_server(request, fuzz_servers) -> str:
    return fuzz_servers[request.param]


def test_no_input_gets_a_server_error_or_an_undocumented_answer(fuzz_servers):
    schema = schemathesis.openapi.from_url(fuzz_servers["sqlite"] + "/openapi.json")
    checks = [
        not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_schema_conformance,
        unsupported_method,
    ]
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    ran = dict.fromkeys(fuzz_servers, 0)
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.path.endswith("/events"):  # a stream stays open; test_events tries its inputs
            continue

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))  # fmt: skip
        def fuzz(case):
            # Most generated slugs and keys name nothing (404): half of the cases go to the real ladder and players.
            if "slug" in (case.path_parameters or {}) and zlib.crc32(repr(case.body).encode()) % 2 == 0:
                case.path_parameters["slug"] = "fuzz"
                if "key" in case.path_parameters:
                    case.path_parameters["key"] = PLAYERS[len(repr(case.query)) % len(PLAYERS)]
            # The same request to each server, in the same order: each sees what a run of its own would send it.
            for kind, base in fuzz_servers.items():
                try:
                    case.call_and_validate(base_url=base, headers=headers, checks=checks, timeout=60)
                except Exception as error:
                    error.add_note(f"on {kind}")
                    raise
                ran[kind] += 1

        fuzz()
    print(f"generated requests: {ran}")
    assert all(n > 500 for n in ran.values()), ran


# Latin-1 text (what an HTTP header carries) leaning toward digits, Unicode's other digits ("²", "١") among them,
# and strings of nothing but digits, ASCII or superscript (each a whole number to str.isdigit, not to int()).
_DIGITY = st.text(st.sampled_from("0123456789²³¹"), min_size=1, max_size=25) | st.text(
    st.sampled_from("0123456789²³¹١٢۳߀௧ -+.eE_") | st.characters(max_codepoint=255), max_size=30
)


def _public_ladder(base: str, slug: str) -> None:
    """A public ladder with a game (the schema-driven fuzzing may have made ``fuzz`` private)."""
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    made = httpx.post(base + "/v1/ladders", json={"slug": slug, "k": 1}, headers=admin)
    assert made.status_code in (201, 409), made.text
    game = {"sides": [{"players": [PLAYERS[0]], "rank": 1}, {"players": [PLAYERS[1]], "rank": 2}]}
    assert httpx.post(base + f"/v1/ladders/{slug}/games", json=game, headers=admin).status_code == 201


def test_no_last_event_id_gets_a_server_error(fuzz_server):
    """The stream's resume header, which the schema-driven fuzzing above leaves out (a stream stays open): a 200
    stream or a 422, whatever the header holds, before any key is checked (a 500 before: ``"²".isdigit()``)."""
    _public_ladder(fuzz_server, "fuzz-stream")

    @given(value=_DIGITY | st.integers(min_value=-(2**70), max_value=2**70).map(str))
    @settings(max_examples=100, derandomize=True, deadline=None, database=None)
    def fuzz(value):
        try:
            header = value.encode("latin-1")
        except UnicodeEncodeError:
            header = value.encode()
        with httpx.Client(timeout=30) as client:
            url = fuzz_server + "/v1/ladders/fuzz-stream/events"
            request = client.build_request("GET", url, headers={"Last-Event-ID": header})
            try:
                response = client.send(request, stream=True)
            except httpx.LocalProtocolError:  # not a header value at all (a line break): no request
                return
            try:
                # 400: the HTTP server's own answer to a header that no HTTP request may hold (a control character)
                assert response.status_code in (200, 400, 422), (value, response.status_code)
            finally:
                response.close()

    fuzz()


def test_no_as_of_gets_a_server_error(fuzz_server):
    """``as_of`` on the table and a profile: a date in ISO 8601 or a 422 naming it (a number is not a Unix time)."""
    _public_ladder(fuzz_server, "fuzz-past")

    @given(value=_DIGITY | st.datetimes().map(datetime.isoformat) | st.integers().map(str))
    @settings(max_examples=100, derandomize=True, deadline=None, database=None)
    def fuzz(value):
        for path in ("leaderboard", f"players/{PLAYERS[0]}"):
            response = httpx.get(fuzz_server + f"/v1/ladders/fuzz-past/{path}", params={"as_of": value}, timeout=60)
            assert response.status_code in (200, 404, 422), (value, response.status_code, response.text)
            if response.status_code == 422:
                assert response.json()["errors"][0]["field"] == "query.as_of"
            elif value.lstrip("-+").replace(".", "", 1).isdigit():
                raise AssertionError(f"{value!r}, a number, was taken as a date")

    fuzz()
