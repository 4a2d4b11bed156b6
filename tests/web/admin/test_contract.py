"""The document says exactly what the checks enforce, and fits the server that serves it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.core import NOT_SET

from exporter.talking_head import reply as th_reply
from exporter.web.admin import validation as v
from exporter.web.admin import validation_th as th
from exporter.web.admin.body import loads_strict
from exporter.web.admin.openapi import OWN_STATUSES, UPSTREAM_HEADER
from exporter.web.admin.restore import has_mask, restore_secrets
from exporter.web.admin.validation import FieldError
from exporter.web.masking import SecretMask

from .conftest import served_document
from .test_against_simulator import RS, SimAdmin, first_resource_id
from .test_against_simulator import sim_admin as sim_admin  # the fixture

DOC = served_document()
OPS = {op["operationId"]: op for item in DOC["paths"].values() for op in item.values()}


def param(op_id: str, name: str) -> dict[str, Any]:
    return next(p for p in OPS[op_id]["parameters"] if p["name"] == name)


def schema_of(op_id: str, name: str) -> dict[str, Any]:
    return {**param(op_id, name)["schema"], "components": DOC["components"]}


def valid(schema: dict[str, Any], value: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


# --- the served document fits the server ----------------------------------------------------
def test_account_is_an_enum_of_the_accounts_served_now() -> None:
    assert param("restream_list", "account")["schema"]["enum"] == ["demo-media", "demo-shop"]
    doc = served_document(("alpha", "beta", "gamma"))
    for item in doc["paths"].values():
        for op in item.values():
            for p in op.get("parameters", []):
                if p["name"] == "account":
                    assert p["schema"]["enum"] == ["alpha", "beta", "gamma"]


def test_ids_carry_examples() -> None:
    for op_id, name in [
        ("restream_get", "resource_id"),
        ("th_status", "task_id"),
        ("dvr_get", "stream_name"),
        ("th_tasks", "start"),
    ]:
        schema = param(op_id, name)["schema"]
        assert schema["examples"], (op_id, name)
        assert valid(schema, schema["examples"][0]), (op_id, name)


def test_links_follow_a_created_resource_and_a_generated_task() -> None:
    links = OPS["restream_create"]["responses"]["200"]["links"]
    assert set(links) == {"restream_get", "restream_update", "restream_status", "restream_history"}
    assert links["restream_get"]["parameters"]["path.resource_id"] == "$response.body#/resource_id"
    assert links["restream_status"]["parameters"]["query.resource_id"] == (
        "$response.body#/resource_id"
    )
    links = OPS["th_generate"]["responses"]["202"]["links"]
    assert set(links) == {"th_status", "th_cancel", "th_video_link", "th_rename", "th_delete"}
    for link in links.values():
        assert link["parameters"]["path.task_id"] == "$response.body#/id"
        assert link["parameters"]["path.account"] == "$request.path.account"
        assert link["operationId"] in OPS


@pytest.mark.parametrize(
    ("tag", "schema", "body"),
    [
        ("restream", "RestreamPlatformError", {"success": False, "code": 404, "message": "x"}),
        ("dvr", "DvrPlatformError", {"status": "Internal", "description": "x", "failed_hosts": []}),
        ("talking-head", "TalkingHeadPlatformError", {"status": "ERROR", "message": "x"}),
    ],
)
def test_every_answer_is_documented_with_the_areas_platform_body(
    tag: str, schema: str, body: dict[str, Any]
) -> None:
    ops = [op for op in OPS.values() if op["tags"] == [tag]]
    assert ops
    for op in ops:
        codes = {c for c in op["responses"] if c.isdigit() and int(c) >= 400}
        assert codes == {str(c) for c in OWN_STATUSES}, op["operationId"]
        assert {"400", "401", "403", "404", "413", "422", "429", "502", "503", "504"} <= codes
        for code in [*codes, "default"]:
            answer = op["responses"][code]
            assert UPSTREAM_HEADER in answer["headers"]
            json_schema = answer["content"]["application/json"]["schema"]
            refs = [r["$ref"].rsplit("/", 1)[1] for r in json_schema["anyOf"]]
            assert refs == ["Error", schema], (op["operationId"], code)
            full = {**json_schema, "components": DOC["components"]}
            assert valid(full, body)
            assert valid(full, {"error": "forbidden", "message": "needs the write token"})
            assert answer["content"]["text/plain"]["schema"] == {"type": "string"}


# --- one source of truth: the schema accepts exactly what the checks accept -----------------
NEAR_TIMES = st.one_of(
    st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z?", fullmatch=True),
    st.from_regex(
        r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:00(Z|[+-]0[0-1]:?0[0-1])?", fullmatch=True
    ),
    st.sampled_from(["2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z", "2100-02-29T00:00:00Z"]),
    st.text(max_size=25),
)
# White space on which Python's \s and JSON Schema's (ECMA) \s disagree, among other text.
SPACES = st.one_of(st.text(st.sampled_from("\x1c\x1f\x85\ufeff\u3000 \ta"), max_size=3), st.text())
IDS = st.one_of(st.sampled_from([".", "..", "", "a/..", "x", "live/main", "a//b"]), st.text())


def _history(name: str) -> Callable[[str], list[FieldError]]:
    """The check of one history parameter on its own: the rules between start and end (x-rules:
    the order, the 31-day period) are left out here."""
    base = {"resource_id": "r1", "start": "1000-01-01T00:00:00Z", "end": "9999-12-31T23:59:59Z"}
    between = ("must be later than start", f"at most {v.HISTORY_DAYS} days after start")

    def check(value: str) -> list[FieldError]:
        errors = v.check_history_query({**base, name: value})
        return [e for e in errors if not e.message.startswith(between)]

    return check


def _tasks(name: str) -> Callable[[str], list[FieldError]]:
    return lambda value: th.check_tasks_query({name: value})


PARAMETER_RULES: list[tuple[str, str, Callable[[str], list[FieldError]], Any]] = [
    ("restream_history", "start", _history("start"), NEAR_TIMES),
    ("restream_history", "end", _history("end"), NEAR_TIMES),
    ("restream_history", "resource_id", _history("resource_id"), SPACES),
    ("restream_status", "resource_id", lambda x: v.check_status_query({"resource_id": x}), IDS),
    ("th_tasks", "start", _tasks("start"), NEAR_TIMES),
    ("th_tasks", "offset", _tasks("offset"), st.text("0123456789-+ a", max_size=4)),
    ("th_tasks", "limit", _tasks("limit"), st.text("0123456789-+ a", max_size=4)),
    ("th_tasks", "id", _tasks("id"), st.text(max_size=3)),
    ("dvr_get", "stream_name", v.check_stream_name, IDS),
    ("th_status", "task_id", lambda x: v.check_segment("task_id", x), IDS),
]


def _as_query_value(schema: dict[str, Any], text: str) -> Any:
    """A query string value as a client following the schema would have typed it."""
    if schema.get("type") == "integer":
        return int(text) if re.fullmatch(r"[0-9]+", text) else text
    return text


@pytest.mark.parametrize(
    ("op_id", "name", "check", "values"),
    PARAMETER_RULES,
    ids=[f"{o}.{n}" for o, n, _, _ in PARAMETER_RULES],
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_parameter_is_accepted_by_the_schema_exactly_when_the_check_accepts_it(
    op_id: str, name: str, check: Callable[[str], list[FieldError]], values: Any, data: Any
) -> None:
    schema = schema_of(op_id, name)
    text = data.draw(values)
    by_schema = valid(schema, _as_query_value(schema, text))
    by_check = not [e for e in check(text) if e.field == name]
    assert by_schema == by_check, (text, check(text))


@given(sort=st.sampled_from(th.SORT_VALUES) | st.text(max_size=8))
def test_the_sort_enum_is_what_the_check_accepts(sort: str) -> None:
    assert valid(schema_of("th_tasks", "sort"), sort) == (not th.check_tasks_query({"sort": sort}))


@given(
    fields=st.lists(
        st.sampled_from([*th_reply.VIDEO_FIELDS, "bogus", ""]), min_size=1, max_size=3
    ).map(", ".join)
)
def test_the_fields_pattern_is_what_the_check_accepts(fields: str) -> None:
    by_check = not th.check_tasks_query({"fields": fields})
    assert valid(schema_of("th_tasks", "fields"), fields) == by_check


SCHEMAS = DOC["components"]["schemas"]


def body_schema(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}", "components": DOC["components"]}


HEAD = {"name": "n", "type": "short", "active": True}


@pytest.mark.parametrize(
    "body",
    [
        {"bogus": 1},
        {},  # the platform needs name, type, active and restreams
        {**HEAD, "name": ""},
        {"type": "short", "active": True, "restreams": []},
        {"restreams": [{"source": "a", "target_url": "b", "colour": "red"}]},
        {"restreams": [{"source": "a", "target_url": "b", "backup": {"login": "x"}}]},
        {"restreams": [{"source": " ", "target_url": "b"}]},
        {"restreams": [{"source": "a", "target_url": "b", "schedule": [{"start": "x"}]}]},
    ],
)
def test_restream_bodies_are_closed_and_refused_by_both(body: dict[str, Any]) -> None:
    assert not valid(body_schema("RestreamResource"), body)
    assert v.check_restream_resource(body)


@pytest.mark.parametrize(
    "body",
    [
        {**HEAD, "restreams": [{"source": "a", "target_url": "b", "backup": {}}]},
        {**HEAD, "resource_id": 5, "creation_ts": 1, "modification_ts": 2, "restreams": []},
        {**HEAD, "restreams": [{"source": "a", "target_url": "b", "backup": {"target_url": "c"}}]},
    ],
)
def test_restream_bodies_accepted_by_both(body: dict[str, Any]) -> None:
    assert valid(body_schema("RestreamResource"), body)
    assert v.check_restream_resource(body) == []


GENERATE = {"script": "Hi", "actor": {"name": "N", "shot": "s"}, "voice": "V"}


@pytest.mark.parametrize(
    ("extra", "ok"),
    [
        ({}, True),
        ({"composition": {"orientation": "vertical"}}, True),
        ({"composition": {"orientation": "vertical", "frame_style": "circle"}}, False),
        (
            {"composition": {"orientation": "vertical", "frame_style": "circle", "scale": 1}},
            False,
        ),
        (
            {
                "composition": {
                    "orientation": "vertical",
                    "frame_style": "circle",
                    "location": "upperleft",
                }
            },
            True,
        ),
        ({"composition": {"orientation": "vertical", "location": "upperleft"}}, False),
        ({"composition": {"orientation": "vertical", "shift": -1, "crop": 0}}, False),
        ({"composition": {"orientation": "vertical", "shift": -1, "crop": 0.5}}, True),
        ({"script": " \n"}, False),
        ({"script": "x" * th_reply.SCRIPT_MAX}, True),
        ({"script": "x" * (th_reply.SCRIPT_MAX + 1)}, False),
        ({"video_name": "x" * (th_reply.VIDEO_NAME_MAX + 1)}, False),
        ({"actor": {"name": "N", "shot": "s", "version": "1.2.3"}}, True),
        ({"actor": {"name": "N", "shot": "s", "version": "1.2"}}, False),
        ({"circle": {"location": "upperleft", "border_color": "#abc"}}, True),
        ({"circle": {"border_color": "#abcd"}}, False),
        ({"bogus": 1}, False),
    ],
)
def test_generate_bodies_agree(extra: dict[str, Any], ok: bool) -> None:
    body = {**GENERATE, **extra}
    assert valid(body_schema("GenerateRequest"), body) is ok
    errors = th.check_generate(body)
    assert (errors == []) is ok, errors


# --- the rule for unknown fields, applied against the simulator -----------------------------
async def test_unknown_restream_fields_are_refused_and_platform_fields_not_sent_on(
    sim_admin: SimAdmin,
) -> None:
    s = sim_admin
    before = s.count()
    entry = {"source": "live/main", "target_url": "rtmp://t.example/app"}
    status, data, resp = await s.admin.call(
        "POST",
        "/restream/demo-media/resources",
        json={**HEAD, "bogus": 1, "restreams": [entry]},
    )
    assert status == 422
    assert UPSTREAM_HEADER not in resp.headers
    assert data["fields"] == [
        {"field": "bogus", "message": f"unknown parameter; known: {', '.join(v.RESOURCE_TYPES)}"}
    ]
    assert s.count() == before  # nothing went upstream

    rid = await first_resource_id(s)
    sent = {"name": "kept", "type": "short", "active": True, "restreams": [entry]}
    body = {"resource_id": 5, "creation_ts": 1, **sent}
    status, data, _ = await s.admin.call("PUT", f"/restream/demo-media/resources/{rid}", json=body)
    assert status == 200, data
    assert (s.last().method, s.last().path) == ("PUT", f"{RS}/resources/{rid}")
    assert s.last().body == sent


def test_patterns_mean_the_same_in_python_and_in_json_schema() -> None:
    """No shorthand class or anchor whose meaning differs between Python and ECMA regexes."""
    patterns = re.findall(r'"pattern": "((?:[^"\\\\]|\\\\.)*)"', json.dumps(DOC))
    assert len(patterns) > 10
    for pattern in map(lambda p: json.loads(f'"{p}"'), patterns):
        assert not re.search(r"\\[sSdDwWbBZAz]|\$", pattern.replace(v.END, "")), pattern
    for space in "\x1c\x1f\x85\ufeff\u3000":
        assert v.is_blank(space)
        assert not valid(schema_of("restream_status", "resource_id"), space)


# --- whole requests: what schemathesis generates from the document passes the checks --------
ST_SCHEMA = schemathesis.openapi.from_dict(DOC)


def _body(case: Any) -> Any:
    """The generated body as the server reads it (JSON text parsed by the admin app)."""
    return {} if case.body is NOT_SET else loads_strict(json.dumps(case.body).encode())


def _query(case: Any) -> dict[str, str]:
    return {k: str(val) for k, val in (case.query or {}).items()}


def _create(case: Any) -> list[FieldError]:
    body = _body(case)
    if errors := v.check_restream_resource(body):
        return errors
    if not has_mask(body):
        return []
    # What restream_create does: nothing is stored, so every mask is refused.
    return restore_secrets(body, None, SecretMask(lambda s: s[:12]), "a new resource")[1]


_STOP = r"restreams\[\d+\]\.schedule\[\d+\]\.stop"
_ORDER = r"must be later than start.*"
_MASK = r"the mask .*; send the real value.*"
# operation -> (its checks of a generated case, the breaches x-rules allows: (field, message))
REQUEST_CHECKS: dict[str, tuple[Callable[[Any], list[FieldError]], set[tuple[str, str]]]] = {
    "restream_create": (_create, {(_STOP, _ORDER), (r"restreams.*", _MASK)}),
    "restream_update": (lambda c: v.check_restream_resource(_body(c)), {(_STOP, _ORDER)}),
    "restream_status": (lambda c: v.check_status_query(_query(c)), set()),
    "restream_history": (
        lambda c: v.check_history_query(_query(c)),
        {("end", _ORDER), ("end", f"at most {v.HISTORY_DAYS} days after start.*")},
    ),
    "dvr_delete": (
        lambda c: v.check_dvr_delete(_body(c)),
        {("to_ts", "must be later than from_ts")},
    ),
    "th_generate": (lambda c: th.check_generate(_body(c)), set()),
    "th_rename": (lambda c: th.check_rename(_body(c)), set()),
    "th_tasks": (lambda c: th.check_tasks_query(_query(c)), {("end", _ORDER)}),
}


@pytest.mark.parametrize("op_id", sorted(REQUEST_CHECKS))
def test_schema_valid_requests_break_no_rule_but_the_listed_ones(op_id: str) -> None:
    path, method = next(
        (p, m.upper())
        for p, item in DOC["paths"].items()
        for m, op in item.items()
        if op["operationId"] == op_id
    )
    check, allowed = REQUEST_CHECKS[op_id]
    assert not allowed or OPS[op_id].get("x-rules"), "x-rules lists what may be broken"

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(case=ST_SCHEMA[path][method].as_strategy())
    def run(case: Any) -> None:
        for error in check(case):
            assert any(
                re.fullmatch(field, error.field) and re.fullmatch(message, error.message)
                for field, message in allowed
            ), (error, case.body, case.query)

    run()


async def test_whole_numbers_written_with_a_fraction_are_integers(sim_admin: SimAdmin) -> None:
    """JSON Schema's integer includes 60.0: accepted, and sent on as 60."""
    s = sim_admin
    raw = b'{"host": "*", "from_ts": 0.0, "duration_sec": 6e1}'
    status, data, _ = await s.admin.call(
        "DELETE",
        "/dvr/demo-media/streams/live/main",
        data=raw,
        headers={"Content-Type": "application/json"},
    )
    assert status == 200, data
    sent = s.last().body
    assert sent == {"host": "*", "from_ts": 0, "duration_sec": 60}
    assert [type(sent[k]) for k in ("from_ts", "duration_sec")] == [int, int]
