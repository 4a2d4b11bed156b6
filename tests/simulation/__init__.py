"""A deterministic simulation of the whole daemon against the simulated platform (issue 35).

One seed draws a simulated day of conditions (``scenario``); ``harness`` runs the daemon's real
scheduler, traffic poller, ledger, state file, reload and discovery against the simulator's
real handlers on one injected clock, through an in-process transport (``transport``);
``invariant`` checks what ``/metrics`` says against the platform's truth at every scrape and at
the end. ``python -m tests.simulation --seed N`` replays one seed; docs/dev/testing.md explains
how to read its output.
"""
