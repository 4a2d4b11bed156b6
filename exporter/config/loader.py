"""Read YAML, expand ${VAR}, apply CDNVIDEO_* overrides, and refuse bad values by key."""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, get_type_hints

import yaml

from exporter.config.needed import needed
from exporter.config.rules import check_value, shown
from exporter.config.secretfiles import read_secret_files
from exporter.config.settings import (
    ENV_OVERRIDES,
    POD_NAME_ENV,
    SECTIONS,
    SHARD_ENV,
    SHARDS_ENV,
    TOP_LEVEL_KEYS,
    AccountSettings,
    AreaSection,
    ConfigError,
    Settings,
    Shard,
    declared_areas,
)

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_env(text: str, env: Mapping[str, str]) -> str:
    """Replace ``${VAR}`` and ``${VAR:-default}``; an unset variable becomes the default or ''."""
    return _VAR.sub(lambda m: env.get(m.group(1)) or (m.group(2) or ""), text)


class _Expanded(str):
    """A YAML string that held ``${VAR}``: its type comes from the key it fills.

    Expansion happens after parsing, so a secret full of YAML syntax (``p@ss #1: x``) is
    taken literally instead of being cut at ``#`` or breaking the document; a number such as
    ``timeout_seconds: ${TIMEOUT:-10}`` is still read as a number.
    """


def _expand_tree(node: Any, env: Mapping[str, str]) -> Any:
    if isinstance(node, str):
        return _Expanded(expand_env(node, env)) if _VAR.search(node) else node
    if isinstance(node, dict):
        return {k: _expand_tree(v, env) for k, v in node.items()}
    if isinstance(node, list):
        return [_expand_tree(v, env) for v in node]
    return node


def _typed(value: Any) -> Any:
    """The YAML value an expanded string stands for where a non-string is expected."""
    if not isinstance(value, _Expanded):
        return value
    text = str(value).strip()
    if not text:
        return None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def _hint(key: str, known: tuple[str, ...] | list[str]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


_shown = shown


def _coerce(value: Any, typ: Any, key: str, secret: bool = False) -> Any:
    got = _shown(value, secret)
    if typ is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{key}: expected true or false, got {got}")
    if typ is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key}: expected a whole number, got {got}")
        return value
    if typ is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{key}: expected a number, got {got}")
        try:
            number = float(value)  # an int beyond the float range overflows
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            raise ConfigError(f"{key}: expected a finite number, got {got}")
        return number
    if typ is str:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ConfigError(f"{key}: expected a string, got {got}")
        return str(value)
    if typ == int | tuple[int, ...]:  # one number, or a list of numbers
        if isinstance(value, list):
            for i, v in enumerate(value):
                _coerce(v, int, f"{key}[{i}]")
            return tuple(value)
        return _coerce(value, int, key)
    if isinstance(typ, type) and dataclasses.is_dataclass(typ):  # a section inside a section
        problems: list[str] = []
        inner = _section(typ, value, key, problems)
        if problems := [p for p in problems if not p.startswith(REFUSED)]:
            raise ConfigError.of(problems)
        return inner
    if typ == tuple[str, ...]:
        if isinstance(value, str) and value:  # a single name where a list was meant
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ConfigError(f"{key}: expected a list of non-empty strings, got {got}")
        return tuple(value)
    raise AssertionError(f"unsupported config type {typ!r}")  # pragma: no cover


def _section(cls: type[Any], raw: Any, prefix: str, errors: list[str]) -> Any:
    """The section from its mapping; each bad key is added to ``errors`` and left at its
    default, so the other keys are still read and checked."""
    if raw is None:
        raw = {}
    fields = {f.name: f for f in dataclasses.fields(cls)}
    if not isinstance(raw, dict):
        holds_secrets = any(f.metadata.get("secret") for f in fields.values())
        got = _shown(raw, holds_secrets, "the section holds secrets")
        errors += [f"{prefix}: expected a mapping, got {got}", f"{REFUSED}{prefix}"]
        return cls()
    hints = get_type_hints(cls)
    names = tuple(fields)
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in names:
            errors.append(f"{prefix}.{key}: unknown key{_hint(str(key), names)}")
            continue
        if hints[key] is not str:
            value = _typed(value)
        if value is None:
            continue
        secret = bool(fields[key].metadata.get("secret"))
        try:
            values[key] = _coerce(value, hints[key], f"{prefix}.{key}", secret)
        except ConfigError as exc:
            errors.extend(exc.problems)
            errors.append(f"{REFUSED}{prefix}.{key}")
    return cls(**values)


def _parse_shard(raw: Any, key: str = "shard") -> Shard:
    if raw is None:
        return Shard()
    text = str(raw)
    m = re.fullmatch(r"\s*([0-9]+)\s*/\s*([0-9]+)\s*", text)
    if not m:
        raise ConfigError(f"{key}: expected INDEX/COUNT such as 0/1, got {text!r}")
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1 or index >= count:
        raise ConfigError(
            f"{key}: index must be below the count (0 <= index < count), got {text!r}"
        )
    return Shard(index, count)


def _shard_of_pod(count: str, pod: str) -> Shard:
    """The shard of a StatefulSet pod: its ordinal (the digits after the name's last ``-``)
    modulo the shard count."""
    if not re.fullmatch(r"[0-9]+", count.strip()) or int(count) < 1:
        raise ConfigError(
            f"shard (from {SHARDS_ENV}): expected a whole number above 0, got {count!r}"
        )
    ordinal = pod.rpartition("-")[2]
    if not re.fullmatch(r"[0-9]+", ordinal):
        raise ConfigError(
            f"shard (from {SHARDS_ENV}): {POD_NAME_ENV} must end in the pod ordinal "
            f"(<name>-<number>), got {pod!r}"
        )
    return Shard(int(ordinal) % int(count), int(count))


def _parse_accounts(raw: Any, errors: list[str]) -> tuple[AccountSettings, ...] | None:
    """The accounts as typed sections (an item may be just the name); their rules are
    checked with every other field's (``rules.check_accounts`` and the fields' own)."""
    raw = _typed(raw)
    if raw is None:
        return None
    if not isinstance(raw, list):
        errors.append(f"accounts: expected a list of accounts, got {_shown(raw)}")
        return None
    return tuple(
        _section(
            AccountSettings,
            {"name": item} if isinstance(item, str) else item,
            f"accounts[{i}]",
            errors,
        )
        for i, item in enumerate(raw)
    )


def unset_references(
    node: Any, env: Mapping[str, str], key: str = "", needed: Callable[[str], bool] | None = None
) -> list[str]:
    """``KEY: ${VAR} is not set`` (or ``is set to empty``) for each reference without a
    default whose variable expands to nothing, at a key the config reads (``needed``, from
    ``exporter.config.needed``; every key when None)."""
    if isinstance(node, str):
        if needed is not None and key and not needed(key):
            return []
        return [
            f"{key or 'config'}: ${{{m.group(1)}}} "
            + ("is set to empty" if m.group(1) in env else "is not set")
            for m in _VAR.finditer(node)
            if m.group(2) is None and not env.get(m.group(1))
        ]
    if isinstance(node, dict):
        return [
            problem
            for k, v in node.items()
            for problem in unset_references(v, env, f"{key}.{k}" if key else str(k), needed)
        ]
    if isinstance(node, list):
        return [
            p for i, v in enumerate(node) for p in unset_references(v, env, f"{key}[{i}]", needed)
        ]
    return []


def unset_needed(raw: Any, env: Mapping[str, str], areas: Sequence[AreaSection[Any]]) -> list[str]:
    """``unset_references`` of the keys the enabled parts read (the ``CDNVIDEO_*`` overrides
    applied first: a key they fill is not empty)."""
    if not isinstance(raw, dict):
        return unset_references(raw, env)
    expanded = _overridden(_expand_tree(raw, env), env)
    return unset_references(raw, env, needed=needed(expanded, areas))


def _overridden(raw: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """``raw`` with the ``CDNVIDEO_*`` overrides set (a malformed section left as it is)."""
    raw = dict(raw)
    for var, (section, key) in ENV_OVERRIDES.items():
        if env.get(var):
            sec = raw.get(section)
            if sec is not None and not isinstance(sec, dict):
                continue  # _section reports the malformed section itself
            sec = dict(sec or {})
            sec[key] = env[var]
            raw[section] = sec
    return raw


def switch_areas(raw: Any, switched: Mapping[str, bool]) -> Any:
    """The document ``raw`` with each area of ``switched`` set ``enabled`` as it says (the
    command line's ``--collector.<area>`` / ``--no-collector.<area>``); a section that is no
    mapping is left for the loader to report."""
    if not switched or (raw is not None and not isinstance(raw, Mapping)):
        return raw
    raw = dict(raw or {})
    for name, on in switched.items():
        section = raw.get(name)
        if section is None or isinstance(section, Mapping):
            raw[name] = {**(section or {}), "enabled": on}
    return raw


def parse_config(
    raw: Any,
    env: Mapping[str, str] | None = None,
    areas: Sequence[AreaSection[Any]] | None = None,
    switched: Mapping[str, bool] | None = None,
) -> Settings:
    """Turn a parsed YAML document into validated settings.

    ``areas`` are the areas' sections (by default the registry's, ``declared_areas``): each
    is read from its top-level key into ``Settings.areas``, in their order, and its rule over
    the whole section runs with the fields' rules.

    ``${VAR}`` / ``${VAR:-default}`` inside string values expand from ``env`` (default: the
    process environment), then the ``CDNVIDEO_*`` overrides apply. Every problem is
    collected: the ConfigError raised names all of them (``problems``), each unset
    ``${VAR}`` first. ``switched`` sets areas' ``enabled`` over the document's
    (``switch_areas``).
    """
    env = os.environ if env is None else env
    areas = declared_areas() if areas is None else tuple(areas)
    unknown = sorted(set(switched or {}) - {a.name for a in areas})
    if unknown:
        names = ", ".join(a.name for a in areas)
        raise ConfigError(f"--collector.{unknown[0]}: no such area (areas: {names})")
    raw = switch_areas(raw, switched or {})
    unset = unset_needed(raw, env, areas)
    raw = _expand_tree(raw, env)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"config: expected a mapping at the top level, got {_shown(raw)}")
    errors: list[str] = []
    raw = dict(raw)
    known = (*TOP_LEVEL_KEYS, *(a.name for a in areas))
    for key in [k for k in raw if k not in known]:
        errors.append(f"{key}: unknown key{_hint(str(key), known)}")
        del raw[key]
    raw = _overridden(raw, env)
    raw, unread = read_secret_files(raw, needed(raw, areas), errors)
    errors += [REFUSED + key for key in unread]  # no "no credentials" after an unread file
    # upstream, the areas, then the others: the order of the sections in docs/configuration.md
    upstream = _section(SECTIONS["upstream"], raw.get("upstream"), "upstream", errors)
    declared = {a.name: _section(a.type, raw.get(a.name), a.name, errors) for a in areas}
    sections = {
        name: upstream if name == "upstream" else _section(cls, raw.get(name), name, errors)
        for name, cls in SECTIONS.items()
    }
    listen = _typed(raw.get("listen"))
    if listen is None:
        listen = Settings.listen
    if not isinstance(listen, str):
        errors.append(f"listen: expected HOST:PORT, got {listen!r}")
        listen = Settings.listen
    web_config_file = raw.get("web_config_file") or ""
    if not isinstance(web_config_file, str):
        errors.append(f"web_config_file: expected a file path, got {_shown(web_config_file)}")
        web_config_file = ""
    shard = Shard()
    try:
        if env.get(SHARD_ENV):
            shard = _parse_shard(env[SHARD_ENV], f"shard (from {SHARD_ENV})")
        elif env.get(SHARDS_ENV):
            shard = _shard_of_pod(env[SHARDS_ENV], env.get(POD_NAME_ENV, ""))
        else:
            shard = _parse_shard(raw.get("shard"))
    except ConfigError as exc:
        errors.extend(exc.problems)
    log = sections["log"]
    if log.level != log.level.lower():
        sections["log"] = dataclasses.replace(log, level=log.level.lower())
    settings = Settings(
        accounts=_parse_accounts(raw.get("accounts"), errors),
        listen=listen,
        web_config_file=str(web_config_file),
        shard=shard,
        areas=MappingProxyType(declared),
        **sections,
    )
    rule_errors: list[str] = []
    for f in dataclasses.fields(settings):
        if f.name == "areas":  # each area's section where the field stands, with its rule
            for a in areas:
                check_value(a.rule, a.name, declared[a.name], settings, rule_errors)
        else:
            rule = f.metadata.get("rule")
            check_value(rule, f.name, getattr(settings, f.name), settings, rule_errors)
    refused = {e.removeprefix(REFUSED) for e in errors if e.startswith(REFUSED)}
    errors = [e for e in errors if not e.startswith(REFUSED)]
    errors += [e for e in rule_errors if not _follows_from(e, refused)]
    if errors:
        raise ConfigError.of([*unset, *errors])
    return settings


# Marks a key whose value was refused while parsing (it is left at its default), so the rules
# that would then complain about that default are not reported too.
REFUSED = "\0refused:"


def _follows_from(problem: str, refused: set[str]) -> bool:
    """Whether a rule's ``problem`` is about a refused key or its section as a whole (the
    ``upstream: no credentials`` after ``upstream.token: expected a string``)."""
    key = problem.partition(":")[0]
    return key in refused or any(key == r.rpartition(".")[0] for r in refused)


def load_config(
    path: str | Path,
    env: Mapping[str, str] | None = None,
    areas: Sequence[AreaSection[Any]] | None = None,
    switched: Mapping[str, bool] | None = None,
) -> Settings:
    """Read a YAML config file, expand ``${VAR}`` in its values and validate it; each
    problem of the ConfigError names the file's line of its key where there is one;
    ``switched``: ``parse_config``'s."""
    env = os.environ if env is None else env
    raw, lines = read_document(path)
    try:
        return parse_config(raw, env, areas, switched)
    except ConfigError as exc:
        raise ConfigError.of([_at_line(p, lines) for p in exc.problems]) from None


def read_document(path: str | Path) -> tuple[Any, dict[str, int]]:
    """The parsed YAML of a config file (``${VAR}`` not expanded yet) and the line of each
    key (``upstream.token``, ``accounts[0].name``); ConfigError when it cannot be read."""
    where = f"config file {str(path)!r}"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{where}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    # ${VAR} becomes a plain word for the parser and is restored in the parsed strings, so a
    # reference works anywhere (also in {flow: ${X}} mappings) and an expanded value can never
    # change the document's structure.
    nonce = secrets.token_hex(4)
    refs: list[str] = []

    def protect(m: re.Match[str]) -> str:
        refs.append(m.group(0))
        return f"cdnvideo{nonce}ref{len(refs) - 1}x"

    protected = _VAR.sub(protect, text)
    try:
        raw = yaml.safe_load(protected)
        lines = _key_lines(yaml.compose(protected, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{where}: {problem}{at}") from None
    except (ValueError, RecursionError) as exc:  # e.g. a date such as 2026-13-01
        raise ConfigError(f"{where}: invalid YAML value ({exc})") from None
    placeholder = re.compile(f"cdnvideo{nonce}ref([0-9]+)x")
    try:
        return _restore(raw, placeholder, refs), lines
    except RecursionError:  # an alias inside itself (a: &a [*a]), or absurd nesting
        raise ConfigError(f"{where}: a value contains itself or nests too deeply") from None


def _key_lines(node: yaml.Node | None, prefix: str = "", depth: int = 0) -> dict[str, int]:
    """The 1-based line of every key and list item in a composed YAML document."""
    out: dict[str, int] = {}
    if node is None or depth > 20:
        return out
    if isinstance(node, yaml.MappingNode):
        for key_node, value in node.value:
            key = f"{prefix}.{key_node.value}" if prefix else str(key_node.value)
            out[key] = key_node.start_mark.line + 1
            out.update(_key_lines(value, key, depth + 1))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            key = f"{prefix}[{i}]"
            out[key] = item.start_mark.line + 1
            out.update(_key_lines(item, key, depth + 1))
    return out


_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\[\]]*")
_LAST_PART = re.compile(r"(\.[^.\[\]]+|\[[0-9]+\])$")  # accounts[0].name -> accounts[0]


def _at_line(problem: str, lines: dict[str, int]) -> str:
    """``problem`` with `` (line N)`` of its key, or of the nearest enclosing key written in
    the file; unchanged when the file has neither."""
    head = _KEY.match(problem)
    if head is None or problem[head.end() : head.end() + 1] != ":":
        return problem
    key = head.group(0)
    while key not in lines:
        parent = _LAST_PART.sub("", key)
        if parent == key:
            return problem
        key = parent
    return f"{problem} (line {lines[key]})"


def _restore(node: Any, placeholder: re.Pattern[str], refs: list[str]) -> Any:
    if isinstance(node, str):
        return placeholder.sub(lambda m: refs[int(m.group(1))], node)
    if isinstance(node, dict):
        return {
            _restore(k, placeholder, refs): _restore(v, placeholder, refs) for k, v in node.items()
        }
    if isinstance(node, list):
        return [_restore(v, placeholder, refs) for v in node]
    return node
