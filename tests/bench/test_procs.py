"""The benchmark's child processes: the line a child prints when ready is read whole."""

from __future__ import annotations

from bench import procs


async def test_a_ready_line_longer_than_a_stream_buffer_is_read() -> None:
    # 2,500 DVR streams (25,000 resources' share), listed twice in the simulator's line
    sim = await procs.start("bench.sim_proc", "--resources", "1", "--restreams", "1",
                            "--dvr", "2500")  # fmt: skip
    try:
        assert len(sim.ready["dvr_streams"]) == 2500
        assert len(sim.ready["accounts"][0]["dvr_streams"]) == 2500
    finally:
        await sim.stop()
