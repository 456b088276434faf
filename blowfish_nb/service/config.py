"""The curator's service configuration: a TOML or YAML file (or a dict) → the arguments of :class:`Service`.

.. code-block:: toml

    [data]
    path = "grades.csv"            # CSV or Parquet; "embedded:salaries" serves the generated demo data
    dask = false                   # true: read it with dask.dataframe (bounds then must be given)

    [columns.age]
    bins = 62
    bounds = [18, 80]
    policy = "line"

    [columns.salary]
    bins = 50
    bounds = [0, 250000]
    policy = { name = "threshold", theta = 3 }

    [ledger]
    path = "ledger.db"             # relative paths are relative to the configuration file
    key = "../keys/ledger.key"     # the ledger's key file (0600, outside the ledger's folder); else --key or
                                   # $BLOWFISH_LEDGER_KEY

    [accounts]                     # account → total ε
    course = 2.0

    [analysts]                     # analyst → account (several analysts on one account share its budget)
    ana = "course"

    [server]
    host = "127.0.0.1"
    port = 8765
    rate = 50                      # requests a second per analyst (bursts of `burst`)
    burst = 100
    max_body = 65536               # largest request body, in bytes
    client_rate = 200              # requests a second per client address, before any token check
    client_burst = 400
    auth_rate = 1                  # failed authentications a second per address (then 429 for the address)
    auth_burst = 10
    header_timeout = 10            # seconds to send a request head
    idle_timeout = 10              # seconds a connection may stall in a body or between requests

Every value is checked when the file is read (types included: ``dask =
"no"`` is refused, not read as true); an error names the key and the value.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..exceptions import InvalidParameterError
from .app import MAX_BODY
from .launch import check_host, check_port
from .limits import Limits, RateLimiter, check_max_body

__all__ = ["ServiceConfig", "load_config"]

_SECTIONS = {"data", "columns", "ledger", "accounts", "analysts", "server"}
_COLUMN_KEYS = {"bins", "bounds", "policy"}
_LIMIT_KEYS = {"client_rate", "client_burst", "auth_rate", "auth_burst", "header_timeout", "idle_timeout"}
_SERVER_KEYS = {"host", "port", "rate", "burst", "max_body", *_LIMIT_KEYS}


@dataclass
class ServiceConfig:
    """Everything ``blowfish-nb serve`` needs, checked."""

    data_path: str
    dask: bool
    bins: dict[str, Any]
    bounds: dict[str, Any]
    policy: dict[str, Any]
    ledger: str
    accounts: dict[str, float] = field(default_factory=dict)
    #: the ledger's key file (None: ``--key`` or ``$BLOWFISH_LEDGER_KEY``)
    key_file: str | None = None
    analysts: dict[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 8765
    rate: float = 50.0
    burst: int = 100
    max_body: int = MAX_BODY
    limits: Limits = field(default_factory=Limits)

    def load_data(self):
        """The data frame the configuration names (pandas, or Dask when ``dask = true``)."""
        if self.data_path.startswith("embedded:"):
            from .. import datasets

            name = self.data_path.split(":", 1)[1]
            if name != "salaries":
                raise InvalidParameterError(f"data.path: the embedded data set is 'embedded:salaries', got {name!r}")
            return datasets.salaries()
        path = Path(self.data_path)
        if not path.exists():
            raise InvalidParameterError(f"data.path: no file {str(path)!r}")
        suffix = path.suffix.lower()
        if suffix not in (".csv", ".parquet", ".pq"):
            raise InvalidParameterError(f"data.path must be a .csv or .parquet file, got {str(path)!r}")
        if self.dask:
            import dask.dataframe as dd

            return dd.read_csv(str(path)) if suffix == ".csv" else dd.read_parquet(str(path))
        import pandas as pd

        return pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)


def load_config(source) -> ServiceConfig:
    """Read a ``.toml``, ``.yaml``/``.yml`` file, or take a dict, and check every key.

    Examples
    --------
    >>> c = load_config({"data": {"path": "embedded:salaries"}, "columns": {"age": {"bins": 62, "policy": "line"}},
    ...                  "ledger": {"path": "l.db"}, "accounts": {"course": 1.0}, "analysts": {"ana": "course"}})
    >>> c.bins, c.policy, c.accounts
    ({'age': 62}, {'age': 'line'}, {'course': 1.0})
    """
    base = Path(".")
    if isinstance(source, Mapping):
        raw = dict(source)
    elif isinstance(source, (str, os.PathLike)) and not isinstance(source, bytes):
        path = Path(source)
        base = path.parent
        if not path.exists():
            raise InvalidParameterError(f"config: no file {str(path)!r}")
        if path.is_dir():
            raise InvalidParameterError(f"config must be a .toml or .yaml file, got the folder {str(path)!r}")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidParameterError(f"config: cannot read {str(path)!r}: {getattr(exc, 'strerror', None) or exc}"
                                        ) from None
        if path.suffix.lower() == ".toml":
            if sys.version_info >= (3, 11):
                import tomllib
            else:  # pragma: no cover
                import tomli as tomllib
            try:
                raw = tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:
                raise InvalidParameterError(f"config {str(path)!r} is not valid TOML: {exc}") from None
        elif path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            try:
                raw = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise InvalidParameterError(f"config {str(path)!r} is not valid YAML: {exc}") from None
        else:
            raise InvalidParameterError(f"config must be a .toml or .yaml file, got {str(path)!r}")
    else:
        raise InvalidParameterError(f"config must be the path of a .toml or .yaml file, or a dict of sections, got "
                                    f"{source!r}")
    if not isinstance(raw, Mapping):
        raise InvalidParameterError(f"config must be a table of sections, got {_short(raw)}")
    unknown = sorted(set(raw) - _SECTIONS)
    if unknown:
        raise InvalidParameterError(f"config has an unknown section {unknown[0]!r}; sections are {sorted(_SECTIONS)}")
    data = _table(raw, "data")
    if "path" not in data:
        raise InvalidParameterError("config: data.path is required (a CSV/Parquet file, or 'embedded:salaries')")
    data_path = data["path"]
    if not isinstance(data_path, str) or not data_path.strip():
        raise InvalidParameterError(f"config: data.path must be a file name (a string), got {data_path!r}")
    unknown = sorted(set(data) - {"path", "dask"})
    if unknown:
        raise InvalidParameterError(f"config: data has an unknown key {unknown[0]!r}; keys are ['dask', 'path']")
    dask = data.get("dask", False)
    if not isinstance(dask, bool):
        raise InvalidParameterError(f"config: data.dask must be true or false, got {dask!r}")
    if not data_path.startswith("embedded:") and not Path(data_path).is_absolute():
        data_path = str(base / data_path)
    columns = _table(raw, "columns")
    if not columns:
        raise InvalidParameterError("config: [columns.<name>] is required for at least one column")
    bins, bounds, policy = {}, {}, {}
    for name, spec in columns.items():
        if not isinstance(spec, Mapping) or "bins" not in spec:
            raise InvalidParameterError(f"config: columns.{name} needs bins = <count, edges or 'categorical'>")
        extra = sorted(set(spec) - _COLUMN_KEYS)
        if extra:
            raise InvalidParameterError(f"config: columns.{name} has an unknown key {extra[0]!r}; keys are "
                                        f"{sorted(_COLUMN_KEYS)}")
        bins[name] = spec["bins"]
        if "bounds" in spec:
            b = spec["bounds"]
            if not (isinstance(b, list) and len(b) == 2):
                raise InvalidParameterError(f"config: columns.{name}.bounds must be [lo, hi], got {b!r}")
            bounds[name] = tuple(b)
        policy[name] = _policy(spec.get("policy", "dp"), name)
    ledger = _table(raw, "ledger")
    if "path" not in ledger:
        raise InvalidParameterError("config: ledger.path is required (the SQLite file of the budget ledger)")
    ledger_path = ledger["path"]
    if not isinstance(ledger_path, str) or not ledger_path.strip():
        raise InvalidParameterError(f"config: ledger.path must be a file name (a string), got {ledger_path!r}")
    if not Path(ledger_path).is_absolute():
        ledger_path = str(base / ledger_path)
    extra = sorted(set(ledger) - {"path", "key"})
    if extra:
        raise InvalidParameterError(f"config: ledger has an unknown key {extra[0]!r}; keys are ['key', 'path']")
    key_file = ledger.get("key")
    if key_file is not None:
        if not isinstance(key_file, str) or not key_file.strip():
            raise InvalidParameterError(f"config: ledger.key must be a file name (a string), got {key_file!r}")
        if not Path(key_file).expanduser().is_absolute():
            key_file = str(base / Path(key_file))
        else:
            key_file = str(Path(key_file).expanduser())
    accounts = {str(k): v for k, v in _table(raw, "accounts").items()}
    for k, v in accounts.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise InvalidParameterError(f"config: accounts.{k} must be a number (total ε), got {v!r}")
    analysts = {str(k): v for k, v in _table(raw, "analysts").items()}
    for k, v in analysts.items():
        if not isinstance(v, str) or (v not in accounts):
            raise InvalidParameterError(f"config: analysts.{k} must name an account of [accounts], got {v!r}")
    server = _table(raw, "server")
    extra = sorted(set(server) - _SERVER_KEYS)
    if extra:
        raise InvalidParameterError(f"config: server has an unknown key {extra[0]!r}; keys are {sorted(_SERVER_KEYS)}")
    settings = _server(server)
    return ServiceConfig(data_path=data_path, dask=dask, bins=bins, bounds=bounds, policy=policy, ledger=ledger_path,
                         accounts=accounts, analysts=analysts, key_file=key_file, **settings)


def _server(server: Mapping) -> dict:
    """The [server] table, every value checked (an error names ``server.<key>`` and the value)."""
    out = {k: server[k] for k in ("host", "port", "rate", "burst", "max_body") if k in server}
    try:
        check_host(out.get("host", "127.0.0.1"))
        check_port(out.get("port", 8765))
        check_max_body(out.get("max_body", MAX_BODY))
        RateLimiter(out.get("rate", 50.0), out.get("burst", 100))
        out["limits"] = Limits(**{k: server[k] for k in _LIMIT_KEYS if k in server})
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"config: server.{exc}") from None
    if "rate" in out:
        out["rate"] = float(out["rate"])
    return out


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _table(raw: Mapping, name: str) -> dict:
    value = raw.get(name, {})
    if not isinstance(value, Mapping):
        raise InvalidParameterError(f"config: [{name}] must be a table, got {value!r}")
    return dict(value)


def _policy(spec, column: str):
    """A policy as written in the file: a name, or a table {name = ..., theta/blocks/attributes = ...}."""
    if isinstance(spec, str):
        return spec
    if isinstance(spec, Mapping) and isinstance(spec.get("name"), str):
        params = {k: v for k, v in spec.items() if k != "name"}
        return (spec["name"], params) if params else spec["name"]
    raise InvalidParameterError(f"config: columns.{column}.policy must be a name or {{name = ..., theta = ...}}, "
                                f"got {spec!r}")
