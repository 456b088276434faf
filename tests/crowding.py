"""Containers that force threads to interleave inside them, for race tests (tests/test_thread_safety.py,
tests/test_session_budget.py).

A race test that only repeats its race more often is weak: the window between two steps of a compound update is a
few bytecodes, and with the lock taken out such tests passed at 20, 60 and 200 rounds. A container made by
:func:`crowded` gives the interpreter away (``time.sleep(0)``) inside each of its operations, after the operation's
work and before it returns, so another thread runs between any two steps; a view (keys, values, items) is returned
as a list, read at that moment, so the step after the yield uses what was read before it. :class:`Crowding` counts
the threads inside one container's operations at once: under the lock that guards the container, never more than one.
"""

from __future__ import annotations

import threading
import time

#: operations returning a live view
_VIEWS = ("keys", "values", "items")
#: the operations of dict and OrderedDict the caches use (and a few more), each crowded
_OPERATIONS = ("__getitem__", "__setitem__", "__delitem__", "__contains__", "__iter__", "__len__", "get", "pop",
               "popitem", "setdefault", "move_to_end", "clear", "keys", "values", "items")


class Crowding:
    """How many threads are inside an operation of one container at once (``most``), across the containers made
    by one :func:`crowded` call. A thread inside twice (OrderedDict.pop of a subclass calls its __getitem__ and
    __delitem__) counts once."""

    def __init__(self):
        self._guard = threading.Lock()
        self._inside: dict[int, dict[int, int]] = {}  # id(container) -> thread id -> depth
        self.most = 0
        self.operations = 0

    def enter(self, container) -> None:
        with self._guard:
            threads = self._inside.setdefault(id(container), {})
            me = threading.get_ident()
            threads[me] = threads.get(me, 0) + 1
            self.most = max(self.most, len(threads))
            self.operations += 1

    def leave(self, container) -> None:
        with self._guard:
            threads = self._inside[id(container)]
            me = threading.get_ident()
            threads[me] -= 1
            if not threads[me]:
                del threads[me]


def crowded(base: type, crowding: Crowding) -> type:
    """A subclass of ``base`` (dict or OrderedDict) whose every operation does its work, then yields the
    interpreter to another thread, then returns; ``crowding`` counts the threads inside at once."""

    def wrap(name):
        real = getattr(base, name)

        def operation(self, *args, **kwargs):
            crowding.enter(self)
            try:
                out = real(self, *args, **kwargs)
                if name in _VIEWS:
                    out = list(out)  # what was read now; a live view would see the other thread's later writes
                time.sleep(0)  # another thread runs now, between this step and the caller's next one
                return out
            finally:
                crowding.leave(self)

        operation.__name__ = name
        return operation

    return type(f"Crowded{base.__name__}", (base,), {name: wrap(name) for name in _OPERATIONS if hasattr(base, name)})
