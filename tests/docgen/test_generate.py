"""Generated docs: up to date in the repository, complete, and their examples valid."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path
from typing import get_type_hints

import pytest
import yaml

from exporter.config import ENV_OVERRIDES, SECTIONS, SHARD_ENV, AccountSettings, parse_config
from exporter.docgen import generate as docgen
from exporter.runtime.registry import settings_sections


def test_generated_docs_are_up_to_date() -> None:
    """Fails when config.py changed without `python -m exporter.docgen` (run it, commit)."""
    assert docgen.main(["--check"]) == 0


def test_check_runs_as_a_module_from_anywhere(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "exporter.docgen", "--check"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, "")


def test_check_fails_on_a_missing_or_stale_file_and_write_fixes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert docgen.main(["--check", "--root", str(tmp_path)]) == 1
    assert "docs/configuration.md is out of date; run: python -m exporter.docgen" in (
        capsys.readouterr().err
    )
    assert docgen.main(["--root", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "wrote docs/configuration.md\nwrote docs/metrics.md\n"
    assert docgen.main(["--check", "--root", str(tmp_path)]) == 0
    path = tmp_path / "docs" / "configuration.md"
    path.write_text(path.read_text() + "hand edit\n")
    assert docgen.main(["--check", "--root", str(tmp_path)]) == 1


def test_more_references_can_be_registered() -> None:
    assert all(isinstance(p, str) and callable(g) for p, g in docgen.DOCS)
    extra = [("docs/extra.md", lambda: "# extra\n")]
    assert docgen.stale(Path("/nonexistent"), extra) == ["docs/extra.md"]


def test_every_key_is_documented_with_type_and_default() -> None:
    text = docgen.configuration_md()
    areas = {a.name: a.type for a in settings_sections()}
    sections = list({**SECTIONS, **areas}.items())
    while sections:
        name, cls = sections.pop()
        hints = get_type_hints(cls)
        for f in dataclasses.fields(cls):
            nested = hints[f.name]
            if isinstance(nested, type) and dataclasses.is_dataclass(nested):  # nested section
                sections.append((f"{name}.{f.name}", nested))
                continue
            assert re.search(rf"^\| `{name}\.{f.name}` \| \w", text, re.M), f"{name}.{f.name}"
    for f in dataclasses.fields(AccountSettings):
        assert f"| `accounts[].{f.name}` |" in text
    for key in ("listen", "shard"):
        assert f"| `{key}` |" in text


def test_secrets_are_marked() -> None:
    text = docgen.configuration_md()
    marked = set(re.findall(r"^\| `([\w.]+)` \| [^|]+ \| [^|]+ \| \*\*Secret\*\*", text, re.M))
    assert marked == {
        "upstream.token",
        "upstream.password",
        "admin.read_token",
        "admin.write_token",
        "remote_write.bearer_token",
        "remote_write.basic_auth.password",
    }


def test_environment_sharding_and_budget_are_explained() -> None:
    text = docgen.configuration_md()
    for var, (section, key) in ENV_OVERRIDES.items():
        assert f"| `{var}` | `{section}.{key}` |" in text
    assert f"| `{SHARD_ENV}` | `shard` |" in text
    assert "`${VAR:-default}` uses `default` when `VAR` is unset or empty" in text
    assert "fnv1a_32(account name) % COUNT == INDEX" in text
    assert "requests per month = 2592000 / talking_head.interval_seconds" in text
    assert "| 21600 s (default) | 120 | 8% |" in text
    assert "below 17280 s" in text


def test_yaml_examples_in_the_docs_are_valid_configs() -> None:
    blocks = re.findall(r"```yaml\n(.*?)```", docgen.configuration_md(), re.S)
    assert len(blocks) == 3
    for block in blocks:
        # each example gets exactly the variables it refers to, as an operator would set them
        env = {var: f"doc-{var.lower()}" for var in re.findall(r"\$\{(\w+)", block)}
        settings = parse_config(yaml.safe_load(block), env)
        assert settings.upstream.token or settings.upstream.password
