"""Outgoing webhooks against a real local receiver: signed deliveries from the event log, retries, failing
receivers that slow nothing, URL checks, deletion, and restarts and several servers that deliver each event once."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import socket
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.core.config import Settings
from app.main import create_app
from devtools.receiver import Receiver, receiver
from devtools.server import ADMIN_KEY
from tests.api.helpers import add_webhook, deliveries, post_game, settings_for, settled, until
from tests.conftest import admin, bearer, make_ladder


@pytest.fixture
def settings(database_url) -> Settings:
    return settings_for(database_url)


@pytest.fixture
def hook() -> Iterator[Receiver]:
    with receiver() as r:
        yield r


def verified(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """What a receiver does: recompute ``Melo-Signature`` from the raw body and compare in constant time."""
    parts = dict(part.split("=", 1) for part in headers["Melo-Signature"].split(","))
    expected = hmac.new(secret.encode(), parts["t"].encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, parts["v1"]) and abs(time.time() - int(parts["t"])) < 300


def test_a_game_posted_arrives_once_signed_with_the_event_as_the_stream_carries_it(client, hook):
    make_ladder(client, auto_create_players=True, name="Office pong")
    made = add_webhook(client, hook.url, ["game", "season"])
    assert made["secret"] and made["events"] == ["game", "season"] and made["failing"] is False
    client.post("/v1/ladders/test/players", json={"key": "cy"}, headers=admin())  # not an event it takes
    posted = post_game(client, "ada", "bob")
    [got] = hook.wait_for(1)
    assert got.headers["Content-Type"] == "application/json" and got.headers["User-Agent"].startswith("melo")
    assert verified(made["secret"], got.headers, got.body)
    assert not verified("another secret", got.headers, got.body)
    body = json.loads(got.body)
    assert body["event"] == "game" and body["ladder"] == "test" and body["ladder_name"] == "Office pong"
    assert body["data"]["game"] == client.get(f"/v1/ladders/test/games/{posted['id']}").json()
    assert body["data"]["version"] >= 1 and body["event_id"] >= 1
    ada = posted["sides"][0]["players"][0]
    assert body["text"].startswith("ada beat bob")
    assert body["text"].endswith(f"(ada {ada['elo_before']:.0f} → {ada['elo_after']:.0f})")
    # a season closed: its podium
    assert client.post("/v1/ladders/test/seasons", json={"name": "Spring"}, headers=admin()).status_code == 201
    season = json.loads(hook.wait_for(2)[1].body)
    assert season["event"] == "season" and [p["key"] for p in season["podium"]] == ["ada", "bob"]
    assert season["text"].startswith("Season Spring closed: champion ada")
    # the list shows no secret; the log shows both, newest first
    [listed] = client.get("/v1/ladders/test/webhooks", headers=admin()).json()["items"]
    assert "secret" not in listed and listed["failing"] is False
    log = settled(client, made["id"], 2)
    assert [(d["event"], d["status"], d["attempts"], d["response_code"]) for d in log] == [
        ("season", "delivered", 1, 200),
        ("game", "delivered", 1, 200),
    ]
    assert hook.quiet(0.3) == 2


def test_a_matchs_text_gives_each_games_points_the_winners_first(client, hook):
    key = make_ladder(client, auto_create_players=True, play={"best_of": 3})
    add_webhook(client, hook.url, ["game"])
    match = {"sides": [{"players": ["bob"]}, {"players": ["ada"]}], "match": [[15, 21], [21, 18], [10, 21]]}
    posted = client.post("/v1/ladders/test/games", json=match, headers=bearer(key))
    assert posted.status_code == 201, posted.text
    [got] = hook.wait_for(1)
    ada = next(p for side in posted.json()["sides"] for p in side["players"] if p["key"] == "ada")
    assert json.loads(got.body)["text"] == (
        f"ada beat bob 2-1 (21-15, 18-21, 21-10) (ada {ada['elo_before']:.0f} → {ada['elo_after']:.0f})"
    )


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the database does not matter here
def test_a_receiver_answering_500_gets_it_again_and_it_is_delivered_once(client, hook):
    make_ladder(client, auto_create_players=True)
    made = add_webhook(client, hook.url, ["game"])
    hook.answers = [500]
    post_game(client, "ada", "bob")
    first, second = hook.wait_for(2)
    assert first.body == second.body  # the same body byte for byte, signed anew
    [delivery] = until(lambda: [d for d in deliveries(client, made["id"]) if d["status"] == "delivered"])
    assert delivery["attempts"] == 2 and delivery["response_code"] == 200
    assert hook.quiet(0.3) == 2


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the database does not matter here
def test_a_hanging_receiver_is_retried_then_failing_and_posts_stay_fast_meanwhile(client, hook):
    make_ladder(client, auto_create_players=True)
    made = add_webhook(client, hook.url, ["game"])
    other = add_webhook(client, hook.url.replace("/hook", "/other"), ["game"])
    hook.otherwise = ("hang", 3.0)
    post_game(client, "ada", "bob")
    hook.wait_for(1)
    for _ in range(3):  # the receivers hang: posts are answered as fast as ever
        started = time.perf_counter()
        post_game(client, "cy", "dee")
        assert time.perf_counter() - started < 1.0
    listed = until(lambda: [h for h in client.get("/v1/ladders/test/webhooks", headers=admin()).json()["items"]
                            if h["id"] == made["id"] and h["failing"]])  # fmt: skip
    assert listed
    failed = deliveries(client, made["id"])[-1]
    assert failed["status"] == "failed" and failed["attempts"] == 3 and "no answer within" in failed["error"]
    # a receiver back to health: the webhook's next deliveries go through, and it is failing no more
    hook.otherwise = 200
    until(lambda: all(d["status"] == "delivered" for d in deliveries(client, made["id"])[:1]), 20)
    until(lambda: not client.get("/v1/ladders/test/webhooks", headers=admin()).json()["items"][0]["failing"], 20)
    assert deliveries(client, other["id"])  # the other webhook was served all along


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the database does not matter here
def test_a_deleted_webhook_gets_nothing_more(client, hook):
    make_ladder(client, auto_create_players=True)
    gone = add_webhook(client, hook.url.replace("/hook", "/gone"), ["game"])
    kept = add_webhook(client, hook.url, ["game"])
    r = client.delete(f"/v1/ladders/test/webhooks/{gone['id']}", headers=admin())
    assert r.status_code == 200 and r.json()["id"] == gone["id"]
    assert client.delete(f"/v1/ladders/test/webhooks/{gone['id']}", headers=admin()).status_code == 404
    assert client.get(f"/v1/ladders/test/webhooks/{gone['id']}/deliveries", headers=admin()).status_code == 404
    post_game(client, "ada", "bob")
    post_game(client, "bob", "ada")
    hook.wait_for(2)
    assert hook.quiet(0.3) == 2 and {g.path for g in hook.got} == {"/hook"}
    assert len(deliveries(client, kept["id"])) == 2


def test_a_restart_resumes_from_the_cursor_and_two_servers_deliver_each_event_once(database_url, hook):
    with TestClient(create_app(settings_for(database_url, webhooks_retry_seconds=0.5))) as first:
        make_ladder(first, auto_create_players=True)
        add_webhook(first, hook.url, ["game"])
        post_game(first, "ada", "bob")
        post_game(first, "bob", "ada")
        hook.wait_for(2)
        hook.answers = [500]
        post_game(first, "ada", "cy")
        hook.wait_for(3)  # refused once; the server stops before its retry
    with (
        TestClient(create_app(settings_for(database_url))) as second,
        TestClient(create_app(settings_for(database_url))) as third,
    ):
        for n in range(6):  # two servers on one database, both sending
            post_game(second if n % 2 else third, "dee", "ada")
        hook.wait_for(10)
        assert hook.quiet(0.5) == 10
    numbers = [json.loads(g.body)["event_id"] for g in hook.got]
    delivered = numbers[:2] + numbers[3:]
    assert len(set(delivered)) == 9 and numbers[2] == numbers[3]  # each once; the refused one again after the restart
    assert delivered == sorted(delivered)  # in the log's order


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the database does not matter here
def test_the_weekly_digest_counts_the_games_and_names_the_top_and_the_biggest_mover(database_url, hook):
    with TestClient(create_app(settings_for(database_url, webhooks_digest_hours=2 / 3600))) as client:
        make_ladder(client, auto_create_players=True, name="Office pong")
        post_game(client, "ada", "bob")
        add_webhook(client, hook.url, ["digest"])
        post_game(client, "ada", "bob")
        post_game(client, "cy", "bob")
        digest = json.loads(hook.wait_for(1)[0].body)
    assert digest["event"] == "digest" and digest["event_id"] is None
    assert digest["data"]["games"] == 2 and {p["key"] for p in digest["data"]["top"]} == {"ada", "bob", "cy"}
    assert digest["data"]["mover"]["key"] == "bob" and digest["data"]["mover"]["elo_change"] < 0
    assert digest["text"].startswith("This week on Office pong: 2 games; top 3: ")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the database does not matter here
def test_urls_must_be_https_to_public_addresses_unless_the_server_allows_private_ones(database_url):
    with TestClient(create_app(Settings(database_url=database_url, admin_key=ADMIN_KEY))) as client:
        make_ladder(client)
        writer = {"name": "desk", "role": "write"}
        key = client.post("/v1/ladders/test/keys", json=writer, headers=admin()).json()["key"]
        refused = {
            "http://93.184.216.34/hook": "https://",
            "https://127.0.0.1/hook": "loopback",
            "https://10.1.2.3/hook": "private",
            "https://169.254.169.254/latest": "link-local",
            "https://[::1]/hook": "loopback",
            "https://[::ffff:192.168.0.1]/hook": "private",
            "https://224.0.0.1/hook": "multicast",
            "https://localhost/hook": "could not be resolved to addresses of the public internet only",  # not which
            "https://[fec0::1]/hook": "site-local",
            "https://[2002:a00:1::]/hook": "carries 10.0.0.1",  # 6to4
            "https://93.184.216.34:0/hook": "port 0",
            "https://93.184.216.34/caf\u00e9?q=\u00e9": "ASCII",  # http.client could not send it
            "https://user:pw@93.184.216.34/": "password",
            "ftp://93.184.216.34/": "https://",
            "https:///nohost": "host",
        }
        for url, why in refused.items():
            r = client.post("/v1/ladders/test/webhooks", json={"url": url, "events": ["game"]}, headers=admin())
            assert r.status_code == 422, (url, r.text)
            assert r.headers["content-type"] == "application/problem+json" and why in r.json()["detail"], url
            assert r.json()["errors"][0]["field"] == "url"
            assert "localhost" not in url or "127.0.0.1" not in r.json()["detail"]  # a name: not what it resolves to
        made = {"url": "https://93.184.216.34/hook", "events": ["game"]}
        assert client.post("/v1/ladders/test/webhooks", json=made, headers=admin()).status_code == 201
        assert client.post("/v1/ladders/test/webhooks", json=made, headers=bearer(key)).status_code == 403
        assert client.post("/v1/ladders/test/webhooks", json=made).status_code == 401
        assert client.get("/v1/ladders/test/webhooks").status_code == 401
        for bad in ({"url": made["url"], "events": []}, {"url": made["url"], "events": ["games"]},
                    {"url": made["url"], "events": ["game", "game"]}, {"url": "x" * 3000, "events": ["game"]},
                    {"url": made["url"], "events": ["game"], "secret": "mine"}):  # fmt: skip
            assert client.post("/v1/ladders/test/webhooks", json=bad, headers=admin()).status_code == 422, bad
        assert client.get("/v1/ladders/test/webhooks/999/deliveries", headers=admin()).status_code == 404
        assert client.get("/v1/ladders/nope/webhooks", headers=admin()).status_code == 404


def test_challenges_and_moments_arrive_in_words_with_the_data_the_api_shows(client, hook):
    make_ladder(client, auto_create_players=True)
    made = add_webhook(client, hook.url, ["challenge", "moment"])
    post_game(client, "ada", "bob")  # ada's first win: a moment, not a game delivery
    moment = json.loads(hook.wait_for(1)[0].body)
    assert moment["event"] == "moment" and moment["text"] == moment["data"]["moment"]["text"]
    [shown] = client.get("/v1/ladders/test/moments").json()["items"]
    assert moment["data"]["moment"] == shown and shown["kind"] == "first_win"
    body = {"from": "bob", "to": "ada", "message": "rematch?"}
    challenge = client.post("/v1/ladders/test/challenges", json=body, headers=admin()).json()
    told = json.loads(hook.wait_for(2)[1].body)
    assert told["event"] == "challenge" and told["text"] == "bob challenged ada: rematch?"
    assert told["data"]["action"] == "created" and told["data"]["challenge"]["id"] == challenge["id"]
    assert verified(made["secret"], hook.wait_for(2)[1].headers, hook.wait_for(2)[1].body)
    client.post(f"/v1/ladders/test/challenges/{challenge['id']}/decline", headers=admin())
    assert json.loads(hook.wait_for(3)[2].body)["text"] == "ada declined bob's challenge"
    assert hook.quiet(0.3) == 3


#: The IANA special-purpose address registries (IPv4 and IPv6, as of 2025), with IPv4 multicast and 240/4: no
#: webhook may reach them, whatever the registry says of an anycast relay's global reachability, and whatever the
#: Python version (3.11's ``ipaddress`` takes 192.0.0.8 and 192.31.196.1 for global).
SPECIAL = [
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
    "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24", "192.88.99.0/24", "192.168.0.0/16", "192.175.48.0/24",
    "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
    "::/128", "::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32",
    "2620:4f:8000::/48", "3fff::/20", "5f00::/16", "fc00::/7", "fe80::/10", "ff00::/8",
]  # fmt: skip
#: IPv6 addresses that carry an IPv4 one: IPv4-mapped, and 6to4 (its IPv4 in the second and third groups).
CARRIERS = ["::ffff:{v4}", "2002:{hi:x}:{lo:x}::1"]


def url_of(address: str) -> str:
    return f"https://[{address}]/hook" if ":" in address else f"https://{address}/hook"


@pytest.fixture
def strict(database_url) -> Iterator[TestClient]:
    """A server that sends to public addresses only (the default)."""
    with TestClient(create_app(settings_for(database_url, webhooks_allow_private=False))) as c:
        make_ladder(c)
        yield c


def test_every_special_purpose_address_is_refused_and_public_ones_are_taken(strict):
    for network in map(ipaddress.ip_network, ["192.0.0.8/32", *SPECIAL]):  # 192.0.0.8: Python 3.11 took it
        ends = (
            {network[0], network[-1], network[network.num_addresses // 2]}
            if network.num_addresses > 1
            else {network[0]}
        )
        v4 = [str(a) for a in ends if a.version == 4]
        carried = [c.format(v4=a, hi=int(ipaddress.ip_address(a)) >> 16, lo=int(ipaddress.ip_address(a)) & 0xFFFF)
                   for a in v4 for c in CARRIERS]  # fmt: skip
        for address in [str(a) for a in ends] + carried:
            r = strict.post("/v1/ladders/test/webhooks", json={"url": url_of(address), "events": ["game"]},
                            headers=admin())  # fmt: skip
            assert r.status_code == 422 and "which webhooks may not reach" in r.json()["detail"], (address, r.text)
    public = ["93.184.216.34", "192.0.1.1", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", "::ffff:93.184.216.34",
              "2002:5db8:d822::1"]  # fmt: skip
    for address in public:  # beside 192.0.0.0/24; public IPv4 mapped, or in 6to4
        r = strict.post("/v1/ladders/test/webhooks", json={"url": url_of(address), "events": ["game"]}, headers=admin())
        assert r.status_code == 201, (address, r.text)


@pytest.fixture
def dns(monkeypatch) -> dict[str, str | None]:
    """Host names the resolver answers as the test says: an address, or None (no such name); others as ever."""
    table: dict[str, str | None] = {}
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host not in table:
            return real(host, port, *args, **kwargs)
        if table[host] is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (table[host], port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return table


def test_a_name_that_does_not_resolve_and_one_that_resolves_inside_get_one_answer(strict, dns):
    dns |= {"intranet.example": "10.0.0.7", "nowhere.example": None}
    answers = []
    for host in ("intranet.example", "nowhere.example", "localhost"):
        r = strict.post("/v1/ladders/test/webhooks", json={"url": f"https://{host}/hook", "events": ["game"]},
                        headers=admin())  # fmt: skip
        assert r.status_code == 422 and r.json()["errors"][0]["field"] == "url", r.text
        answers.append(r.json())
    assert (
        answers[0] == answers[1] == answers[2]
    )  # the same status, title, detail and errors: which names exist is not told
    assert "10.0.0.7" not in json.dumps(answers[0]) and "127.0.0.1" not in json.dumps(answers[0])


def test_a_name_that_later_resolves_inside_fails_its_delivery_as_one_that_no_longer_resolves(strict, dns):
    dns |= {"moving.example": "93.184.216.34", "vanishing.example": "93.184.216.34"}
    made = [add_webhook(strict, f"https://{host}.example/hook", ["game"]) for host in ("moving", "vanishing")]
    dns |= {"moving.example": "10.0.0.7", "vanishing.example": None}  # DNS changed since
    strict.post("/v1/ladders/test/players", json={"key": "ada"}, headers=admin())
    strict.post("/v1/ladders/test/players", json={"key": "bob"}, headers=admin())
    post_game(strict, "ada", "bob")
    errors = []
    for hook in made:
        [failed] = until(lambda hook=hook: [d for d in deliveries(strict, hook["id"]) if d["status"] == "failed"])
        errors.append(failed["error"])
    assert errors[0] == errors[1] and "10.0.0.7" not in errors[0], errors  # nothing told but that it was not sent
    assert errors[0].startswith("not sent")
