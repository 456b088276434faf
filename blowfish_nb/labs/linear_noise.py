"""A noise answer combines its draws linearly: the rule that leaves no branch on a draw (issue 26, gamer37c).

A lab's noise answer (lab 3's ``range_noise(rng)``, lab 5's ``fixed_noise(rng)``) is graded by the law of what it
returns over a few thousand calls (:mod:`blowfish_nb.labs._grade`). A test of that many calls cannot see an event
rarer than about one call in a thousand, and a *branch on a draw* makes such an event: gamer37c's
``noise * ((1 + np.sign(u - 0.001)) / 2 + 1e-6)`` (``u = rng.random()``) is Laplace noise on 999 calls in 1,000 and
the exact counts on the others — a point mass no law test of 20,000 calls finds, and no privacy at all on that share.
The comparison a branch needs can be written as arithmetic in many ways (``np.sign``, ``np.floor``, ``np.where``,
``min``, ``int``, ``%``, a power ``t ** 1000`` or a logistic ``1 / (1 + np.exp(-1e7 * (u - 0.001)))`` as a step), so
the rule is not a list of forbidden steps but an allow-list of what may happen to a draw.

**The rule.** A value that holds a draw of ``rng`` (a *draw*: the result of ``rng.laplace(…)`` and the other
samplers, of a lab mechanism's ``release(…, rng=rng)``, or any value computed from one) may only be

* added to or subtracted from anything, negated;
* multiplied by, or divided by, a value that holds no draw (never a draw times a draw, never a number divided by a
  draw, no power, ``%``, ``//``, bit operation, ``not`` or ``~``);
* summed, averaged, accumulated, differenced, stacked, copied, reshaped, indexed (by an index that holds no draw),
  turned into a float or an array of floats (:data:`LINEAR_CALLS`, :data:`LINEAR_METHODS`; never into whole numbers:
  a ``dtype`` of ``int`` truncates), multiplied by a matrix that holds no draw (``@``, ``np.dot``);
* stored into an item of an array or list the function made itself (``noise[i] = rng.laplace(…)``).

Nothing else takes a draw as an argument: no other NumPy or ``math`` function, builtin or method, no draw's
parameter (``rng.laplace(0, b * u)``), no f-string. ``rng`` itself is passed only to a lab mechanism's ``release``.
Tests of a draw (comparisons, ``if``, ``and``/``or``, a comprehension's ``if``) are refused by
:func:`blowfish_nb.labs.scan.pure_answer` already.

**Why it closes the branch.** Under the rule the answer's value on a call is ``c + Σ_j a_j D_j`` for numbers ``c``,
``a_j`` fixed by the lab's constants (the same on every call) and independent draws ``D_j`` of the generator's
samplers with fixed parameters. Such a sum cannot be "law A on a share of calls and law B on the others": a mixture
needs a draw to decide, and deciding is multiplying by a function of a draw, which the rule refuses. A sum of
independent draws has the law of their convolution; when one of them is the right Laplace noise the release is
private whatever the others add (adding independent noise is post-processing), and when none is, its law is a
smooth shape that the law tests measure on every call, not on a rare share. ``rng.choice`` is no sampler here: a
table of constants is any law at all, a point mass on 0 included (:data:`blowfish_nb.labs.scan.PURE_DRAWS`).

**What it refuses that is right**: the inverse-CDF form ``-b * np.sign(u) * np.log(1 - 2 * np.abs(u))`` of a uniform
``u`` (a nonlinear function of a draw, indistinguishable in kind from a step), and ``np.round``/``.astype(int)`` of
continuous draws (not the library's whole-number law anyway). The message says what to write instead: the
generator's own ``laplace``, a difference of two ``exponential`` draws, or of two ``geometric`` draws for whole
numbers.

**What floating point adds, and the check that closes it** (gamer38). The rule is about exact arithmetic; floats
round. ``(noise + B * 2.0**70) - B * 2.0**70`` with ``B = rng.binomial(1, 0.001)`` is linear on paper (``B``'s
coefficient is 0) and in floats the huge term absorbs the noise on the calls where ``B = 1``: the exact release on
one call in 1,000, a branch made of rounding. So the child that runs the graded function (:class:`AffineCheck`)
also checks that the function *computes* an affine function of its draws: the function is compiled with each
draw (a sampler's call, a mechanism's ``release``) recorded on a tape (:func:`taped_source`); once per shape of
the draws it is run again with the tape replaying 0 for every draw and then each unit draw alone, which gives the
constant ``f₀`` and the coefficients ``J`` (the same on every call: a replay runs no sampler and the rule lets
nothing but the draws vary); and on every call its value must be ``f₀ + J·d`` for the call's draws ``d`` (summed exactly, ``math.fsum``)
within :data:`RELATIVE_SLACK` (2⁻⁴⁸) of ``|value|`` + the function's typical ``|value|`` (the median of
:data:`WARM_UP` calls on the check's own generators: the law tests hold it to the question's scale, so an answer
cannot make it large; gamer38b made a slack proportional to ``|f₀| + |J|·|d|`` as large as it liked with a draw
that is always 1, ``rng.normal(1.0, 0.0)``, times 2⁷⁰). A rounding that loses the noise on some draws makes the
value differ from ``f₀ + J·d`` there by the noise itself, and the call is refused. What passes is within 2⁻⁴⁸ of an
exact linear combination of independent draws with fixed coefficients, whose law has no share to hide.

**Dtypes and what is left** (gamer38e). A value must be float64, float32 or whole numbers (:data:`SAFE_DTYPES`):
long doubles kept 11 bits the float64 comparison never saw, and a grid in them showed the count. A grid at the edge
of the 2⁻⁴⁸ slack (N = 2⁴⁷ + 13/32) told neighbouring counts apart while count + noise stayed below about 32, so
what the verdict grades is not the answer's own value but the sum its code states, ``f₀ + J·d`` correctly rounded
in the value's dtype (:func:`_canonical`; a right answer's value already is it): no bit inside the slack reaches
the grade. Left is the floating-point porosity every float answer has, ``x + rng.laplace(…)`` included (Mironov,
CCS 2012): the labs grade the noise's law in real numbers.

**Lattices** (gamer38c). A whole-number draw times a fraction, ``step * (G₁ − G₂)`` with ``step = 1 / (20.382)``
and a jitter of ``rng.uniform(-1e-7, 1e-7)``, is linear and Laplace-like to every law test, and it puts the noise on
a lattice incommensurate with the whole counts: the release minus the nearest lattice point is the count. So a
draw that is a whole number on the call (``geometric``, ``integers``, ``binomial``, a mechanism's whole-number noise)
must have whole coefficients with no common factor in any output (``2 * (G₁ − G₂)`` shows the count's parity):
whole-number noise is added as it is drawn, and continuous draws (``laplace``,
``exponential``, ``normal``, ``uniform``) carry no lattice beyond the floating-point one every answer has.

Examples
--------
>>> import ast
>>> fn = ast.parse("def f(rng):\\n    return 2 * rng.laplace(0.0, 1.0, 3) - rng.laplace(0.0, 1.0, 3)").body[0]
>>> nonlinear_use(fn, {"rng"}, set()) is None
True
>>> fn = ast.parse("def f(rng):\\n    u = rng.random()\\n    return rng.laplace(0.0, 1.0) * np.sign(u - 0.001)").body[0]
>>> nonlinear_use(fn, {"rng", "u"}, set())[:42]
'applies np.sign to a value drawn from rng '
"""

from __future__ import annotations

import ast
import math

import numpy as np

__all__ = ["LINEAR_CALLS", "LINEAR_METHODS", "FRESH_CONSTRUCTORS", "nonlinear_use", "fresh_containers",
           "taped_source", "DrawTape", "AffineCheck", "NotAffine", "MOST_DRAWS", "RELATIVE_SLACK"]

#: ``np.NAME`` calls that are linear in the argument positions given (indices of positional arguments that may hold
#: a draw; ``"*"``: every positional argument; the keywords listed may hold one too). ``multiply``/``dot``/``matmul``
#: take a draw in one operand only (:func:`nonlinear_use` checks that), ``divide`` in the numerator.
LINEAR_CALLS: dict[str, tuple[tuple[int, ...] | str, tuple[str, ...]]] = {
    "sum": ((0,), ()), "mean": ((0,), ()), "cumsum": ((0,), ()), "diff": ((0,), ()),
    "array": ((0,), ()), "asarray": ((0,), ()), "concatenate": ((0,), ()), "stack": ((0,), ()),
    "hstack": ((0,), ()), "vstack": ((0,), ()), "negative": ((0,), ()), "add": ("*", ()), "subtract": ("*", ()),
    "multiply": ("*", ()), "divide": ((0,), ()), "dot": ("*", ()), "matmul": ("*", ()),
    "full": ((1,), ("fill_value",)), "zeros_like": ((0,), ()), "ones_like": ((0,), ()), "full_like": ((0,), ()),
    "float64": ((0,), ()), "float32": ((0,), ()), "repeat": ((0,), ()), "tile": ((0,), ()),
    "ravel": ((0,), ()), "reshape": ((0,), ()), "copy": ((0,), ()), "squeeze": ((0,), ()),
}
#: the NumPy calls above that multiply their operands: a draw in at most one of them
PRODUCTS = frozenset({"multiply", "dot", "matmul"})
#: builtins linear in their first argument (``len`` reads only a shape)
LINEAR_BUILTINS = frozenset({"float", "sum", "len"})
#: methods of a value that holds a draw, each linear in it (with arguments that hold none)
LINEAR_METHODS = frozenset({"sum", "mean", "cumsum", "copy", "reshape", "ravel", "item", "astype", "T", "shape",
                            "size", "ndim", "flatten", "squeeze", "tolist"})
#: dtypes a draw may be converted to: floats (``int`` would truncate: a step in every unit)
FLOAT_DTYPES = frozenset({"float", "float64", "float32", "double", "f8", "f4"})
#: ``np.NAME`` calls that make a new array, which the answer may then fill item by item
FRESH_CONSTRUCTORS = frozenset({"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
                                "full_like", "array"})

_NONLINEAR_OPS = {ast.Pow: "a power", ast.Mod: "%", ast.FloorDiv: "//", ast.LShift: "<<", ast.RShift: ">>",
                  ast.BitOr: "|", ast.BitAnd: "&", ast.BitXor: "^"}
_ADVICE = ("noise combines the generator's draws by +, − and by × or ÷ with numbers that are not draws "
           "(rng.laplace draws Laplace noise; a difference of two rng.exponential draws is Laplace too, of two "
           "rng.geometric draws the whole-number law); any other function of a draw can turn a rare draw into an "
           "exact release")


def nonlinear_use(fn: ast.FunctionDef, tainted: set[str], numpy_aliases: set[str],
                  release_owners: frozenset[str] | set[str] = frozenset()) -> str | None:
    """Why ``fn`` uses a value drawn from ``rng`` other than linearly (see the module's rule), or None.

    ``tainted`` holds the local names that can hold a draw, ``rng`` included
    (:func:`blowfish_nb.labs.scan._draw_tainted`); ``numpy_aliases`` the names of NumPy in the handout (``np``);
    ``release_owners`` the handout objects whose ``release`` may be given ``rng`` (lab 3's ``ordered``).

    Examples
    --------
    >>> import ast
    >>> src = "def f(rng):\\n    z = rng.laplace(0, 1, 4)\\n    return np.cumsum(z)[-1] - z.sum() / 2"
    >>> nonlinear_use(ast.parse(src).body[0], {"rng", "z"}, {"np"}) is None
    True
    >>> nonlinear_use(ast.parse("def f(rng):\\n    return rng.laplace(0, 1) ** 3").body[0], {"rng"}, {"np"})[:14]
    'uses a power o'
    """
    def holds(e: ast.AST | None) -> bool:
        return e is not None and any(isinstance(n, ast.Name) and n.id in tainted for n in ast.walk(e))

    def why(what: str, node: ast.AST) -> str:
        return f"{what} ({'line ' + str(getattr(node, 'lineno', fn.lineno))}): {_ADVICE}"

    found: list[tuple[int, str]] = []  # (0 for a named function, 1 for an operator; the message): name it first
    for node in ast.walk(fn):
        if isinstance(node, ast.BinOp):
            left, right = holds(node.left), holds(node.right)
            if not (left or right):
                continue
            if type(node.op) in _NONLINEAR_OPS:
                found.append((1, why(f"uses {_NONLINEAR_OPS[type(node.op)]} of a value drawn from rng", node)))
            elif isinstance(node.op, (ast.Mult, ast.MatMult)) and left and right:
                found.append((1, why("multiplies two values drawn from rng", node)))
            elif isinstance(node.op, ast.Div) and right:
                found.append((1, why("divides by a value drawn from rng", node)))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.Invert)) and holds(node.operand):
            found.append((1, why(f"applies {'not' if isinstance(node.op, ast.Not) else '~'} to a value drawn from "
                                 "rng", node)))
        elif isinstance(node, ast.JoinedStr) and holds(node):
            found.append((0, why("formats a value drawn from rng as text", node)))
        elif isinstance(node, ast.Call):
            reason = _call(node, holds, numpy_aliases, set(release_owners))
            if reason is not None:
                found.append((0, why(reason, node)))
    return min(found, key=lambda f: f[0])[1] if found else None


def fresh_containers(fn: ast.FunctionDef, numpy_aliases: set[str]) -> set[str]:
    """The local names of ``fn`` bound only to a new array or list it makes itself (``np.zeros(k)``, ``[0.0] * k``,
    a list display or comprehension, ``….copy()``): an item store into one changes nothing that outlives the call.

    Examples
    --------
    >>> import ast
    >>> src = "def f(rng):\\n    a = np.zeros(3)\\n    b = R\\n    return a"
    >>> sorted(fresh_containers(ast.parse(src).body[0], {"np"}))
    ['a']
    """
    bound: dict[str, bool] = {}
    for node in ast.walk(fn):
        targets: list[ast.AST] = []
        value = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr, ast.AugAssign)):
            targets, value = [node.target], node.value
        elif isinstance(node, (ast.For, ast.comprehension)):
            targets = [node.target]
        for t in targets:
            if isinstance(t, ast.Name):
                bound[t.id] = bound.get(t.id, True) and value is not None and _makes_new(value, numpy_aliases)
            else:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                        bound[n.id] = False
    return {name for name, fresh in bound.items() if fresh}


def _makes_new(value: ast.AST, numpy_aliases: set[str]) -> bool:
    """Whether ``value`` is a new array or list no other name refers to."""
    if isinstance(value, (ast.List, ast.ListComp)):
        return True
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):  # [0.0] * k
        return isinstance(value.left, ast.List) or isinstance(value.right, ast.List)
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute):
        return False
    f = value.func
    if f.attr == "copy" and not value.args and not value.keywords:
        return True
    return (isinstance(f.value, ast.Name) and f.value.id in numpy_aliases and f.attr in FRESH_CONSTRUCTORS
            and not any(k.arg == "copy" for k in value.keywords))


def _dtype_ok(keywords: list[ast.keyword], extra: list[ast.AST] = ()) -> bool:
    """Whether every ``dtype`` given (keyword, or ``extra`` positional) is a float type."""
    given = [k.value for k in keywords if k.arg == "dtype"] + list(extra)
    for d in given:
        name = (d.id if isinstance(d, ast.Name) else d.attr if isinstance(d, ast.Attribute)
                else d.value if isinstance(d, ast.Constant) else None)
        if name not in FLOAT_DTYPES:
            return False
    return True


def _call(node: ast.Call, holds, numpy_aliases: set[str], release_owners: set[str]) -> str | None:
    """Why the call ``node`` takes a draw other than linearly, or None."""
    f = node.func
    args = list(node.args)
    drawn = [i for i, a in enumerate(args) if holds(a)]
    drawn_kw = [k for k in node.keywords if holds(k.value)]
    name = ast.unparse(f) if not isinstance(f, ast.Name) else f.id
    # the generator's own samplers: parameters that hold no draw; rng passed only to a mechanism's release
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "rng":
        if drawn or drawn_kw:
            return f"gives {name} a parameter drawn from rng"
        return None
    if isinstance(f, ast.Attribute) and f.attr == "release" and isinstance(f.value, ast.Name) \
            and f.value.id in release_owners:
        bare = lambda e: isinstance(e, ast.Name) and e.id == "rng"  # noqa: E731
        if any(not bare(args[i]) for i in drawn) or any(not bare(k.value) for k in drawn_kw):
            return f"gives {name} an argument drawn from rng (only rng itself)"
        return None
    if any(isinstance(a, ast.Name) and a.id == "rng" for a in args) or any(
            isinstance(k.value, ast.Name) and k.value.id == "rng" for k in node.keywords):
        return f"passes rng to {name} (only to a lab mechanism's release)"
    method_on_draw = isinstance(f, ast.Attribute) and holds(f.value)
    if not (drawn or drawn_kw or method_on_draw):
        return None
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in numpy_aliases:
        rule = LINEAR_CALLS.get(f.attr)
        if rule is None:
            return f"applies {name} to a value drawn from rng"
        positions, keywords = rule
        if positions != "*" and any(i not in positions for i in drawn):
            return f"gives {name} a value drawn from rng where it is not linear"
        if any(k.arg not in keywords for k in drawn_kw):
            return f"gives {name} a value drawn from rng as {_keyword_name(drawn_kw)}"
        if f.attr in PRODUCTS and len(drawn) > 1:
            return f"multiplies two values drawn from rng ({name})"
        if not _dtype_ok(node.keywords):
            return f"turns a value drawn from rng into whole numbers ({name} with a dtype)"
        return None
    if isinstance(f, ast.Attribute) and f.attr == "append" and isinstance(f.value, ast.Name) and len(args) == 1 \
            and not node.keywords:  # a list the function made (scan.pure_answer checks that) gets one more item
        return None
    if method_on_draw:
        if f.attr not in LINEAR_METHODS:
            return f"applies .{f.attr} to a value drawn from rng"
        if drawn or drawn_kw:
            return f"gives .{f.attr} an argument drawn from rng"
        if f.attr == "astype" and not _dtype_ok(node.keywords, args[:1]):
            return "turns a value drawn from rng into whole numbers (.astype)"
        return None
    if isinstance(f, ast.Name) and f.id in LINEAR_BUILTINS and drawn in ([0], []) and not drawn_kw:
        return None
    return f"applies {name} to a value drawn from rng"


def _keyword_name(keywords: list[ast.keyword]) -> str:
    """The first keyword's name, for a message."""
    return f"{keywords[0].arg}=" if keywords else "a keyword"


#: relative slack of the affine check: a float64 value may differ from f₀ + J·d (summed exactly) by this share of
#: |value| + the function's typical |value| — a few roundings of honest arithmetic (right answers measured 0). Never a
#: share of |f₀| or |J|·|d| (gamer38b inflated those with ``rng.normal(1.0, 0.0) * 2**70``), and not 2⁻²⁰: gamer38d
#: rounded Laplace noise onto a grid of 1.5·10⁻¹¹, ``(L * S + 1.5 * 2**52 - 1.5 * 2**52) / S`` with S = 2³⁶ + 0.382,
#: inside that slack, and the release showed 0.382·count mod 1. At 2⁻⁴⁸ a grid must be within 16× of the float grid
#: every float64 answer has, and the verdict grades the canonical sum anyway (:func:`_canonical`). A float32 value
#: must be the float32 of the exact sum (±1 ulp).
RELATIVE_SLACK = 2.0 ** -48
#: the most numbers one call may draw for the affine check (each is one replay, once per shape of the draws; lab 3's
#: prefix sums drawn by hand are 4,096)
MOST_DRAWS = 8192
#: calls on generators of the check's own that measure the function's typical |value| (once per shape of the draws)
WARM_UP = 32
#: the float dtypes a value may have (whole-number dtypes of 8 bytes or fewer too): not long double, whose extra
#: bits the float64 comparison would not see
SAFE_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))
_TAPE = "__tape__"


def taped_source(source: str, owners: frozenset[str] | set[str] = frozenset()) -> str:
    """``source`` with every draw — a call ``rng.NAME(…)`` or ``OWNER.release(…)`` for ``OWNER`` in ``owners`` —
    wrapped as ``__tape__(lambda: CALL)``, so that a :class:`DrawTape` sees each draw (the student's code cannot
    name ``__tape__``: :func:`blowfish_nb.labs.scan.pure_answer` refuses names starting with ``_``).

    Examples
    --------
    >>> print(taped_source("def f(rng):\\n    return 2 * rng.laplace(0, 1)"))
    def f(rng):
        return 2 * __tape__(lambda: rng.laplace(0, 1))
    """
    tree = ast.parse(source)

    class _Wrap(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            f = node.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and (
                    f.value.id == "rng" or f.attr == "release" and f.value.id in owners):
                thunk = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                                      defaults=[]), body=node)
                return ast.Call(func=ast.Name(id=_TAPE, ctx=ast.Load()), args=[thunk], keywords=[])
            return node

    return ast.unparse(ast.fix_missing_locations(_Wrap().visit(tree)))


class NotAffine(Exception):
    """The graded function's value is not the affine function of its draws its code states (floating point)."""


class DrawTape:
    """What ``__tape__`` is in the graded function's namespace: records each draw's value (``record``) or hands
    back given values in their place without drawing (``replay``).

    Examples
    --------
    >>> tape = DrawTape()
    >>> tape(lambda: 3.0), tape.values
    (3.0, [3.0])
    >>> tape.replaying([0.0]); tape(lambda: 3.0)
    0.0
    """

    def __init__(self) -> None:
        self.values: list = []
        self._replay: list | None = None

    def recording(self) -> None:
        """Record the next call's draws."""
        self.values, self._replay = [], None

    def replaying(self, values: list) -> None:
        """Give ``values`` in place of the next call's draws, in order."""
        self._replay = list(values)

    def __call__(self, thunk):
        if self._replay is None:
            value = thunk()
            self.values.append(value.copy() if hasattr(value, "copy") else value)
            return value
        if not self._replay:
            raise NotAffine("the function drew more in a replay than on the call it replays")
        return self._replay.pop(0)

    def replay_done(self) -> bool:
        """Whether the replay used every value it was given."""
        return not self._replay


def _canonical(value, expected: np.ndarray):
    """``value`` replaced by the correctly rounded ``f₀ + J·d`` (``expected``, summed exactly) in its own dtype and
    shape: what is graded is the affine function the code states, not the last bits its rounding chose.

    A float answer within the slack of that sum may still carry a pattern in its last bits (gamer38e: a grid of
    spacing 1/N with N = 2⁴⁷ + 13/32 told count c from c + 1 while count + noise stayed below ~32); handing the
    verdict the canonical value leaves no such bit to the grade. A right answer's value already is the canonical one
    (``counts + rng.laplace(…)`` is one correctly rounded addition).

    Examples
    --------
    >>> _canonical(np.array([0.1 + 0.2]), np.array([0.3]))
    array([0.3])
    >>> _canonical(np.float32(1.0), np.array([1.0]))
    np.float32(1.0)
    """
    arr = np.asarray(value)
    if arr.dtype.kind != "f":
        return value  # whole numbers: already exact (whole coefficients, whole draws)
    canonical = expected.astype(arr.dtype).reshape(arr.shape)
    if isinstance(value, np.ndarray):
        return canonical
    if arr.ndim == 0:
        return type(value)(canonical[()]) if isinstance(value, (float, np.floating)) else canonical[()]
    return canonical.tolist() if isinstance(value, list) else canonical


class AffineCheck:
    """Runs the graded function ``fn`` with its draws on ``tape`` and refuses a value that is not ``f₀ + J·d``
    (see the module docstring). ``f₀`` and ``J`` are found once per shape of the draws, by replays.

    Examples
    --------
    >>> import numpy as np
    >>> tape = DrawTape()
    >>> ns = {"__tape__": tape, "np": np}
    >>> exec(taped_source("def f(rng):\\n    return rng.laplace(0, 1, 3) - rng.laplace(0, 1, 3)"), ns)
    >>> check = AffineCheck(ns["f"], tape)
    >>> check(np.random.default_rng(1)).shape
    (3,)
    >>> exec(taped_source("def g(rng):\\n    b = rng.binomial(1, 0.5)\\n"
    ...                   "    return (rng.laplace(0, 1, 3) + b * 2.0**70) - b * 2.0**70"), ns)
    >>> check = AffineCheck(ns["g"], tape)
    >>> for seed in range(20):
    ...     _ = check(np.random.default_rng(seed))
    Traceback (most recent call last):
    ...
    blowfish_nb.labs.linear_noise.NotAffine: its value is not the affine function of its draws that its code states ...
    """

    def __init__(self, fn, tape: DrawTape) -> None:
        self.fn, self.tape = fn, tape
        self._known: dict[tuple, tuple] = {}

    def __call__(self, *args, **kwargs):
        self.tape.recording()
        value = self.fn(*args, **kwargs)
        drawn = list(self.tape.values)
        try:
            kind = np.asarray(value).dtype
            got = np.asarray(value, dtype=float).ravel()
        except (TypeError, ValueError):
            return value  # not numbers: the verdict refuses it by its shape
        if kind.kind == "O":
            return value  # None, …, text: not numbers, which the verdict says in its own words
        if kind not in SAFE_DTYPES and kind.kind not in "iub":
            # gamer38e: long-double noise (np.zeros(K, dtype="g")) kept 11 bits the float64 comparison never saw,
            # and a grid in them showed the count
            raise NotAffine(f"it returns numbers of dtype {kind}: noise is float64 (or float32, or whole numbers)")
        shape = tuple(_shape_of(v) for v in drawn)
        if shape not in self._known:
            self._known[shape] = (*self._coefficients(drawn, args, kwargs), self._typical(args, kwargs))
        f0, jac, typical = self._known[shape]
        d = np.concatenate([np.asarray(v, dtype=float).ravel() for v in drawn]) if drawn else np.zeros(0)
        if got.shape != f0.shape or not np.all(np.isfinite(got)):
            return value  # the verdict refuses a value of another shape, or not finite
        if not np.all(np.isfinite(d)):
            raise NotAffine("a draw is not finite")
        whole = d == np.round(d)  # a whole-number draw (geometric, integers, the mechanism's own whole noise)
        if np.any(whole):
            scaled = jac[:, whole]
            if not np.all(np.abs(scaled - np.round(scaled)) <= 1e-9 * np.maximum(1.0, np.abs(scaled))):
                raise NotAffine("it scales a whole-number draw by a fraction: the noise then lies on a lattice that "
                                "is not the counts' whole numbers, and the release shows the count modulo it "
                                "(whole-number noise is added as it is drawn)")
            for row in np.round(scaled):  # 2·(G₁ − G₂): every release has the count's parity (gamer38c)
                if math.gcd(*(int(abs(c)) for c in row if c != 0)) > 1:
                    raise NotAffine("it multiplies its whole-number draws by a common factor: the release then shows "
                                    "the count modulo that factor (whole-number noise is added as it is drawn)")
        with np.errstate(all="ignore"):  # the code's sum, summed exactly (no rounding of ours to absorb anything)
            expected = np.array([math.fsum([f0[j], *(jac[j] * d)]) for j in range(f0.size)])
            if np.asarray(value).dtype == np.float32:  # float32 of the exact sum, ±1 ulp (a power-of-two grid)
                expected = expected.astype(np.float32).astype(float)
                slack = np.spacing(np.abs(expected).astype(np.float32)).astype(float) * 1.0 + 1e-290
            else:
                slack = RELATIVE_SLACK * (np.abs(got) + typical) + 1e-290
            off = np.abs(got - expected)
        if not np.all(off <= slack):
            i = int(np.argmax(off - slack))
            raise NotAffine(f"its value is not the affine function of its draws that its code states (value {i} is "
                            f"{got[i]:.6g}, the code's sum of its draws {expected[i]:.6g}): floating-point rounding "
                            "that loses the noise on some draws is a branch on a draw")
        return _canonical(value, expected)

    def _coefficients(self, drawn: list, args, kwargs):
        """``(f₀, J)``: the value with every draw 0, and each unit draw's effect on it."""
        sizes = [int(np.size(v)) for v in drawn]
        n = sum(sizes)
        if n > MOST_DRAWS:
            raise NotAffine(f"it draws {n} numbers in one call, more than the {MOST_DRAWS} the check replays")
        columns = []
        for unit in [None, *range(n)]:
            flat = np.zeros(n)
            if unit is not None:
                flat[unit] = 1.0
            values, at = [], 0
            for v, size in zip(drawn, sizes):
                values.append(_like(v, flat[at:at + size]))
                at += size
            self.tape.replaying(values)
            try:
                out = np.asarray(self.fn(*args, **kwargs), dtype=float).ravel()
            except NotAffine:
                raise
            except Exception as e:
                raise NotAffine(f"it raised {type(e).__name__} when its draws were replayed as 0 and 1") from None
            if not self.tape.replay_done():
                raise NotAffine("it drew less in a replay than on the call it replays")
            columns.append(out)
        self.tape.recording()
        if any(c.shape != columns[0].shape for c in columns) or not all(np.all(np.isfinite(c)) for c in columns):
            raise NotAffine("its value with its draws replayed as 0 and 1 is not a fixed number of finite values")
        f0 = columns[0]
        with np.errstate(all="ignore"):
            jac = np.stack([c - f0 for c in columns[1:]], axis=1) if n else np.zeros((f0.size, 0))
        if not np.all(np.isfinite(jac)):
            raise NotAffine("a draw's coefficient in its value is not finite")
        return f0, jac

    def _typical(self, args, kwargs) -> float:
        """The median |value| of :data:`WARM_UP` calls on generators of the check's own (the scale of the noise the
        function makes, which the law tests hold to the question's: an answer cannot make it large)."""
        seen = []
        for _ in range(WARM_UP):
            fresh = lambda a: np.random.default_rng() if isinstance(a, np.random.Generator) else a  # noqa: E731
            self.tape.recording()
            seen.append(np.abs(np.asarray(self.fn(*[fresh(a) for a in args],
                                                  **{k: fresh(a) for k, a in kwargs.items()}), dtype=float)).ravel())
        self.tape.recording()
        typical = float(np.median(np.concatenate(seen)))
        if not math.isfinite(typical):
            raise NotAffine("its typical value is not finite")
        return typical


def _shape_of(value) -> tuple:
    """A draw's kind: its type, NumPy shape and dtype."""
    a = np.asarray(value)
    return (type(value).__name__, a.shape, a.dtype.str)


def _like(value, flat):
    """``flat`` (floats) in the type, shape and dtype of the draw ``value``."""
    if isinstance(value, np.ndarray):
        return flat.astype(value.dtype).reshape(value.shape)
    if isinstance(value, np.generic):
        return type(value)(flat[0])
    if isinstance(value, (bool, int, float)):
        return type(value)(flat[0])
    raise NotAffine(f"a draw of type {type(value).__name__}")
