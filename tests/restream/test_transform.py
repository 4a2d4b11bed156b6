"""Unit tests of the pure restream transforms: labels, codes, schedules, backups, history."""

from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st

from exporter.restream import families as f
from exporter.restream.identity import (
    KeyFingerprint,
    in_schedule,
    parse_utc,
    resource_secrets,
    url_label,
    url_secrets,
)
from exporter.restream.reply import (
    HistoryPoint,
    RestreamEntry,
    RestreamResource,
    ScheduleWindow,
    StatusRecord,
    TargetStatus,
)
from exporter.restream.transform import Change, fold_history, history_fragment, status_fragment
from exporter.support.logs import MASK

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z
FP = KeyFingerprint(b"test-secret")
SRC = "rtmp://in.example/live/a"
URL = "rtmp://alice:s3cret-pw@yt.example/live2"
KEY = "abcd-efgh-ijkl-mnop"


def entry(
    url: str = URL,
    key: str = KEY,
    schedule: tuple[ScheduleWindow, ...] = (),
    backup_url: str = "",
) -> RestreamEntry:
    return RestreamEntry(
        source=SRC,
        target_url=url,
        target_key=key,
        target_type="customRTMP",
        password="entry-password",
        schedule=schedule,
        backup_url=backup_url,
        backup_password="backup-password" if backup_url else "",
    )


def resource(*entries: RestreamEntry, rid: str = "r1", active: bool = True) -> RestreamResource:
    return RestreamResource(rid, "Match", "short", active, tuple(entries))


def status(code: int, url: str = URL, key: str = KEY, rid: str = "r1") -> StatusRecord:
    return StatusRecord(rid, (TargetStatus(SRC, url, key, code, f"desc {code}"),))


def target(url: str = URL, key: str = KEY, rid: str = "r1") -> dict[str, str]:
    return {
        "account": "acme",
        "resource_id": rid,
        "source": SRC,
        "target": url_label(url, FP, key),
        "target_key": FP(key),
    }


def test_resource_info_and_active_flag_per_resource() -> None:
    res = [resource(rid="r1"), RestreamResource("r2", "Perm", "permanent", False)]
    frag, dropped = status_fragment("acme", res, [], NOW, FP)
    assert dropped == 0
    assert frag.value(f.RESOURCE_INFO, resource_id="r1", name="Match", type="short") == 1
    assert frag.value(f.RESOURCE_INFO, resource_id="r2", name="Perm", type="permanent") == 1
    assert frag.value(f.RESOURCE_ACTIVE, account="acme", resource_id="r1") == 1
    assert frag.value(f.RESOURCE_ACTIVE, account="acme", resource_id="r2") == 0


def test_known_code_zero_is_up() -> None:
    frag, _ = status_fragment("acme", [resource(entry())], [status(0)], NOW, FP)
    assert frag.value(f.STATUS_CODE, **target()) == 0
    assert frag.value(f.UP, **target()) == 1
    assert frag.value(f.STATUS_INFO, **target(), code="0", description="desc 0") == 1


def test_unknown_code_is_exported_as_its_number_and_down() -> None:
    frag, _ = status_fragment("acme", [resource(entry())], [status(42)], NOW, FP)
    assert frag.value(f.STATUS_CODE, **target()) == 42
    assert frag.value(f.UP, **target()) == 0
    assert frag.value(f.STATUS_INFO, **target(), code="42", description="desc 42") == 1


def test_target_label_has_no_credentials_and_key_is_a_fingerprint() -> None:
    frag, _ = status_fragment("acme", [resource(entry())], [status(0)], NOW, FP)
    ((labels, _),) = frag.samples[f.STATUS_CODE]
    assert labels[3] == "rtmp://yt.example/live2"
    assert labels[4] == FP(KEY)
    assert len(labels[4]) == 12
    assert all(c in string.hexdigits for c in labels[4])
    text = b"".join(frag.rendered().values()).decode()
    for secret in (KEY, "alice", "s3cret-pw", "entry-password"):
        assert secret not in text


SRT = "srt://srt.example:9000?streamid=#!::r=sid-a,m=publish&passphrase=srt-pass-1&latency=2000"
TOKENED = "rtmp://ingest.example/app?token=tok-secret-1&vhost=live.example"


def test_secrets_in_a_target_urls_query_are_fingerprinted_in_its_label() -> None:
    other = SRT.replace("sid-a", "sid-b")
    entries = [entry(url=SRT, key=""), entry(url=other, key=""), entry(url=TOKENED)]
    statuses = [
        StatusRecord(
            "r1", tuple(TargetStatus(SRC, e.target_url, e.target_key, 0, "OK") for e in entries)
        )
    ]
    frag, duplicates = status_fragment("acme", [resource(*entries)], statuses, NOW, FP)
    targets = [labels[3] for labels, _ in frag.samples[f.STATUS_CODE]]
    assert duplicates == 0  # two SRT stream ids on one host stay two series
    assert sorted(targets) == sorted(
        [
            f"srt://srt.example:9000?streamid={MASK}#{FP('#!::r=sid-a,m=publish')}"
            f"&passphrase={MASK}#{FP('srt-pass-1')}&latency=2000",
            f"srt://srt.example:9000?streamid={MASK}#{FP('#!::r=sid-b,m=publish')}"
            f"&passphrase={MASK}#{FP('srt-pass-1')}&latency=2000",
            f"rtmp://ingest.example/app?token={MASK}#{FP('tok-secret-1')}&vhost=live.example",
        ]
    )
    text = b"".join(frag.rendered().values()).decode()
    for secret in ("sid-a", "sid-b", "srt-pass-1", "tok-secret-1"):
        assert secret not in text
    assert {"#!::r=sid-a,m=publish", "srt-pass-1"} <= set(url_secrets(SRT))
    assert url_secrets(TOKENED) == ["tok-secret-1"]


def test_empty_target_key_gives_empty_fingerprint() -> None:
    frag, _ = status_fragment("acme", [resource(entry(key=""))], [status(0, key="")], NOW, FP)
    assert frag.value(f.STATUS_CODE, **target(key="")) == 0
    assert FP("") == ""


def test_key_inside_the_target_url_is_masked() -> None:
    url = f"rtmp://yt.example/live2/{KEY}"
    assert KEY not in url_label(url, FP, KEY)
    frag, _ = status_fragment("acme", [resource(entry(url=url))], [status(0, url=url)], NOW, FP)
    assert KEY not in b"".join(frag.rendered().values()).decode()


def test_fingerprint_depends_on_the_secret() -> None:
    assert KeyFingerprint(b"one")(KEY) != KeyFingerprint(b"two")(KEY)
    assert KeyFingerprint(b"one")(KEY) == KeyFingerprint(b"one")(KEY)
    assert not KeyFingerprint().keyed
    assert KeyFingerprint(b"x").keyed


def test_scheduled_is_one_without_a_schedule() -> None:
    frag, _ = status_fragment("acme", [resource(entry())], [status(0)], NOW, FP)
    assert frag.value(f.SCHEDULED, **target()) == 1


def test_scheduled_follows_the_windows() -> None:
    windows = (
        ScheduleWindow("2025-12-31T22:00:00Z", "2025-12-31T23:00:00Z"),
        ScheduleWindow("2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"),
    )
    res = [resource(entry(schedule=windows))]
    inside, _ = status_fragment("acme", res, [status(7)], NOW, FP)
    assert inside.value(f.SCHEDULED, **target()) == 1
    gap, _ = status_fragment("acme", res, [status(7)], NOW - 30 * 60, FP)
    assert gap.value(f.SCHEDULED, **target()) == 0
    after, _ = status_fragment("acme", res, [status(7)], NOW + 3600, FP)  # stop is exclusive
    assert after.value(f.SCHEDULED, **target()) == 0


def test_schedule_edges_and_bad_windows() -> None:
    assert parse_utc("2026-01-01T00:00:00Z") == NOW
    assert parse_utc("2026-01-01T00:00:00") == NOW  # naive means UTC
    assert parse_utc("soon") is None
    bad = (ScheduleWindow("soon", "later"),)
    assert not in_schedule(bad, NOW)
    assert in_schedule((), NOW)


def test_backup_target_is_matched_to_its_entry() -> None:
    backup = "rtmp://bob:backup-pw@backup.example/live"
    windows = (ScheduleWindow("2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"),)
    res = [resource(entry(schedule=windows, backup_url=backup))]
    statuses = [
        StatusRecord(
            "r1",
            (
                TargetStatus(SRC, URL, KEY, 0, "OK"),
                TargetStatus(SRC, backup, KEY, 3, "Source stream is not published"),
            ),
        )
    ]
    frag, _ = status_fragment("acme", res, statuses, NOW - 60, FP)
    b = target(url=backup)
    assert b["target"] == "rtmp://backup.example/live"
    assert frag.value(f.STATUS_CODE, **b) == 3
    assert frag.value(f.UP, **b) == 0
    assert frag.value(f.SCHEDULED, **b) == 0  # the entry's schedule applies to its backup
    assert frag.value(f.SCHEDULED, **target()) == 0


def test_backup_reported_without_a_key_is_still_matched() -> None:
    backup = "rtmp://backup.example/live"
    res = [resource(entry(backup_url=backup))]
    frag, _ = status_fragment("acme", res, [status(0, url=backup, key="")], NOW, FP)
    assert frag.value(f.SCHEDULED, **target(url=backup, key="")) == 1


def test_reported_target_without_configuration_has_no_scheduled_series() -> None:
    frag, _ = status_fragment("acme", [], [status(2, rid="ghost")], NOW, FP)
    assert frag.value(f.STATUS_CODE, **target(rid="ghost")) == 2
    assert frag.samples[f.SCHEDULED] == ()


def test_configured_target_without_status_still_has_scheduled() -> None:
    frag, _ = status_fragment("acme", [resource(entry())], [], NOW, FP)
    assert frag.value(f.SCHEDULED, **target()) == 1
    assert frag.samples[f.STATUS_CODE] == ()


def test_status_url_without_credentials_matches_configured_url_with_them() -> None:
    windows = (ScheduleWindow("2030-01-01T00:00:00Z", "2030-01-02T00:00:00Z"),)
    res = [resource(entry(schedule=windows))]
    plain = "rtmp://yt.example/live2"
    frag, _ = status_fragment("acme", res, [status(0, url=plain)], NOW, FP)
    assert frag.value(f.SCHEDULED, **target()) == 0
    assert len(frag.samples[f.SCHEDULED]) == 1


def test_targets_differing_only_in_credentials_collapse_into_one_series() -> None:
    rec = StatusRecord(
        "r1",
        (
            TargetStatus(SRC, "rtmp://a:b1c@yt.example/live2", KEY, 0, "OK"),
            TargetStatus(SRC, "rtmp://a:b2c@yt.example/live2", KEY, 7, "Restream stopped"),
        ),
    )
    frag, dropped = status_fragment("acme", [], [rec], NOW, FP)
    assert dropped == 1
    assert len(frag.samples[f.STATUS_CODE]) == 1
    assert len(frag.samples[f.STATUS_INFO]) == 1
    assert frag.value(f.STATUS_CODE, **target()) == 0


def test_unknown_types_pass_through() -> None:
    res = RestreamResource("r9", "x", "permanent-v2", True)
    frag, _ = status_fragment("acme", [res], [], NOW, FP)
    assert frag.value(f.RESOURCE_INFO, resource_id="r9", type="permanent-v2") == 1


def test_secrets_of_a_configuration_are_collected() -> None:
    res = [resource(entry(backup_url="rtmp://bob:backup-pw@backup.example/live"))]
    found = set(resource_secrets(res))
    assert {KEY, "entry-password", "backup-password", "alice:s3cret-pw", "s3cret-pw"} <= found
    assert {"bob:backup-pw", "backup-pw"} <= found
    assert url_secrets("rtmp://plain.example/x") == []


def point(t: float, code: int, url: str = URL, key: str = KEY) -> HistoryPoint:
    return HistoryPoint(SRC, url, key, code, f"desc {code}", t)


def test_history_keeps_the_latest_change_per_target() -> None:
    state = fold_history({}, "r1", [point(NOW - 300, 0), point(NOW - 100, 2)], FP)
    tid = ("r1", SRC, url_label(URL, FP), FP(KEY))
    assert state == {tid: Change(NOW - 100, 2)}
    frag = history_fragment("acme", state)
    assert frag.value(f.STATUS_CHANGED, **target()) == NOW - 100


def test_history_repeats_of_the_same_code_keep_the_first_time() -> None:
    state = fold_history({}, "r1", [point(NOW - 300, 0), point(NOW - 200, 0)], FP)
    state = fold_history(state, "r1", [point(NOW - 100, 0)], FP)
    assert next(iter(state.values())) == Change(NOW - 300, 0)


def test_history_overlap_and_old_points_are_ignored() -> None:
    state = fold_history({}, "r1", [point(NOW - 100, 2)], FP)
    state = fold_history(state, "r1", [point(NOW - 100, 2), point(NOW - 500, 0)], FP)
    assert next(iter(state.values())) == Change(NOW - 100, 2)


def test_history_targets_are_separate_and_unordered_input_is_sorted() -> None:
    backup = "rtmp://backup.example/live"
    pts = [point(NOW - 10, 0), point(NOW - 50, 2), point(NOW - 40, 7, url=backup, key="")]
    state = fold_history({}, "r1", pts, FP)
    frag = history_fragment("acme", state)
    assert frag.value(f.STATUS_CHANGED, **target()) == NOW - 10
    assert frag.value(f.STATUS_CHANGED, **target(url=backup, key="")) == NOW - 40


@given(
    user=st.text(string.ascii_letters + string.digits, min_size=1, max_size=12),
    password=st.text(string.ascii_letters + string.digits + "-_.~!$", min_size=1, max_size=20),
    host=st.from_regex(r"[a-z]{1,10}\.example", fullmatch=True),
    path=st.from_regex(r"(/[a-z0-9]{1,8}){0,3}", fullmatch=True),
)
def test_url_label_never_keeps_userinfo(user: str, password: str, host: str, path: str) -> None:
    url = f"rtmp://{user}:{password}@{host}{path}"
    assert url_label(url, FP) == f"rtmp://{host}{path}"
    assert f"{user}:{password}" in url_secrets(url)


@given(key=st.text(min_size=8, max_size=64))
def test_fingerprint_is_twelve_hex_and_never_the_key(key: str) -> None:
    fp = FP(key)
    assert len(fp) == 12
    assert all(c in "0123456789abcdef" for c in fp)
    assert key not in fp


def test_a_password_with_an_at_sign_is_collected_whole() -> None:
    assert url_secrets("rtmp://u:p@ss@h.example/x") == ["u:p@ss", "p@ss"]
    assert url_label("rtmp://u:p@ss@h.example/x", FP) == "rtmp://h.example/x"
    assert url_secrets("rtmp://h.example/x@y") == []


def test_a_bare_url_user_name_is_not_a_secret() -> None:
    assert url_secrets("rtmp://live@h.example/x") == []
