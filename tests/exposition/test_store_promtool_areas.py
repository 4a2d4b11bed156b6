"""The exposition of the restream, DVR and talking-head areas against the simulator passes
``promtool check metrics``."""

from __future__ import annotations

import asyncio
import os
import shutil

import pytest

from tests.rig.areas import Rig, rig

__all__ = ["rig"]  # the fixture


# --- promtool ----------------------------------------------------------------------------------
async def test_exposition_passes_promtool(rig: Rig) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        if os.environ.get("CDNVIDEO_REQUIRE_TOOLS"):
            pytest.fail("promtool is required (CDNVIDEO_REQUIRE_TOOLS is set)")
        pytest.skip("promtool not installed")
    await rig.poll_everything()
    proc = await asyncio.create_subprocess_exec(
        promtool,
        "check",
        "metrics",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await proc.communicate((await rig.text()).encode())
    assert proc.returncode == 0, output
    assert output == b""  # not even a lint warning
