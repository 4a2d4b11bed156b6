"""The endpoint table: each area declares its endpoints once (``<area>/reply.py``); the typed
reads, the admin pass-through and the admin route table are built from it."""

from __future__ import annotations

import pytest

from exporter.dvr import reply as dvr_reply
from exporter.restream import reply as restream_reply
from exporter.talking_head import reply as th_reply
from exporter.upstream import UpstreamError
from exporter.upstream.endpoint import READ_LANES, Endpoint
from exporter.web.admin.routes import ROUTES
from tests.rig.client import MakeRig
from tests.rig.scripted import Answer, FakePlatform

ENDPOINTS = restream_reply.ENDPOINTS + dvr_reply.ENDPOINTS + th_reply.ENDPOINTS


def test_every_admin_route_passes_one_endpoint_through_and_every_endpoint_has_a_route() -> None:
    by_name = {e.name: e for e in ENDPOINTS}
    assert len(by_name) == len(ENDPOINTS) == 16
    routed = {}
    for route in ROUTES:
        endpoint = by_name[route.operation_id]
        routed[route.operation_id] = (
            route.upstream,
            route.path_params,
            tuple(q.name for q in route.query),
        )
        # the route documents the endpoint's call and fills its fields from its own path
        assert routed[route.operation_id] == (
            endpoint.describe(),
            list(endpoint.fields()),
            endpoint.params,
        )
    assert sorted(routed) == sorted(e.name for e in ENDPOINTS if "admin" in e.lanes)


def test_an_endpoint_fills_its_template_with_quoted_segments() -> None:
    assert dvr_reply.DVR_GET.url_path({"account": "a b", "stream_name": "live/50%"}) == (
        "/app/dvr-net/v1/a%20b/streams/live/50%25"
    )
    assert th_reply.TH_CANCEL.url_path({"account": "acme", "task_id": "t/1"}) == (
        "/app/th-api/v1/accounts/acme/cancel/t%2F1"
    )
    with pytest.raises(UpstreamError) as info:
        restream_reply.RESTREAM_GET.url_path({"account": "acme", "resource_id": ".."})
    assert (info.value.kind, info.value.area) == ("invalid_request", "restream")
    with pytest.raises(ValueError, match="fields"):  # a field missing is a programming error
        th_reply.TH_STATUS.url_path({"account": "acme"})
    with pytest.raises(ValueError, match="needs \\{account\\}"):
        Endpoint("dvr", "x", "GET", "/app/dvr-net/v1/streams/{stream_name}")


async def test_the_pass_through_sends_only_what_the_endpoint_declares(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    rig = make_rig()
    with pytest.raises(ValueError, match="takes"):
        await rig.ops.send(th_reply.TH_TASKS, "acme", params=[("secret", "x")])
    with pytest.raises(ValueError, match="takes"):
        await rig.ops.send(restream_reply.RESTREAM_LIST, "acme", params={"resource_id": "1"})
    polled_only = Endpoint(
        "dvr", "polled_only", "GET", "/app/x/{account}", lanes=frozenset({"poll"})
    )
    with pytest.raises(ValueError, match="not sent through the admin lane"):
        await rig.ops.send(polled_only, "acme")
    assert platform.seen == []


async def test_a_poller_reads_only_the_reads_of_its_lane(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    listed = {"data": {"resources": []}}
    platform.on("GET", "/app/th-api/v1/accounts/acme/tasks", Answer(200, {"data": []}))
    platform.on("GET", "/app/restream/v2/acme/resources", Answer(200, listed))
    rig = make_rig()
    assert th_reply.TH_TASKS.lanes != READ_LANES  # an admin lookup, not a poller's read
    with pytest.raises(ValueError, match="not a read of the pollers' lane"):
        await rig.client.read(th_reply.TH_TASKS, "acme")
    with pytest.raises(ValueError, match="not a read of the pollers' lane"):
        await rig.client.read(dvr_reply.DVR_DELETE, "acme", stream_name="live/main")
    assert platform.seen == []
    assert await rig.client.read(restream_reply.RESTREAM_LIST, "acme") == listed
    assert [(s.method, s.path) for s in platform.seen] == [
        ("GET", "/app/restream/v2/acme/resources")
    ]
