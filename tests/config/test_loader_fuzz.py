"""Property: whatever the document, loading it gives Settings or a ConfigError, nothing else."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.config import (
    ENV_OVERRIDES,
    SECTIONS,
    SHARD_ENV,
    TOP_LEVEL_KEYS,
    ConfigError,
    Settings,
    load_config,
    masked_dict,
    parse_config,
    warnings,
)
from exporter.runtime.registry import settings_sections

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.sampled_from(["0/1", "3/2", "1/4", "0.0.0.0:9877", "http://x", "${X}", "(", ".*"])
)
trees = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=8) | st.integers(), children, max_size=4)
    ),
    max_leaves=20,
)


def section_of(cls: type[Any]) -> st.SearchStrategy[Any]:
    names = [f.name for f in dataclasses.fields(cls)]
    keys = st.sampled_from(names) | st.sampled_from([n + "s" for n in names])
    return st.dictionaries(keys, scalars | st.lists(scalars, max_size=3), max_size=6) | trees


shaped = st.fixed_dictionaries(
    {},
    optional={
        **{name: section_of(cls) for name, cls in SECTIONS.items()},
        **{a.name: section_of(a.type) for a in settings_sections()},
        "accounts": st.lists(st.text(max_size=6) | section_of(SECTIONS["upstream"]), max_size=3)
        | trees,
        "listen": scalars,
        "shard": scalars,
    },
)
envs = st.dictionaries(
    st.sampled_from([*ENV_OVERRIDES, SHARD_ENV, "X"]), st.text(max_size=10), max_size=4
)


def check(raw: Any, env: dict[str, str]) -> None:
    try:
        result = parse_config(raw, env)
    except ConfigError as exc:
        message = str(exc)
    else:
        yaml.safe_dump(masked_dict(result))  # always printable by check-config
        warnings(result)
        message = "ok"
    assert message


@settings(max_examples=400, deadline=None)
@given(trees, envs)
def test_any_document_gives_settings_or_config_error(raw: Any, env: dict[str, str]) -> None:
    check(raw, env)


@settings(max_examples=400, deadline=None)
@given(shaped, envs, st.booleans())
def test_any_config_shaped_document_gives_settings_or_config_error(
    raw: dict[str, Any], env: dict[str, str], with_token: bool
) -> None:
    if with_token:  # get past the credentials check more often
        up = raw.get("upstream")
        raw["upstream"] = {**up, "token": "fuzz-token"} if isinstance(up, dict) else up
    check(raw, env)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.text(max_size=200)
    | st.lists(
        st.sampled_from([*TOP_LEVEL_KEYS, "  token: x", "- a", ": ", "${X}", "'", "\t", "{", "\n"]),
        max_size=12,
    ).map(" ".join)
)
def test_any_file_text_gives_settings_or_config_error(text: str) -> None:
    fd, path = tempfile.mkstemp(suffix=".yml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(text)
        try:
            result: Settings | str = load_config(path, {"X": "1"})
        except ConfigError as exc:
            result = str(exc)
        assert isinstance(result, Settings) or result
    finally:
        os.unlink(path)
