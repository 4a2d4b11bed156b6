"""No planted secret survives in any output, whatever a URL holds and wherever it stands.

Hypothesis writes URLs with quotes, spaces, brackets, fragments, percent-encoding and userinfo,
plants a secret (every one contains ``SECRET``) in the password, in a secret query value or in
a fragment, and puts the URL in every text field of a restream resource and its status: the
target and source URLs, the backup URL, the resource name and the status description, alone or
inside other text. Every output must hide it: the metric labels, the admin API's reply, the
landing page's text and the log line.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.restream.identity import KeyFingerprint, url_label
from exporter.restream.reply import RestreamEntry, RestreamResource, StatusRecord, TargetStatus
from exporter.restream.transform import status_fragment
from exporter.support.logs import Redactor
from exporter.web.masking import SecretMask, mask

FP = KeyFingerprint(b"property-secret")
MASKS = SecretMask(FP, ())
NOW = 1_767_225_600.0

# What a value may hold besides letters: quotes, spaces, brackets, percent-encoding, colons.
ODD = " '\"<>()[]{}%:;,!$*+=~"
LOWER = "abcdefghijklmnopqrstuvwxyz0123456789-._"


def _secret(extra: str) -> st.SearchStrategy[str]:
    tail = st.text(alphabet=LOWER + ODD + extra, min_size=1, max_size=12)
    return st.builds(lambda t: "SECRET" + t, tail)


PASSWORD = _secret("@")  # no "/", "?" or "#": RFC 3986 ends the authority there
QUERY_VALUE = _secret("@#/?")  # no "&": it starts the next pair
FRAGMENT = _secret("@#/?&=")
PLAIN = st.text(alphabet=LOWER + " '\"<>()[]{}%", max_size=10)  # text around a URL
SECRET_NAMES = st.sampled_from(["token", "streamid", "passphrase", "sig", "key", "x", "auth"])
ALLOWED = st.sampled_from(["latency", "mode", "vhost"])


@st.composite
def urls(draw: st.DrawFn) -> str:
    """A URL with at least one planted secret."""
    scheme = draw(st.sampled_from(["rtmp", "rtmps", "srt", "https"]))
    host = draw(st.sampled_from(["a.rtmp.youtube.com", "h.example", "[::1]", "10.0.0.1"]))
    port = draw(st.sampled_from(["", ":1935", ":9000"]))
    path = draw(st.text(alphabet=LOWER + "/%' ", max_size=12))
    path = "/" + path if path else ""
    user = draw(st.text(alphabet=LOWER + "%", max_size=6))
    password = draw(st.none() | PASSWORD)
    pairs = [f"{draw(SECRET_NAMES)}={draw(QUERY_VALUE)}" for _ in range(draw(st.integers(0, 2)))]
    pairs += [
        f"{draw(ALLOWED)}={draw(st.integers(0, 5000))}" for _ in range(draw(st.integers(0, 1)))
    ]
    pairs = draw(st.permutations(pairs))
    fragment = draw(st.none() | FRAGMENT)
    if password is None and not any("SECRET" in p for p in pairs) and fragment is None:
        password = draw(PASSWORD)
    userinfo = f"{user}:{password}@" if password is not None else ""
    query = "?" + "&".join(pairs) if pairs else ""
    tail = f"#{fragment}" if fragment is not None else ""
    return f"{scheme}://{userinfo}{host}{port}{path}{query}{tail}"


@st.composite
def texts(draw: st.DrawFn) -> str:
    """A URL alone, or inside other text."""
    url = draw(urls())
    if draw(st.booleans()):
        return url
    return f"{draw(PLAIN)} {url} {draw(PLAIN)}"


def _outputs(url: str, text: str) -> dict[str, str]:
    entry = RestreamEntry(
        source=text,
        target_url=url,
        target_key="",
        target_type="customRTMP",
        password="",
        backup_url=url,
    )
    resource = RestreamResource("r1", text, "short", True, (entry,))
    status = StatusRecord("r1", (TargetStatus(text, url, "", 3, text),))
    fragment, _ = status_fragment("acme", [resource], [status], NOW, FP)
    labels = b"".join(fragment.rendered().values()).decode()
    reply = {
        "name": text,
        "restreams": [
            {"source": text, "target_url": url, "backup": {"target_url": url}, "note": text}
        ],
        "description": text,
    }
    redactor = Redactor()
    return {
        "labels": labels,
        "label": url_label(text, FP),
        "admin": json.dumps(mask(reply, MASKS), ensure_ascii=False),
        "landing": MASKS.text(text),
        "log": redactor.text(text) + json.dumps(redactor.value(reply)),
    }


def _hidden_everywhere(shapes: list[str]) -> None:
    for shape in shapes:
        for where, out in _outputs(shape, f"see {shape}").items():
            assert "SECRET" not in out, (shape, where, out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(urls(), texts())
def test_no_planted_secret_survives_in_any_output(url: str, text: str) -> None:
    for where, out in _outputs(url, text).items():
        assert "SECRET" not in out, (where, out)


def test_the_shapes_of_the_issue_are_hidden() -> None:
    """The reproductions of issue 36, one by one."""
    shapes = [
        "srt://h.example:9000?streamid=SECRET-x'bob'&passphrase=SECRET-SRT-PASS-1",
        "srt://h.example:9000?passphrase=SECRET-x horse battery staple",
        'rtmp://h.example/app?token="SECRET-TOKEN-IN-QUOTES-2"',
        "publish to rtmp://u:SECRET-PW@h.example/live?token=SECRET-TOK refused",
        "rtmp://u:SECRET pw@h.example/live",
        "rtmp://h.example/app?SECRET-BARE-KEY",
        "rtmp://evil.example#SECRET@a.rtmp.youtube.com/live2",
    ]
    _hidden_everywhere(shapes)


def test_text_shaped_like_the_parsers_own_placeholder_is_only_text() -> None:
    """The parser holds masks aside as private-use characters; platform text holding such
    characters itself must neither break the parse nor come back as something else."""
    text = "rtmp://h.example/\ue0009\ue001?token=********#0123456789ab&x=SECRET-1"
    for where, out in _outputs(text, f"name {text}").items():
        assert "SECRET" not in out, (where, out)
        assert "\ue0009\ue001" in out, where


def test_a_scheme_inside_a_query_or_fragment_starts_no_new_url() -> None:
    """``scheme://`` inside a query value or a fragment is part of it, not the start of
    another URL that would take the secret's first letters for its scheme; a URL inside an
    allowed value is masked too."""
    shapes = [
        "rtmp://a.rtmp.youtube.com#SECRET://",
        "rtmp://h.example/live?token=SECRET://x",
        "srt://h.example:9000?streamid=SECRET0x://y&latency=120",
        "rtmp://h.example/live?latency=5 rtmp://u:SECRET@b.example/live",
        "rtmp://h.example/live?mode=1 srt://b.example?passphrase=SECRET-2",
        "rtmp://h.example/live?mode=1#SECRET-frag://z",
    ]
    _hidden_everywhere(shapes)
