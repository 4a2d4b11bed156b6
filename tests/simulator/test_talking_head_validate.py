"""The simulator's talking-head rules and the admin gateway's, run on the same bodies.

The simulator imitates the platform, so it keeps its own copy of the rules and never imports
the gateway's (a rule shared by both could not catch a gateway that drifted from the
platform). This table keeps the two copies honest: each body is accepted by both or refused
by both, except the differences listed in ``DELIBERATE`` with their reason.
"""

from __future__ import annotations

from typing import Any

import pytest

from exporter.simulator.talking_head_validate import (
    BadRequest,
    UnknownParameters,
    validate_generation,
)
from exporter.web.admin.validation_th import check_generate

GOOD: dict[str, Any] = {
    "script": "Hello from the simulator, this is a short test script.",
    "actor": {"name": "Natalia", "version": "1.0.0", "shot": "waist"},
    "voice": "Alena",
}
CIRCLE = {"orientation": "horizontal", "frame_style": "circle", "location": "upperleft"}


def with_(**changes: Any) -> dict[str, Any]:
    return {**GOOD, **changes}


CASES: dict[str, Any] = {
    "good": GOOD,
    "no script": {k: v for k, v in GOOD.items() if k != "script"},
    "blank script": with_(script="   "),
    "script of 3000": with_(script="a" * 2700),
    "script of 3001": with_(script="a" * 3001),
    "no voice": {k: v for k, v in GOOD.items() if k != "voice"},
    "no actor": {k: v for k, v in GOOD.items() if k != "actor"},
    "actor not an object": with_(actor="Natalia"),
    "actor without shot": with_(actor={"name": "Natalia"}),
    "unknown field": with_(speed=2),
    "unknown actor field": with_(actor={**GOOD["actor"], "mood": "x"}),
    "video name of 35": with_(video_name="v" * 35),
    "video name of 36": with_(video_name="v" * 36),
    "rectangle": with_(composition={"orientation": "vertical", "scale": 0.5, "shift": -1}),
    "composition without orientation": with_(composition={"scale": 0.5}),
    "bad orientation": with_(composition={"orientation": "diagonal"}),
    "scale 0": with_(composition={"orientation": "horizontal", "scale": 0}),
    "scale 1": with_(composition={"orientation": "horizontal", "scale": 1}),
    "scale 1.5": with_(composition={"orientation": "horizontal", "scale": 1.5}),
    "crop 0.01": with_(composition={"orientation": "horizontal", "crop": 0.01}),
    "shift below -1": with_(composition={"orientation": "horizontal", "shift": -1.01}),
    "scale as text": with_(composition={"orientation": "horizontal", "scale": "0.5"}),
    "circle": with_(composition=CIRCLE),
    "circle #FFFFFF": with_(composition={**CIRCLE, "border_color": "#FFFFFF"}),
    "circle #fff": with_(composition={**CIRCLE, "border_color": "#fff"}),
    "circle #AbC": with_(composition={**CIRCLE, "background_color": "#AbC"}),
    "circle #ab12EF": with_(composition={**CIRCLE, "background_color": "#ab12EF"}),
    "circle fff": with_(composition={**CIRCLE, "border_color": "fff"}),
    "circle #ggg": with_(composition={**CIRCLE, "border_color": "#ggg"}),
    "circle #ffff": with_(composition={**CIRCLE, "border_color": "#ffff"}),
    "circle #fffffff": with_(composition={**CIRCLE, "border_color": "#fffffff"}),
    "circle #fff newline": with_(composition={**CIRCLE, "border_color": "#fff\n"}),
    "circle colour number": with_(composition={**CIRCLE, "border_color": 0xFFFFFF}),
    "circle bad location": with_(composition={**CIRCLE, "location": "middle"}),
    "circle with scale": with_(composition={**CIRCLE, "scale": 0.5}),
    "rectangle with colour": with_(
        composition={"orientation": "horizontal", "border_color": "#000000"}
    ),
    "top-level circle": with_(circle={"location": "lowerright", "border_color": "#0f0"}),
    "top-level circle bad colour": with_(circle={"border_color": "red"}),
    "top-level circle not an object": with_(circle="upperleft"),
    "body not an object": ["script"],
}
DELIBERATE = {
    "circle without location": "the gateway asks for composition.location with frame_style "
    "circle (the spec lists it as the circle's parameter); the platform falls back to upperleft",
}
CASES["circle without location"] = with_(
    composition={"orientation": "horizontal", "frame_style": "circle"}
)


def simulator_accepts(body: Any) -> bool:
    try:
        validate_generation(body)
    except (BadRequest, UnknownParameters):
        return False
    return True


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_gateway_and_the_simulator_agree(name: str) -> None:
    body = CASES[name]
    gateway = check_generate(body) == []
    if name in DELIBERATE:
        assert gateway != simulator_accepts(body), f"no longer differs: {DELIBERATE[name]}"
    else:
        assert gateway == simulator_accepts(body), (name, check_generate(body))


def test_both_accept_short_and_long_hex_colours() -> None:
    for colour in ("#fff", "#FFF", "#000000", "#aBc123"):
        body = with_(composition={**CIRCLE, "border_color": colour})
        assert check_generate(body) == []
        assert simulator_accepts(body), colour


def test_the_simulator_states_the_talking_head_fields_of_the_reply_module() -> None:
    """The two statements of the platform's talking-head fields, read side by side: the
    exporter's, declared once in its reply module, and the simulator's own."""
    from exporter.simulator import talking_head as sim_records
    from exporter.simulator import talking_head_catalog as catalog
    from exporter.simulator import talking_head_validate as sim
    from exporter.talking_head import reply

    assert set(reply.GENERATE_FIELDS) == sim.TOP
    assert set(reply.ACTOR_FIELDS) == sim.ACTOR
    assert set(reply.COMPOSITION_FIELDS) == sim.COMPOSITION
    assert set(reply.CIRCLE_FIELDS) == sim.CIRCLE
    assert sim.LOCATIONS == reply.LOCATIONS
    assert tuple(catalog.SIZES) == reply.ACTOR_SIZES
    assert (sim.MAX_SCRIPT, sim.MAX_NAME) == (reply.SCRIPT_MAX, reply.VIDEO_NAME_MAX)
    assert sim_records.BASE_FIELDS == reply.VIDEO_BASE_FIELDS
    assert sim_records.EXTRA_FIELDS == reply.VIDEO_EXTRA_FIELDS
