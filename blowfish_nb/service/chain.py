"""The ledger's keyed hash chain: the key, each event's HMAC, and the signed head kept in two places.

Event ``seq`` of a ledger carries ``hash = HMAC-SHA256(key, "event" 0x00
prev 0x00 fields)``, where ``fields`` is the canonical JSON of its other
fields (seq included) and ``prev`` the hash of event ``seq − 1``; the
``prev`` of event 1 is ``HMAC-SHA256(key, "genesis" 0x00 ledger id)``, so
events cannot be moved from one ledger to another. Without
the key nobody can write an event, re-chain a history, or sign a head.

The key is a text of at least :data:`MIN_KEY_LENGTH` printable ASCII
characters, read from a key file (``key_file=``: mode 0600, owned by this
user, outside the ledger's folder) or from ``$BLOWFISH_LEDGER_KEY``.

The head — ledger id, event count and last hash, signed with the key — is
written after every commit beside the database (``<ledger>.head``) and, when
the key comes from a file, a second time in the key's folder
(``<key file>.<ledger id>.head``, the *witness*). The witness catches what
an attacker who can write the ledger's folder but not the key's can do with
genuine material: put back an older copy of the database and its head (a
rollback), delete both, or point the service at an old copy elsewhere.

Examples
--------
>>> import os, tempfile
>>> key = load_key(new_key_file(os.path.join(tempfile.mkdtemp(), "ledger.key")),
...                ledger=os.path.join(tempfile.mkdtemp(), "ledger.db"))
>>> len(key.event_hash(key.genesis("0" * 32), '{"seq":1}'))
64
>>> key
LedgerKey(from key file)
"""

from __future__ import annotations

import glob
import hashlib
import hmac
import json
import os
import re
import secrets
import stat

from ..exceptions import InvalidParameterError, SessionError

__all__ = ["LedgerIntegrityError", "LedgerKey", "load_key", "new_key_file", "KEY_ENV", "MIN_KEY_LENGTH", "Head", "read_head", "write_head",
           "witness_path", "witnesses_of", "canonical"]

#: the environment variable that may hold the key (a key file, when named, wins)
KEY_ENV = "BLOWFISH_LEDGER_KEY"
#: the shortest key accepted, in characters (``new_key_file`` writes 64 hex digits: 256 bits)
MIN_KEY_LENGTH = 32

_KEY_TEXT = re.compile(r"[\x21-\x7e]+")
_HEAD = "blowfish_nb ledger head 2\nledger {}\ncount {:020d}\nhash {}\nmac {}\npath {}\n"
_HEAD_RE = re.compile(r"blowfish_nb ledger head 2\nledger ([0-9a-f]{32})\ncount (\d{20})\nhash ([0-9a-f]{64})\n"
                      r"mac ([0-9a-f]{64})\npath (\"[^\n]*\")\n")


class LedgerIntegrityError(SessionError):
    """The ledger's database disagrees with its chain, its own rules or its signed heads: it was edited."""


class LedgerKey:
    """The secret of a ledger's chain; computes event hashes and head signatures (never shows the secret).

    Made by :func:`load_key`. ``source`` says where the key came from (for messages); ``file`` is the key
    file's absolute path, or None when the key came from ``$BLOWFISH_LEDGER_KEY`` (then there is no witness).
    """

    def __init__(self, secret: bytes, source: str, file: str | None):
        self._secret = secret
        self.source = source
        self.file = file
        self.created = False

    def event_hash(self, prev: str, fields: str) -> str:
        """HMAC of one event: its predecessor's hash and the canonical JSON of its fields."""
        return self._mac(b"event", str(prev).encode("utf-8", "replace"), fields.encode("ascii"))

    def genesis(self, ledger_id: str) -> str:
        """The ``prev`` of event 1 of the ledger ``ledger_id``."""
        return self._mac(b"genesis", ledger_id.encode("ascii"))

    def check_value(self, ledger_id: str) -> str:
        """What the ledger stores to tell a wrong key from an edited chain."""
        return self._mac(b"key check", ledger_id.encode("ascii"))

    def head_mac(self, ledger_id: str, count: int, last: str) -> str:
        """The signature of a head (the ledger, its event count and its last hash)."""
        return self._mac(b"head", ledger_id.encode("ascii"), str(count).encode("ascii"), last.encode("ascii"))

    def _mac(self, *parts: bytes) -> str:
        return hmac.new(self._secret, b"\x00".join(parts), hashlib.sha256).hexdigest()

    def __repr__(self) -> str:
        return f"LedgerKey(from {'key file' if self.file else KEY_ENV})"

    def __reduce__(self):
        raise TypeError("a ledger key is not pickled")


class Head:
    """A signed head as read from a head file: ``ledger`` id, ``count``, ``hash``, ``mac`` and the ledger's ``path``."""

    def __init__(self, ledger: str, count: int, hash: str, mac: str, path: str):
        self.ledger, self.count, self.hash, self.mac, self.path = ledger, count, hash, mac, path

    def signed_by(self, key: LedgerKey) -> bool:
        """Whether ``key`` signed this head."""
        return hmac.compare_digest(self.mac, key.head_mac(self.ledger, self.count, self.hash))


def load_key(key_file=None, *, ledger, create: bool = False) -> LedgerKey:
    """The key of the ledger at ``ledger``: from ``key_file`` when given, else from ``$BLOWFISH_LEDGER_KEY``.

    With ``create``, a missing ``key_file`` is written first (:func:`new_key_file`); ``key.created`` says so.

    Raises
    ------
    InvalidParameterError
        ``key_file`` is missing, not a regular file, inside the ledger's folder, readable or writable by
        others (mode not 0600), owned by another user, or holds no key of :data:`MIN_KEY_LENGTH` characters.
    SessionError
        No key at all (no ``key_file`` and no ``$BLOWFISH_LEDGER_KEY``).
    """
    if key_file is None:
        text = os.environ.get(KEY_ENV)
        if text is None:
            raise SessionError(f"no ledger key: name a key file (key_file=..., or --key FILE on the command line; "
                               f"blowfish-nb init --key FILE makes one) or set ${KEY_ENV}. The key signs the "
                               "ledger's chain; keep it outside the ledger's folder")
        return LedgerKey(_secret(text, f"${KEY_ENV}"), f"${KEY_ENV}", None)
    if not isinstance(key_file, (str, os.PathLike)):
        raise InvalidParameterError(f"key_file must be a path, got {type(key_file).__name__}")
    path = os.path.abspath(os.fspath(key_file))
    folder = os.path.realpath(os.path.dirname(os.path.abspath(os.fspath(ledger))))
    if os.path.commonpath([os.path.realpath(path), folder]) == folder:
        raise InvalidParameterError(f"key_file {path!r} is inside the ledger's folder {folder!r}: whoever can "
                                    "write the ledger could read the key and re-sign a rewritten history. Keep the "
                                    "key in a folder of its own")
    created = False
    if create and not os.path.lexists(path):
        created = bool(new_key_file(path))
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InvalidParameterError(f"key_file {path!r} does not exist (blowfish-nb init --key FILE, or "
                                    "serve(..., create=True) for a new ledger, writes a new key there)") from None
    if not stat.S_ISREG(info.st_mode):
        raise InvalidParameterError(f"key_file {path!r} is not a regular file")
    if info.st_mode & 0o077:
        raise InvalidParameterError(f"key_file {path!r} has loose permissions {stat.S_IMODE(info.st_mode):#o}: "
                                    f"others may read or replace the key; run chmod 600 {path}")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise InvalidParameterError(f"key_file {path!r} belongs to another user (uid {info.st_uid})")
    with open(path, encoding="ascii", errors="replace") as file:
        text = file.read(4096)
    key = LedgerKey(_secret(text, f"key_file {path!r}"), f"key file {path!r}", path)
    key.created = created
    return key


def new_key_file(path) -> str:
    """Write a new random key (64 hex digits) to ``path`` with mode 0600 and return its absolute path.

    An existing file is never overwritten (a lost key makes its ledger unverifiable).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidParameterError(f"key_file must be a path, got {type(path).__name__}")
    path = os.path.abspath(os.fspath(path))
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise InvalidParameterError(f"key_file {path!r} exists already; a key is never overwritten") from None
    except OSError as error:
        raise InvalidParameterError(f"key_file {path!r} cannot be written: {error.strerror or error}") from None
    try:
        os.write(fd, (secrets.token_hex(32) + "\n").encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def read_head(path: str, what: str) -> Head | None:
    """The head stored at ``path`` (None when there is no file); an unreadable file is reported as edited."""
    try:
        with open(path, "rb") as file:
            data = file.read(8192)
    except FileNotFoundError:
        return None
    match = _HEAD_RE.fullmatch(data.decode("ascii", "replace"))
    if match is None:
        raise LedgerIntegrityError(f"the {what} {path!r} is unreadable (it was edited or is of an older format): "
                                   f"{data[:120]!r}")
    ledger, count, last, mac, where = match.groups()
    try:
        where = json.loads(where)
    except ValueError:
        raise LedgerIntegrityError(f"the {what} {path!r} is unreadable (it was edited)") from None
    return Head(ledger, int(count), last, mac, str(where))


def write_head(path: str, key: LedgerKey, ledger_id: str, count: int, last: str, ledger_path: str,
               *, force: bool = False) -> None:
    """Sign and write a head at ``path``, unless the file holds a later one (``force``: write it anyway).

    One write at offset 0 then a truncate; a new file is synced once so that it is never found empty.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        current = _HEAD_RE.fullmatch(os.read(fd, 8192).decode("ascii", "replace"))
        if not force and current is not None and current.group(1) == ledger_id and int(current.group(2)) >= count:
            return
        text = _HEAD.format(ledger_id, count, last, key.head_mac(ledger_id, count, last),
                            json.dumps(os.path.realpath(ledger_path))).encode("ascii")
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, text)
        os.ftruncate(fd, len(text))
        if current is None:
            os.fsync(fd)
    finally:
        os.close(fd)


def witness_path(key: LedgerKey, ledger_id: str) -> str | None:
    """Where the witness head of ledger ``ledger_id`` lives (None for a key from the environment: no witness)."""
    return None if key.file is None else f"{key.file}.{ledger_id}.head"


def witnesses_of(key: LedgerKey, ledger_path: str) -> list[Head]:
    """The witness heads in the key's folder that were written for a ledger at ``ledger_path`` (signed by ``key``)."""
    if key.file is None:
        return []
    where = os.path.realpath(ledger_path)
    found = []
    for name in glob.glob(glob.escape(key.file) + ".*.head"):
        try:
            head = read_head(name, "witness head")
        except Exception:  # noqa: BLE001 (a stray file in the key's folder is not this ledger's witness)
            continue
        if head is not None and head.path == where and head.signed_by(key):
            found.append(head)
    return found


def canonical(value, name: str) -> str:
    """Canonical JSON (sorted keys, fixed separators, ASCII, no NaN); refuses what is not plain JSON."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InvalidParameterError(f"{name} must hold plain JSON values (str, finite numbers, bool, None, lists, "
                                    f"dicts with str keys): {error}") from None


def _secret(text: str, where: str) -> bytes:
    text = text.strip()
    if len(text) < MIN_KEY_LENGTH or not _KEY_TEXT.fullmatch(text):
        raise InvalidParameterError(f"{where} must hold a key of at least {MIN_KEY_LENGTH} printable ASCII "
                                    f"characters without spaces (got {len(text)} characters); "
                                    "python -c 'import secrets; print(secrets.token_hex(32))' makes one")
    return text.encode("ascii")
