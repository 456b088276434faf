"""The signed file format of a saved :class:`~blowfish_nb.accounting.Session`: keys, MACs, verification, validation.

A saved session is canonical JSON with an HMAC-SHA256 per section (the
session id, budget, domain, policies, keyed data fingerprint, reproducible
flag), one per ledger entry (bound to its index) and one over the entry count,
under a key the curator holds (``key=``, ``$BLOWFISH_SESSION_KEY`` or a file
named by ``$BLOWFISH_SESSION_KEY_FILE``). :func:`write` signs and writes a
state atomically; :func:`read` refuses any edit, naming what changed;
``_validated`` checks every value even when the codes verify. What a
session *does* with its budget is in :mod:`blowfish_nb.accounting`.

Examples
--------
>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "s.json")
>>> key = session_key("the curator's secret key")
>>> state = {"format": FORMAT, "session": "ab", "counter": 1, "budget": 1.0, "domain": {}, "policies": {},
...          "fingerprint": "", "reproducible": False, "ledger": []}
>>> write(path, state, key)
>>> read(path, key)["budget"]
1.0
>>> state["budget"] = 100.0; write(path, state, key)
>>> with open(path) as f: edited = f.read().replace("100.0", "1000.0")
>>> with open(path, "w") as f: _ = f.write(edited)
>>> read(path, key)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
blowfish_nb.exceptions.SessionError: ... was edited after it was saved: the budget was edited. It is refused
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import secrets
import warnings
from collections.abc import Mapping
from numbers import Real
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .domain import Domain
from .exceptions import BlowfishError, PolicyError, PrivacyLeakWarning, SessionError, InvalidParameterError
from .policy import Policy

__all__ = ["KEY_ENV", "KEY_FILE_ENV", "FORMAT", "LEDGER_COLUMNS", "MIN_KEY_BYTES", "session_key", "write", "read"]

#: spending within this of the budget counts as exact (sums of floats)
TOLERANCE = 1e-12
#: environment variable holding the curator's session key
KEY_ENV = "BLOWFISH_SESSION_KEY"
#: environment variable naming a file that holds the curator's session key
KEY_FILE_ENV = "BLOWFISH_SESSION_KEY_FILE"
#: format tag of saved sessions (version 2: signed; version 3: a signed save counter)
FORMAT = "blowfish_nb.session/3"
#: shortest key accepted, in bytes
MIN_KEY_BYTES = 16
#: the columns of the ledger, in order (one saved entry holds exactly these fields)
LEDGER_COLUMNS = ("time", "query", "columns", "epsilon", "policy", "mechanism", "expected_error", "accuracy",
                  "reproducible")
_SECTIONS = ("session", "counter", "budget", "domain", "policies", "fingerprint", "reproducible")
_EDITED = {"session": "the session id was edited", "counter": "the save counter was edited",
           "budget": "the budget was edited",
           "domain": "the domain (bins) was edited", "policies": "the policies were edited",
           "fingerprint": "the data fingerprint was edited", "reproducible": "the reproducible flag was edited"}
_FIELDS = {"format", *_SECTIONS, "ledger", "integrity"}
_NO_KEY = (
    "no session key: saved sessions are signed (HMAC-SHA256) so that an edited budget or ledger is detected. "
    f"Pass key=..., set ${KEY_ENV} to a secret of at least {MIN_KEY_BYTES} bytes, or set ${KEY_FILE_ENV} to a "
    "file holding one (e.g. python -c 'import secrets; print(secrets.token_hex(32))' > session.key; "
    "chmod 600 session.key). The curator keeps the key; the analyst must not hold it"
)


def session_key(key: bytes | str | None = None) -> bytes:
    """The curator's signing key: ``key``, else ``$BLOWFISH_SESSION_KEY``, else the file ``$BLOWFISH_SESSION_KEY_FILE``.

    Raises
    ------
    SessionError
        No key anywhere, an unreadable key file, or a key from the environment shorter than 16 bytes.
    InvalidParameterError
        ``key`` is not bytes/str or is shorter than 16 bytes (the key itself is never printed).

    Examples
    --------
    >>> len(session_key("0123456789abcdef"))
    16
    """
    if key is not None:
        if isinstance(key, str):
            raw = key.encode("utf-8")
        elif isinstance(key, (bytes, bytearray, memoryview)):
            raw = bytes(key)
        else:
            raise InvalidParameterError(f"key must be bytes or str, got a {type(key).__name__}")
        if len(raw) < MIN_KEY_BYTES:
            raise InvalidParameterError(f"key must be at least {MIN_KEY_BYTES} bytes long, got {len(raw)} bytes")
        return raw
    if os.environ.get(KEY_ENV):
        raw, source = os.environ[KEY_ENV].encode("utf-8"), f"${KEY_ENV}"
    elif os.environ.get(KEY_FILE_ENV):
        name = os.environ[KEY_FILE_ENV]
        try:
            raw = Path(name).read_bytes().strip()
        except OSError as exc:
            raise SessionError(f"cannot read the session key file {name!r} named by ${KEY_FILE_ENV}: "
                               f"{exc.strerror or exc}") from None
        source = f"the key file {name!r}"
    else:
        raise SessionError(_NO_KEY)
    if len(raw) < MIN_KEY_BYTES:
        raise SessionError(f"the session key in {source} must be at least {MIN_KEY_BYTES} bytes long, "
                           f"got {len(raw)} bytes")
    return raw



def write(path, state: dict, key: bytes) -> None:
    """Sign ``state`` (canonical JSON, a MAC per section and per entry) and write it atomically to ``path``."""
    state = json.loads(_canonical(state))  # exactly what read will give back
    state["integrity"] = _integrity(state, key)
    target = Path(path)
    partial = target.with_name(f".{target.name}.{secrets.token_hex(4)}.partial")
    try:
        partial.write_text(json.dumps(state, indent=1))
        os.replace(partial, target)  # a crash mid-write leaves the previous file, never half of one
    finally:
        partial.unlink(missing_ok=True)


def read(path, key: bytes) -> dict:
    """The state saved in ``path``, its integrity codes verified (any edit refused, naming what changed)."""
    where = str(path)
    try:
        state = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise SessionError(f"cannot read a session from {where!r}: {exc}") from None
    if not isinstance(state, dict) or not str(state.get("format", "")).startswith("blowfish_nb.session/"):
        raise SessionError(f"{where!r} is not a saved blowfish_nb session")
    if state["format"] != FORMAT:
        raise SessionError(
            f"{where!r} is a {state['format']!r} file, saved without an integrity code (or by another version): "
            f"its budget and ledger cannot be verified, so it is refused; this version reads {FORMAT!r}"
        )
    _verify(state, key, where)
    return state


# -- integrity ----------------------------------------------------------------------------
def _canonical(value: Any) -> bytes:
    """Canonical JSON (sorted keys, fixed separators, ASCII): the bytes that are MACed."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def _mac(key: bytes, session: str, section: str, value: Any) -> str:
    """HMAC-SHA256 of one section, bound to the format, the session id and the section's name."""
    message = _canonical({"format": FORMAT, "session": session, "section": section, "value": value})
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def _keyed_fingerprint(key: bytes, fingerprint: str) -> str:
    """The data fingerprint as saved: keyed, so the file does not show the row count."""
    return "hmac-sha256:" + hmac.new(key, b"blowfish_nb fingerprint\0" + fingerprint.encode("utf-8"),
                                     hashlib.sha256).hexdigest()


def _integrity(state: dict, key: bytes) -> dict:
    sid, ledger = state["session"], state["ledger"]
    return {
        "algorithm": "HMAC-SHA256",
        "sections": {s: _mac(key, sid, s, state[s]) for s in _SECTIONS},
        "entries": len(ledger),
        "count": _mac(key, sid, "ledger count", len(ledger)),
        "ledger": [_mac(key, sid, f"ledger entry {i}", e) for i, e in enumerate(ledger)],
    }


def _same(stored: Any, computed: str) -> bool:
    return isinstance(stored, str) and hmac.compare_digest(stored.encode("ascii", "replace"), computed.encode("ascii"))


def _verify(state: dict, key: bytes, where: str) -> None:
    """Refuse any edit of a saved session, naming what changed (sections, entries, their count)."""
    integrity = state.get("integrity")
    if not isinstance(integrity, dict) or integrity.get("algorithm") != "HMAC-SHA256":
        raise SessionError(f"{where!r} carries no integrity code: it was not signed by save(), or the code was "
                           "removed; it is refused")
    unknown = sorted(set(state) - _FIELDS)
    if unknown:
        raise SessionError(f"{where!r} has fields a saved session does not have: {unknown}; it was edited")
    sid = state.get("session")
    if not isinstance(sid, str):
        sid = ""
    stored = integrity.get("sections") if isinstance(integrity.get("sections"), dict) else {}
    ok = {s: s in state and _same(stored.get(s), _mac(key, sid, s, state[s])) for s in _SECTIONS}
    ledger = state.get("ledger")
    macs = integrity.get("ledger") if isinstance(integrity.get("ledger"), list) else []
    count = integrity.get("entries")
    count_ok = (isinstance(count, int) and not isinstance(count, bool) and count >= 0
                and _same(integrity.get("count"), _mac(key, sid, "ledger count", count)))
    problems = [_EDITED[s] for s in _SECTIONS if not ok[s]]
    if not isinstance(ledger, list):
        problems.append("the ledger was replaced by something that is not a list of entries")
        ledger = []
    # which saved entry (by its index, bound into its code) each entry found is
    stored_macs = {m for m in macs if isinstance(m, str)}
    span = count if count_ok else max(len(macs), len(ledger))
    matched: list[int | None] = []
    for i, e in enumerate(ledger):
        order = [i, *(j for j in range(span) if j != i)]
        matched.append(next((j for j in order if _mac(key, sid, f"ledger entry {j}", e) in stored_macs), None))
    if not any(ok.values()) and not count_ok and not any(j is not None for j in matched):
        raise SessionError(
            f"the integrity code of {where!r} does not verify under this key: it was signed with another key, or "
            "rewritten as a whole; nothing in it can be trusted"
        )
    n = len(ledger)
    edited = [i for i, j in enumerate(matched) if j is None]
    for i in edited:
        problems.append(f"the ledger was edited (entry {i + 1} of {n})")
    intact = [j for j in matched if j is not None]
    if not count_ok:
        problems.append("the ledger's entry count was edited")
    else:
        # a saved entry is missing when no entry found is it, and no edited entry stands in its place
        missing = [j for j in range(count) if j not in intact and not (j in edited and n <= count)]
        if missing:
            which = ", ".join(str(j + 1) for j in missing)
            problems.append(f"entries were removed from the ledger ({len(missing)} of {count} saved entries "
                            f"missing: entry {which})")
        if n > count and not edited and len(set(intact)) == len(intact):
            problems.append(f"entries were added to the ledger ({n} found, {count} saved)")
    repeated = sorted({j for j in intact if intact.count(j) > 1})
    if repeated:
        problems.append("entries were added to the ledger (saved entry "
                        + ", ".join(str(j + 1) for j in repeated) + " appears twice)")
    if any(b <= a for a, b in zip(intact, intact[1:])) and not repeated:
        problems.append("the ledger was reordered")
    if problems:
        raise SessionError(f"{where!r} was edited after it was saved: " + "; ".join(dict.fromkeys(problems))
                           + ". It is refused")


# -- validation of loaded values (even under a valid code) --------------------------------
def _validated(state: dict, where: str):
    """(session id, budget, reproducible, attributes, policies, entries), every value checked."""
    from .planning import CELL_LIMIT, too_many_cells

    def bad(what: str) -> SessionError:
        return SessionError(f"{where!r}: {what}; the file is refused")

    sid = state.get("session")
    if not isinstance(sid, str) or not sid:
        raise bad("the session id must be a non-empty string")
    budget = state.get("budget")
    if not _finite_positive(budget):
        raise bad(f"the budget must be a positive finite number, got {budget!r}")
    budget = float(budget)
    reproducible = state.get("reproducible")
    if not isinstance(reproducible, bool):
        raise bad(f"the reproducible flag must be true or false, got {reproducible!r}")
    try:
        domain = Domain.from_dict(state.get("domain"))
    except (BlowfishError, TypeError, ValueError, KeyError, AttributeError):
        raise bad("the domain is not a valid domain description") from None
    attributes = {a.name: a for a in domain.attributes}
    if len(attributes) != len(domain.attributes):
        raise bad("the domain names a column twice")
    for c, a in attributes.items():
        if a.size > CELL_LIMIT:
            raise bad(too_many_cells([c], a.size))
    raw = state.get("policies")
    if not isinstance(raw, dict) or set(raw) != set(attributes):
        raise bad(f"the policies must give one policy per column {list(attributes)}")
    pols = {}
    for c in attributes:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyLeakWarning)
                p = Policy.from_dict(raw[c])
        except PolicyError as exc:
            raise bad(f"the policy of column {c!r} is not a known policy ({exc})") from None
        except (BlowfishError, TypeError, ValueError, KeyError, AttributeError):
            raise bad(f"the policy of column {c!r} is not a valid policy description") from None
        if p.domain != Domain([attributes[c]]):
            raise bad(f"the policy of column {c!r} is over other bins than the column's")
        if p.edge_count() == 0:
            raise bad(f"the policy of column {c!r} ({p.summary()}) has no edge: it protects no pair of values")
        pols[c] = p
    if not isinstance(state.get("fingerprint"), str):
        raise bad("the data fingerprint must be a string")
    ledger = state.get("ledger")
    if not isinstance(ledger, list):
        raise bad("the ledger must be a list of entries")
    entries = [_validated_entry(e, i, len(ledger), attributes, reproducible, bad) for i, e in enumerate(ledger)]
    spent = math.fsum(e["epsilon"] for e in entries)
    if spent > budget + TOLERANCE:
        raise bad(f"the ledger spends ε = {spent:.4g}, more than the budget {budget:g}")
    return sid, budget, reproducible, attributes, pols, entries


def _validated_entry(e, i: int, n: int, attributes: Mapping, reproducible: bool, bad) -> dict:
    at = f"ledger entry {i + 1} of {n}"
    if not isinstance(e, dict) or set(e) != set(LEDGER_COLUMNS):
        raise bad(f"{at} must have exactly the fields {list(LEDGER_COLUMNS)}")
    if not _finite_positive(e["epsilon"]):
        raise bad(f"{at}: epsilon must be a positive finite number, got {e['epsilon']!r}")
    for field in ("time", "query", "columns", "policy", "mechanism"):
        if not isinstance(e[field], str):
            raise bad(f"{at}: {field} must be a string")
    if any(c not in attributes for c in e["columns"].split(", ")):
        raise bad(f"{at}: columns {e['columns']!r} are not all columns of the session")
    x = e["expected_error"]
    if x is not None and not (_finite_positive(x) or (_number(x) and float(x) == 0.0)):
        raise bad(f"{at}: expected_error must be empty or a finite number ≥ 0, got {x!r}")
    acc = e["accuracy"]
    if acc is not None and not (isinstance(acc, list) and len(acc) == 2 and all(_finite_positive(v) for v in acc)):
        raise bad(f"{at}: accuracy must be empty or [alpha, beta], got {acc!r}")
    if e["reproducible"] is not reproducible:
        raise bad(f"{at}: reproducible must be {str(reproducible).lower()}, as the session's flag")
    return dict(e, epsilon=float(e["epsilon"]))


def _number(v) -> bool:
    return isinstance(v, Real) and not isinstance(v, (bool, np.bool_))


def _finite_positive(v) -> bool:
    return _number(v) and math.isfinite(float(v)) and float(v) > 0


def _fingerprint(data, columns: list[str]) -> str:
    """Row count and a hash of the session's columns; the same for a pandas frame and a Dask frame of it."""
    if isinstance(data, pd.DataFrame):
        parts = [_hash_parts(data[columns])]
    else:
        per = data[columns].map_partitions(lambda p: pd.DataFrame([_hash_parts(p)], columns=["hi", "lo", "n"]),
                                           meta={"hi": "int64", "lo": "int64", "n": "int64"})
        parts = [tuple(int(v) for v in row) for row in per.compute().itertuples(index=False)]
    hi, lo, n = (sum(p[i] for p in parts) for i in range(3))
    h = ((hi << 32) + lo) % (1 << 64)
    return f"{n}:{','.join(columns)}:{h:016x}"


def _hash_parts(frame: pd.DataFrame) -> tuple[int, int, int]:
    """Sums of the high and low 32-bit halves of the row hashes (no overflow below 2^31 rows), and the row count."""
    h = pd.util.hash_pandas_object(frame, index=False).to_numpy(dtype=np.uint64)
    return int((h >> np.uint64(32)).sum()), int((h & np.uint64(0xFFFFFFFF)).sum()), len(frame)
