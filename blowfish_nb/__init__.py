"""blowfish_nb: policy-aware differential privacy (Blowfish privacy) for Jupyter.

Importing the package registers the ``df.blowfish`` accessor; it does not
import any widget library (those live in :mod:`blowfish_nb.widgets`).
"""

from . import accessor as _accessor  # noqa: F401  (registers df.blowfish)
from . import analysis, constraints, datasets, mechanisms, operators, policy, strategies, workload
from .domain import CategoricalAttribute, Domain, OrderedAttribute
from .exceptions import (
    BlowfishError, BudgetExceededError, DomainError, InvalidParameterError, PolicyError, PrivacyLeakWarning, SessionError,
)
from .policy import Policy
from .release import Release
from .accounting import Session
from .clustering import kmeans

_accessor.register_dask()  # ddf.blowfish, when Dask is installed


def serve(data, **kwargs):
    """Serve ``data`` to analysts over HTTP (see :func:`blowfish_nb.service.launch.serve`; needs ``[service]``)."""
    from .service.launch import serve as _serve

    return _serve(data, **kwargs)


def connect(url: str, token: str, **kwargs):
    """A :class:`~blowfish_nb.service.client.RemoteSession` on an analyst service (see :func:`blowfish_nb.service.client.connect`)."""
    from .service.client import connect as _connect

    return _connect(url, token, **kwargs)


__version__ = "0.1.0"

__all__ = [
    "Domain",
    "OrderedAttribute",
    "CategoricalAttribute",
    "Policy",
    "Release",
    "BlowfishError",
    "DomainError",
    "InvalidParameterError",
    "PolicyError",
    "PrivacyLeakWarning",
    "BudgetExceededError",
    "SessionError",
    "Session",
    "serve",
    "connect",
    "kmeans",
    "analysis",
    "constraints",
    "datasets",
    "mechanisms",
    "operators",
    "policy",
    "strategies",
    "workload",
]
