"""Quirks: names from the command line, YAML and the control surface; docs list every one."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from exporter.simulator import SimConfig, Simulator, add_cli_arguments, config_from_args
from exporter.simulator.quirks import QUIRKS
from exporter.support.clock import FakeClock
from tests.simulator.simhelpers import TOKEN, Client, ClientFactory

DOC = Path(__file__).resolve().parents[2] / "docs" / "simulator.md"


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_cli_arguments(parser)
    return parser.parse_args(list(argv))


def test_quirk_flag_is_repeatable_and_adds_to_yaml(tmp_path: Path) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text("quirks: [empty-401]\n", encoding="utf-8")
    config = config_from_args(parse("--sim-config", str(path)))
    assert config.quirks == frozenset({"empty-401"})
    config = config_from_args(parse("--quirk", "empty-401", "--quirk", "empty-401"))
    assert config.quirks == frozenset({"empty-401"})
    assert config_from_args(parse()).quirks == frozenset()


def test_unknown_quirk_is_refused_with_the_known_names() -> None:
    with pytest.raises(ValueError, match=r"unknown quirk\(s\) no-such.*known: .*empty-401"):
        SimConfig(quirks=frozenset({"no-such"}))
    with pytest.raises(SystemExit):
        parse("--quirk", "no-such")
    with pytest.raises(ValueError, match="expected a list"):
        SimConfig.from_mapping({"quirks": "empty-401"})


def test_docs_list_every_quirk_and_no_other() -> None:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("<!-- quirks:", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z0-9-]+)` \|", section, re.MULTILINE))
    assert documented == set(QUIRKS)


async def test_control_surface_switches_quirks(aiohttp_client: ClientFactory) -> None:
    sim = Simulator(SimConfig(), FakeClock())
    client: Client = await aiohttp_client(sim.build_app())
    listed = await (await client.get("/_sim/quirks")).json()
    assert {q["name"]: q["on"] for q in listed} == dict.fromkeys(QUIRKS, False)
    resp = await client.post("/_sim/quirks", json={"quirks": ["empty-401"]})
    assert resp.status == 200
    assert {q["name"] for q in await resp.json() if q["on"]} == {"empty-401"}
    assert sim.quirks == {"empty-401"}
    bad = await client.post("/_sim/quirks", json={"quirks": ["nope"]})
    assert bad.status == 400
    assert "nope" in (await bad.json())["error"]
    assert sim.quirks == {"empty-401"}
    assert (await (await client.get("/_sim/")).json())["quirks"] == ["empty-401"]


@pytest.mark.parametrize("quirk", [False, True])
async def test_empty_401_answers_a_bad_token_without_a_body(
    aiohttp_client: ClientFactory, quirk: bool
) -> None:
    sim = Simulator(SimConfig(quirks=frozenset({"empty-401"} if quirk else ())), FakeClock())
    client: Client = await aiohttp_client(sim.build_app())
    for path in ("/app/restream/v2/demo-media/resources", "/app/inventory/v1/accounts/"):
        resp = await client.get(path, headers={"CDN-AUTH-TOKEN": "wrong"})
        body = await resp.read()
        if quirk:
            assert (resp.status, body) == (401, b"")
        else:
            assert resp.status == 403
            assert b"Invalid token" in body
    login = await client.post("/app/oauth/v1/token/", data={"username": "demo", "password": "x"})
    assert login.status == (401 if quirk else 403)
    assert (await login.read() == b"") is quirk
    good = await client.get("/app/restream/v2/demo-media/resources", headers=TOKEN)
    assert good.status == 200


async def test_one_minute_window_answers_the_last_minute_only(
    aiohttp_client: ClientFactory,
) -> None:
    clock = FakeClock(1_767_225_600 + 3600)
    sim = Simulator(SimConfig(late_seconds=0), clock)
    client: Client = await aiohttp_client(sim.build_app())
    q = {"account": "demo-media", "start": "2026-01-01T00:10:00", "end": "2026-01-01T00:15:00"}
    full = await (await client.get("/app/metrics/v1/", params=q, headers=TOKEN)).json()
    sim.set_quirks(["one-minute-window"])
    resp = await client.get("/app/metrics/v1/", params=q, headers=TOKEN)
    short = await resp.json()
    assert resp.status == 200
    assert (short["start"], short["end"]) == ("2026-01-01T00:14:00", "2026-01-01T00:15:00")
    last = sim.traffic_final("demo-media", 1_767_225_600 + 14 * 60)
    assert short["data"][0]["edge_requests_total"] == last["edge_requests_total"]
    assert full["data"][0]["edge_requests_total"] > last["edge_requests_total"]
    one = {**q, "start": "2026-01-01T00:14:00"}
    same = await (await client.get("/app/metrics/v1/", params=one, headers=TOKEN)).json()
    assert same == short


async def test_string_values_bad_values_and_status_key_shapes(
    aiohttp_client: ClientFactory,
) -> None:
    quirks = frozenset({"string-values", "bad-values", "status-key"})
    sim = Simulator(SimConfig(quirks=quirks), FakeClock(1_767_225_600 + 3600))
    client: Client = await aiohttp_client(sim.build_app())
    q = {"account": "demo-media", "start": "2026-01-01T00:10:00", "end": "2026-01-01T00:11:00"}
    body = await (await client.get("/app/metrics/v1/resources", params=q, headers=TOKEN)).json()
    assert body["status"] == 200
    second, first = body["data"][0], body["data"][-1]
    assert set(second["edge_request_time"]) >= {"1M_2M", "750k_1M", "4M+"}
    assert all(isinstance(v, str) for v in second["edge_request_time"].values())
    float(second["edge_request_time"]["1M_2M"])
    assert second["edge_hit_ratio"] >= 0
    assert first["edge_hit_ratio"] != first["edge_hit_ratio"]  # NaN
    assert first["edge_bandwidth"] == "n/a"
    assert isinstance(first["edge_request_time"]["0_250k"], dict)
    assert isinstance(first["edge_requests_total"], int)


async def test_api_rate_limit_answers_429_with_retry_after_per_account(
    aiohttp_client: ClientFactory,
) -> None:
    clock = FakeClock()
    sim = Simulator(SimConfig(api_requests_per_minute=1), clock)
    client: Client = await aiohttp_client(sim.build_app())
    path = "/app/dvr-net/v1/{}/streams/live/main"
    assert (await client.get(path.format("demo-media"), headers=TOKEN)).status == 200
    clock.advance(20)
    over = await client.get(path.format("demo-media"), headers=TOKEN)
    assert over.status == 429
    assert over.headers["Retry-After"] == "40"
    assert (await over.json())["description"] == "Rate limit exceeded"
    assert (await client.get(path.format("demo-shop"), headers=TOKEN)).status == 200
    sim.reset()
    assert (await client.get(path.format("demo-media"), headers=TOKEN)).status == 200


@pytest.mark.parametrize("quirk", [False, True])
async def test_url_in_description_names_a_failing_target_in_clear(
    aiohttp_client: ClientFactory, quirk: bool
) -> None:
    names = frozenset({"url-in-description"} if quirk else ())
    sim = Simulator(SimConfig(quirks=names), FakeClock())
    url = "rtmp://ingest.partner.example/app?token=tok-SECRET-TOKEN-1002"
    sim.force_restream_status("demo-media", "1002", url, 3, "Source stream is not published")
    client: Client = await aiohttp_client(sim.build_app())
    resp = await client.get("/app/restream/v2/demo-media/status?resource_id=1002", headers=TOKEN)
    targets = (await resp.json())["data"][0]["status"]
    described = {t["target_url"]: t["status"]["description"] for t in targets}
    expected = f"Source stream is not published: publish to {url} refused"
    assert described[url] == (expected if quirk else "Source stream is not published")
    ok = [t["status"]["description"] for t in targets if t["status"]["code"] == 0]
    assert set(ok) <= {"OK"}
