"""The admin gateway against abuse: the failed-authentication throttle never locks out a
valid credential and honours a trusted proxy header; every query value is bounded (issue
26, points 7 and 9)."""

from __future__ import annotations

import pytest
import structlog

from exporter.web.admin.routes import ROUTES
from exporter.web.admin.validation import MAX_QUERY_VALUE
from exporter.web.admin.validation_th import COUNT_MAXIMUM
from tests.rig.table import READ_TOKEN, WRITE_TOKEN

from .conftest import Admin, MakeAdmin, served_document

RESOURCES = "/restream/demo-media/resources"
TASKS = "/talking-head/demo-media/tasks"


# --- 26.9: the throttle cannot lock out a valid credential --------------------------------
async def test_ten_wrong_tries_behind_one_ingress_lock_no_admin_out(admin: Admin) -> None:
    for n in range(30):  # everyone comes from the ingress's address
        status, _, _ = await admin.call("GET", RESOURCES, token=f"guess-{n:02d}-0123456789")
        assert status == (401 if n < 10 else 429)
    for token in (READ_TOKEN, WRITE_TOKEN):
        status, _, _ = await admin.call("GET", RESOURCES, token=token)
        assert status == 200, token


async def test_failures_are_counted_per_forwarded_address(make_admin: MakeAdmin) -> None:
    admin = await make_admin(trusted_proxy_header="X-Forwarded-For")
    guess = "guess-0123456789"
    for n in range(10):  # one caller at 203.0.113.7, through the ingress
        headers = {"X-Forwarded-For": f"198.51.100.{n}, 203.0.113.7"}  # spoofed first entries
        status, _, _ = await admin.call("GET", RESOURCES, token=f"{guess}{n}", headers=headers)
        assert status == 401
    headers = {"X-Forwarded-For": "203.0.113.7"}
    assert (await admin.call("GET", RESOURCES, token="x" * 20, headers=headers))[0] == 429
    other = {"X-Forwarded-For": "203.0.113.8"}  # another caller behind the same ingress
    assert (await admin.call("GET", RESOURCES, token="y" * 20, headers=other))[0] == 401


async def test_one_stale_credential_is_throttled_from_any_address(make_admin: MakeAdmin) -> None:
    admin = await make_admin(trusted_proxy_header="X-Real-IP")
    stale = "stale-token-0123456789"
    for n in range(10):
        headers = {"X-Real-IP": f"192.0.2.{n}"}
        assert (await admin.call("GET", RESOURCES, token=stale, headers=headers))[0] == 401
    headers = {"X-Real-IP": "192.0.2.99"}
    assert (await admin.call("GET", RESOURCES, token=stale, headers=headers))[0] == 429
    assert (await admin.call("GET", RESOURCES, token="fresh-guess-0123", headers=headers))[0] == 401


async def test_the_audit_line_names_the_forwarded_address(make_admin: MakeAdmin) -> None:
    admin = await make_admin(trusted_proxy_header="X-Forwarded-For")
    with structlog.testing.capture_logs() as logs:
        await admin.call(
            "DELETE", "/talking-head/demo-media/video/t-1", headers={"X-Forwarded-For": "192.0.2.5"}
        )
    audits = [e for e in logs if e["event"] == "audit"]
    assert [e["remote"] for e in audits] == ["192.0.2.5"]


# --- 26.7: every query parameter bounded ---------------------------------------------------
@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"limit": "9" * 4400}, "limit"),
        ({"offset": "1" + "0" * 30}, "offset"),
        ({"limit": str(COUNT_MAXIMUM + 1)}, "limit"),
        ({"id": "x" * (MAX_QUERY_VALUE + 1)}, "id"),
        ({"fields": "video_name," * 60}, "fields"),
        ({"q" * 3000: "1"}, "query"),
    ],
)
async def test_overlong_and_out_of_range_query_values_are_refused_naming_them(
    admin: Admin, query: dict[str, str], field: str
) -> None:
    status, data, _ = await admin.call("GET", TASKS, token=READ_TOKEN, params=query)
    assert status == 422
    assert [f["field"] for f in data["fields"]] == [field]
    assert "q" * 100 not in str(data)  # an overlong name is not quoted back
    assert admin.upstream.requests == []


async def test_the_largest_count_is_sent_on(admin: Admin) -> None:
    status, _, _ = await admin.call(
        "GET", TASKS, token=READ_TOKEN, params={"limit": str(COUNT_MAXIMUM)}
    )
    assert status == 200
    assert dict(admin.upstream.requests[-1].query)["limit"] == str(COUNT_MAXIMUM)


def test_the_document_states_every_query_bound() -> None:
    document = served_document()
    for route in ROUTES:
        operation = document["paths"][route.openapi_path][route.method.lower()]
        for param in operation["parameters"]:
            if param["in"] != "query":
                continue
            schema = param["schema"]
            where = f"{route.operation_id} {param['name']}"
            if schema.get("type") == "integer":
                assert schema["maximum"] == COUNT_MAXIMUM, where
            elif schema.get("type") == "string":
                assert schema["maxLength"] <= MAX_QUERY_VALUE, where
            else:
                assert "enum" in schema, where
