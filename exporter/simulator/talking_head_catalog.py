"""The talking-head catalogue every simulated account offers: voices, models, backgrounds."""

from __future__ import annotations

from typing import Any

VOICES: dict[str, dict[str, Any]] = {
    "Alena": {"language": "ru-RU", "gender": "female", "name": "alena", "provider": "Yandex",
              "emotions": ["neutral", "good"]},
    "Filipp": {"language": "ru-RU", "gender": "male", "name": "filipp", "provider": "Yandex"},
    "Jane": {"language": "ru-RU", "gender": "female", "name": "jane", "provider": "Yandex",
             "emotions": ["neutral", "good", "evil"]},
    "Jenny": {"language": "en-US", "gender": "female", "name": "en-US-JennyNeural",
              "provider": "Azure", "emotions": ["neutral", "cheerful", "sad"]},
    "Guy": {"language": "en-US", "gender": "male", "name": "en-US-GuyNeural", "provider": "Azure"},
}  # fmt: skip

MODELS: dict[str, dict[str, dict[str, Any]]] = {
    "Natalia": {
        "1.0.0": {"style": "business", "gender": "female", "voices": ["Alena", "Jane", "Jenny"],
                  "shots": {"waist": {"size": "HD"}, "close": {"size": "FullHD"}}},
        "1.1.0": {"style": "casual", "gender": "female", "voices": ["Alena", "Jane", "Jenny"],
                  "shots": {"waist": {"size": "FullHD"}, "full": {"size": "4K"}}},
    },
    "Mikhail": {
        "2.0.1": {"style": "business", "gender": "male", "voices": ["Filipp", "Guy"],
                  "shots": {"waist": {"size": "HD"}, "close": {"size": "HD"}}},
    },
}  # fmt: skip

BACKGROUNDS: dict[str, dict[str, Any]] = {
    "green_screen": {"sizes": ["SD", "HD", "FullHD", "4K"]},
    "office": {"sizes": ["HD", "FullHD"]},
    "studio": {"sizes": ["FullHD", "4K"]},
}

SIZES = {"SD": (854, 480), "HD": (1280, 720), "FullHD": (1920, 1080), "4K": (3840, 2160)}


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


def versions_newest_first(actor: str) -> list[str]:
    return sorted(MODELS[actor], key=version_key, reverse=True)


def resolution(size: str, orientation: str) -> str:
    w, h = SIZES[size]
    if orientation == "vertical":
        w, h = h, w
    return f"{w}x{h}"
