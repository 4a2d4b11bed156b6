"""The rig: the one way tests start the daemon, and every stand-in for the platform they use.

- ``daemon``: ``running`` (and the fixture ``start_daemon``), the whole daemon built by
  ``create_app`` without its timers and served as ``run`` serves it; no test builds it
  another way (tests/structure/test_rig.py).
- ``client``: one real ``UpstreamClient`` built as the daemon builds it (``connect``), held
  beside the platform it talks to: ``ShapeRig`` with the simulator (``exporter/simulator``,
  fixture ``make_sim_rig``), ``Rig`` with the scripted platform (fixture ``make_rig``).
- ``http``: ``FakeServer``, what both scripted platforms below share: the catch-all app,
  each request recorded, counted in and out, held until ``release()``.
- ``scripted``: ``FakePlatform``, an HTTP server answering from queues of ``Answer``s and
  recording raw requests: for replies the simulator has no quirk for (exact bytes, delays,
  expired tokens by name).
- ``table``: ``FakeUpstream``, an HTTP server answering from a table keyed by method and path,
  recording decoded bodies and tokens; the admin API's platform.
- ``source``: ``FakeSource``, below HTTP: the traffic poller's metrics source with per-minute
  truth, late data and failures.
- ``areas``: the restream, DVR and talking-head pollers against the simulator (``rig``).
- ``schedule``: APScheduler's own loop on the injected clock (``run_due``, ``start_due``):
  how a test runs the scheduler's jobs.

The simulator is the platform wherever a test's user has the real part; docs/dev/testing.md,
*One rig*, says why a test needs each scripted fake instead.
"""
