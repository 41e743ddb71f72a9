"""Property tests (issue 20, part 6): random arguments into every public function of the glrecon package: Geometry
(circular, from_vectors, with_detector, write_rtk), read_rtk_geometry, from_astra_vec, from_tigre, ImageArray,
read_image, read_projections, write_image, line_integrals, fdk, project, sart, sirt, cgls, osem, asd_pocs, pdhg_tv, Operator
(forward, back, .T, matvec, rmatvec), phantom.shepp_logan and phantom.project.

Shapes, dtypes (float16/32/64, integers, bool, complex, object, strings), memory layouts (non-contiguous, negative
strides, Fortran order, broadcast arrays, unaligned, big-endian, nested lists), spacings and origins (0, negative,
1e-300, 1e300, NaN, inf), NaN/inf values and huge sizes. The property for every call: it raises a glrecon.Error
subclass, or a TypeError naming the argument where an argument of the wrong type was given (the rule of the package's
``# ---- arguments`` block), or it returns a correct result: the right shape, dtype and metadata, finite values, its
inputs untouched, and where it is cheap a checkable property (write_image then read_image is the identity, project of
a zero volume is zero, fdk, project and the iterative methods are homogeneous, line_integrals inverts i0 exp(-p)).
Never a crash, a hang (a watchdog ends the process with every thread's traceback) or a silent NaN.

Profiles (GLRECON_HYPOTHESIS_PROFILE): "quick" (the default, run by ctest: derandomized so that CI is reproducible,
well under a minute) and "long" (random, 2000 examples a test, about ten minutes: run by hand, in a loop for longer, see docs/bad-input.md).
Sizes stay small (volumes up to 8^3 voxels, up to 6 views of 8 x 8 pixels, the cpu backend), so one example takes
milliseconds.

Run by ctest (python.pytest) with PYTHONPATH=build/python."""
import faulthandler
import fractions
import decimal
import math
import numbers
import os
import re
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")  # Debian's python3-hypothesis (quickstart.sh installs it)
from hypothesis import HealthCheck, event, note, settings, strategies as st  # noqa: E402
from hypothesis import given  # noqa: E402

import glrecon  # noqa: E402
import glrecon.phantom  # noqa: E402

_COMMON = dict(deadline=None, database=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
settings.register_profile("quick", max_examples=150, derandomize=True, **_COMMON)
settings.register_profile("long", max_examples=2000, derandomize=False, **_COMMON)
_PROFILE = os.environ.get("GLRECON_HYPOTHESIS_PROFILE", "quick")
if os.environ.get("GLRECON_HYPOTHESIS_EXAMPLES"):  # the profile with another number of examples a test
    settings.register_profile(_PROFILE + "-n", settings.get_profile(_PROFILE),
                              max_examples=int(os.environ["GLRECON_HYPOTHESIS_EXAMPLES"]))
    _PROFILE += "-n"
settings.load_profile(_PROFILE)

# A call that runs this long has hung: the sizes here take milliseconds. outcome()'s watchdog then prints the call and
# every thread's stack and ends the process (a C++ loop cannot be interrupted, so nothing gentler could stop it).
HANG_SECONDS = 120

# What a call may allocate (GLRECON_MEMORY_LIMIT_MB, set around each call): 2M float32 values, hundreds of times what
# the sizes here need, so that only the odd sizes meet it.
MEMORY_LIMIT_MB = 8

NAN, INF = float("nan"), float("inf")
FLOAT32_MAX = float(np.finfo(np.float32).max)
# Numbers at the edges: signed zeros, the smallest subnormal, float32's and the library's limits (1e-6 and 1e6 mm
# spacings, 1e7 mm coordinates, 65536 voxels, C's int), the extremes of double, NaN and infinities.
SPECIAL_FLOATS = (0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, -1e-300, 5e-324, 1e-310, 1e-45, 1e-38, 1e-6, 1e6, 1e7, 1e7 + 1, 65536.0,
                  65537.0, 2.0 ** 31, 2.0 ** 63, FLOAT32_MAX, 3.5e38, 1e300, -1e300, 1.7976931348623157e308, NAN, -NAN, INF,
                  -INF)
SPECIAL_INTS = (0, 1, -1, 2, 65536, 65537, 1000000, 1000001, 2 ** 31 - 1, 2 ** 31, -2 ** 31 - 1, 2 ** 63, 2 ** 64, 2 ** 64 - 1,
                2 ** 100, -2 ** 100)

# ---- the outcome of one call -----------------------------------------------------------------------------------

# The package's own TypeError names the argument first ("threads: expected a whole number, found str"); pybind11's
# ("incompatible function arguments") and NumPy's do not, and are bugs: some argument reached them unconverted.
_PACKAGE_TYPE_ERROR = re.compile(r"^[A-Za-z_][\w.]*: expected ")


class Refused(Exception):
    """The call raised what the package promises (kept for the property's checks)."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


def _hung(what):
    # Python's stderr, not fd 2 (pytest captures that): the arguments of the call, then every thread's stack.
    stream = sys.__stderr__
    stream.write(f"\nglrecon property tests: a call ran for {HANG_SECONDS} s (hung): {what}\n")
    stream.flush()
    faulthandler.dump_traceback(stream, all_threads=True)
    os._exit(70)


def outcome(call, wrong_types=(), what=None):
    """``call()``'s result, or Refused for a glrecon.Error (or for a TypeError of the package's form where an argument
    of a wrong type was given). Anything else fails the test: another exception, a NumPy warning (an overflow in a
    conversion is a silent inf), a TypeError without a wrong-typed argument. A call still running after HANG_SECONDS
    ends the process, printing ``what`` (the call's arguments) and the stacks: the work runs in C++ without the GIL,
    so a timer thread can report it; faulthandler's C watchdog, a little later, covers a hang that holds the GIL."""
    # The library's memory check (glrecon/limits.h) against a small budget: an odd size (65536 x 65536 x 1 voxels, 16
    # GiB) would otherwise be taken where the machine has the memory, and run for hours. The check is the same code.
    limit = os.environ.get("GLRECON_MEMORY_LIMIT_MB")
    os.environ["GLRECON_MEMORY_LIMIT_MB"] = str(MEMORY_LIMIT_MB)
    watchdog = threading.Timer(HANG_SECONDS, _hung, args=(what or getattr(call, "__name__", "?"),))
    watchdog.daemon = True
    watchdog.start()
    faulthandler.dump_traceback_later(HANG_SECONDS + 30, exit=True, file=sys.__stderr__)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return call()
    except glrecon.Error as e:
        message = str(e)
        assert message and "Internal error" not in message and "error_already_set" not in message, repr(message)
        note(f"refused: {type(e).__name__}: {message}")
        event(f"refused: {type(e).__name__}")  # --hypothesis-show-statistics: how often calls get through
        raise Refused(e) from None
    except TypeError as e:
        assert wrong_types, f"TypeError where every argument had a right type: {e}"
        assert _PACKAGE_TYPE_ERROR.match(str(e)), f"a TypeError not in the package's words (opaque): {e}"
        note(f"refused: TypeError: {e}")
        event("refused: TypeError")
        raise Refused(e) from None
    finally:
        if limit is None:
            del os.environ["GLRECON_MEMORY_LIMIT_MB"]
        else:
            os.environ["GLRECON_MEMORY_LIMIT_MB"] = limit
        watchdog.cancel()
        faulthandler.cancel_dump_traceback_later()


def _shown(value):
    if isinstance(value, np.ndarray):
        text = f"array(shape={value.shape}, dtype={value.dtype}, strides={value.strides}"
        if value.size <= 16 and value.dtype != object:
            text += f", values={value.ravel().tolist()!r}"
        return text + (f", spacing={value.spacing}, origin={value.origin})" if isinstance(value, glrecon.ImageArray) else ")")
    text = repr(value)
    return text if len(text) <= 300 else text[:300] + "..."


def calling(function, *args, **kwargs):
    """``function(*args, **kwargs)`` to be called by outcome(), named with its arguments (for the hang report)."""
    call = lambda: function(*args, **kwargs)  # noqa: E731
    call.__name__ = f"{getattr(function, '__qualname__', function)}(" + ", ".join(
        [_shown(a) for a in args] + [f"{k}={_shown(v)}" for k, v in kwargs.items()]) + ")"
    return call


def attempt(call, wrong_types=(), what=None):
    """(True, the result) or (False, None) for a refusal (outcome()'s rules); a success where an argument had a wrong
    type fails: it was taken silently."""
    try:
        value = outcome(call, wrong_types, what)
    except Refused:
        return False, None
    assert not wrong_types, f"accepted arguments of a wrong type: {wrong_types}"
    event("returned")
    return True, value


def result_of(call, wrong_types=(), what=None):
    """attempt()'s result, None for a refusal."""
    return attempt(call, wrong_types, what)[1]


def same_bits(a, b):
    """Equal arrays, NaN payloads and signed zeros included (the identity write_image/read_image promises)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def snapshot(value):
    """What an input holds, to check afterwards that a call left it as it was."""
    if isinstance(value, np.ndarray) and value.dtype != object and value.size <= 2 ** 20:  # not the huge broadcast ones
        return value.shape, value.dtype, value.tobytes(), getattr(value, "spacing", None), getattr(value, "origin", None)
    return None


def assert_untouched(value, before):
    if before is not None:
        assert snapshot(value)[:3] == before[:3], "the call changed its input array"


def assert_volume(vol, size, voxel=None):
    assert isinstance(vol, glrecon.ImageArray), type(vol)
    assert size is not None, "an odd size was taken"
    size = tuple(int(n) for n in size)
    assert vol.shape == size[::-1] and vol.dtype == np.float32, (vol.shape, vol.dtype)
    assert np.isfinite(vol).all(), "non-finite values in a result"
    if voxel is not None:  # the grid's spacing, as asked for
        assert vol.spacing == tuple(float(v) for v in voxel), (vol.spacing, voxel)
    assert all(math.isfinite(o) for o in vol.origin), vol.origin


def peak(a):
    return float(np.abs(np.asarray(a, dtype=np.float64)).max()) if np.size(a) else 0.0


def assert_homogeneous(once, twice, what):
    """twice = f(2x) against 2 f(x). Scaling by 2 is exact in binary floating point and commutes with the rounding of
    every +, -, * and / (and the FFT's butterflies, and the sums of the ray marcher and the backprojector), so the
    two agree bit for bit unless an intermediate leaves float's normal range. Below 2^-126 rounding is absolute (one
    subnormal step, 2^-149, per operation): against the result's scale that is invisible, so the bound is 8 ulps of
    float32 (2^-23 relative) of the largest value, and the check is skipped where the result itself is that small."""
    scale = peak(twice)
    if scale < 2.0 ** -100:
        return
    error = float(np.abs(np.asarray(twice, np.float64) - 2.0 * np.asarray(once, np.float64)).max())
    assert error <= 8 * 2.0 ** -23 * scale, f"{what}: f(2x) - 2 f(x) = {error!r} against max |f(2x)| = {scale!r}"


# ---- arguments as users give them --------------------------------------------------------------------------------

def _as_kind(value, kind):
    """``value`` as Python or NumPy numbers (an overflow to inf in float32 is what such a user would pass)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "python":
            return value
        if kind == "fraction" and isinstance(value, (int, float)) and math.isfinite(value):
            return fractions.Fraction(value)
        if kind in ("float32", "float16"):
            return np.dtype(kind).type(value) if isinstance(value, float) or abs(value) < 2 ** 200 else value
        if kind == "float64":
            try:
                return np.float64(value)
            except OverflowError:
                return value
        if kind == "int64" and isinstance(value, int) and -2 ** 63 <= value < 2 ** 63:
            return np.int64(value)
        if kind == "uint64" and isinstance(value, int) and 0 <= value < 2 ** 64:
            return np.uint64(value)
        if kind == "0d" and (isinstance(value, float) or abs(value) < 2 ** 63):
            return np.array(value)
        return value


NUMBER_KINDS = st.sampled_from(["python", "python", "python", "float64", "float32", "float16", "int64", "uint64", "0d",
                                "fraction"])
# Values of a wrong type for a number: the package answers each with TypeError naming the argument.
WRONG_SCALARS = ["1", b"1", "nan", 1 + 2j, np.complex64(1), True, np.bool_(False), decimal.Decimal("1.5"), object()]
WRONG_NUMBERS = st.sampled_from(WRONG_SCALARS + [[1.0], (1.0,), np.array([1.0, 2.0])])


class Args:
    """Draws arguments: most of them sensible (so that calls succeed and their results get checked), some at the
    edges, some of a wrong type. ``chaos`` (drawn per example) sets how many: none, a few, or about half."""

    def __init__(self, data):
        self.data = data
        self.chaos = data.draw(st.sampled_from(["tame", "tame", "some", "some", "some", "wild"]), label="chaos")
        self.wrong = []
        self.items = {}  # label -> the numbers several() gave, as the package reads them (None where it cannot)
        self.iterators = {}  # id of a one-shot iterator handed out -> its items, for fresh()

    def draw(self, strategy, label):
        return self.data.draw(strategy, label=label)

    def odd(self, label):
        """Whether this argument is to be an odd one."""
        if self.chaos == "tame":
            return False
        return self.draw(st.integers(0, 9 if self.chaos == "some" else 1), label=f"{label} odd?") == 0

    def wrong_type(self, label, strategy):
        self.wrong.append(label)
        return self.draw(strategy, label=f"{label} (wrong type)")

    def number(self, label, sane, odd=None, whole=False, scalars_only=False):
        """A number: ``sane`` mostly; at the edges (SPECIAL_*, any float or int, ``odd``) or of a wrong type otherwise
        (``scalars_only``: no sequences, which are right where one number or several are taken)."""
        if self.odd(label):
            if self.draw(st.integers(0, 7), label=f"{label} wrong type?") == 0:
                return self.wrong_type(label, st.sampled_from(WRONG_SCALARS) if scalars_only else WRONG_NUMBERS)
            edges = [st.sampled_from(SPECIAL_FLOATS), st.sampled_from(SPECIAL_INTS), st.floats(),
                     st.integers(-2 ** 70, 2 ** 70)]
            if whole:
                edges.append(st.sampled_from([2.5, 3.0, -0.5, 1e-300]))
            if odd is not None:
                edges.append(odd)
            return _as_kind(self.draw(st.one_of(edges), label=label), self.draw(NUMBER_KINDS, label=f"{label} kind"))
        value = self.draw(sane, label=label)
        if isinstance(value, str):
            return value
        kind = _as_kind(value, self.draw(NUMBER_KINDS, label=f"{label} kind"))
        # A sensible value stays itself: only kinds that hold it exactly (float16 does not hold 1234.5).
        return kind if float(kind) == value else value

    def several(self, label, count, sane, odd=None, whole=False, scalar_ok=True):
        """``count`` numbers (a tuple, list or array), or one number where ``scalar_ok``; odd: wrong lengths, strings."""
        self.items[label] = None
        if self.odd(label + " sequence"):
            choice = self.draw(st.sampled_from(["short", "long", "string", "none", "nested", "generator"]), label=label)
            if choice in ("short", "long"):
                n = count - 1 if choice == "short" else count + 1
                return tuple(self.number(f"{label}[{i}]", sane, odd, whole) for i in range(n))
            if choice == "nested":
                self.wrong.append(label)
                return [(self.number(label, sane, odd, whole),)] * count
            if choice == "generator":  # any iterable of the right length is right
                items = tuple(self.number(f"{label}[{i}]", sane, odd, whole) for i in range(count))
                self.items[label] = items
                iterator = iter(items)
                self.iterators[id(iterator)] = (iterator, items)
                return iterator
            return self.wrong_type(label, st.sampled_from(["1,2,3", b"123"]))  # (None is a default where it is taken)
        if scalar_ok and self.draw(st.booleans(), label=f"{label} scalar?"):
            value = self.number(label, sane, odd, whole, scalars_only=True)
            self.items[label] = (value,) * count
            return value
        wrong_before = len(self.wrong)
        items = [self.number(f"{label}[{i}]", sane, odd, whole) for i in range(count)]
        self.items[label] = tuple(items)
        form = self.draw(st.sampled_from(["tuple", "list", "array"]), label=f"{label} form")
        if form == "array" and len(self.wrong) == wrong_before:  # NumPy would make a wrong-typed item a number
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return np.array(items)
            except (TypeError, ValueError, OverflowError):
                return tuple(items)
        return tuple(items) if form == "tuple" else items

    def fresh(self, kwargs):
        """``kwargs`` for a second call: a one-shot iterator given to the first (and used up by it) made anew."""
        def again(value):
            kept = self.iterators.get(id(value))
            return iter(kept[1]) if kept is not None and kept[0] is value else value
        return {k: again(v) for k, v in kwargs.items()}

    def text(self, label, sane, odd=()):
        if self.odd(label):
            if self.draw(st.integers(0, 3), label=f"{label} wrong type?") == 0:
                return self.wrong_type(label, st.sampled_from([None, 1, 2.5, ["cpu"], object()]))
            return self.draw(st.one_of(st.sampled_from(["", " ", "\0", "cpu\0", "\udcff", "é", "x" * 300, *odd]), st.text(max_size=12),
                                       st.binary(max_size=12)), label=label)
        return self.draw(sane, label=label)

    def flag(self, label, sane=st.booleans()):
        if self.odd(label):
            if self.draw(st.integers(0, 2), label=f"{label} wrong type?") == 0:
                return self.wrong_type(label, st.sampled_from(["yes", None, 1.5, [True]]))
            return self.draw(st.sampled_from([0, 1, 2, -1, np.bool_(True), np.int8(0), np.array(True)]), label=label)
        return self.draw(sane, label=label)

    # ---- arrays ----

    def array(self, label, shape, values, sane_dtype="float32", none_ok=False):
        """An array of ``shape`` holding ``values`` (a strategy of floats), in a dtype and a memory layout drawn here;
        odd ones: other shapes (zero-length axes, other dimensions, huge broadcast arrays), dtypes the package refuses
        (complex, object, strings), ragged lists, None."""
        if self.odd(label):
            kind = self.draw(st.sampled_from(["shape", "shape", "dtype", "dtype", "huge", "ragged", "values", "none", "scalar"]),
                             label=f"{label} odd kind")
            if kind == "shape":
                shape = self.draw(st.lists(st.integers(0, 5), min_size=0, max_size=4).map(tuple), label=f"{label} shape")
            elif kind == "huge":
                # No memory behind them (strides 0): the package must refuse them before converting or allocating.
                huge = self.draw(st.lists(st.sampled_from([1, 2, 3, 65536, 65537, 1000000, 1000001, 2 ** 31, 2 ** 40]),
                                          min_size=len(shape), max_size=len(shape)), label=f"{label} huge shape")
                if math.prod(huge) < 2 ** 44:  # at least 64 TiB of float32: more than any machine has
                    huge[-1] = -(-2 ** 44 // math.prod(huge[:-1]))
                while math.prod(huge) >= 2 ** 58:  # NumPy's own limit on an array's bytes (2^63)
                    huge[huge.index(max(huge))] //= 2 ** 20
                return np.broadcast_to(self.draw(st.sampled_from([np.float32(0), np.float64(1), np.int8(1), np.bool_(True)]),
                                                 label=f"{label} fill"), huge)
            elif kind == "ragged":
                return [[1.0, 2.0], [3.0]]
            elif kind == "none":
                return None if not none_ok else self.wrong_type(label, st.sampled_from(["array", 3.5, object()]))
            elif kind == "scalar":
                return self.draw(st.sampled_from([1.0, np.float32(2), "abc"]), label=label)
            elif kind == "dtype":
                return self._strange_dtype(label, shape)
            elif kind == "values":
                values = st.one_of(st.sampled_from(SPECIAL_FLOATS), st.floats())
        dtype = self.draw(st.sampled_from([sane_dtype] * 6 + ["float64", "float16", "int8", "uint8", "int16", "uint16",
                                                              "int32", "int64", "uint64", "bool", ">f4", ">f8"]),
                          label=f"{label} dtype")
        broadcast = self.draw(st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)), label=f"{label} broadcast axes")
        base_shape = tuple(1 if b else n for n, b in zip(shape, broadcast)) if self.odd(f"{label} broadcast") else tuple(shape)
        count = math.prod(base_shape)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if count <= 12:  # every value drawn (and shrunk) by hypothesis
                flat = np.array(self.draw(st.lists(values, min_size=count, max_size=count), label=f"{label} values"))
            else:  # larger arrays from a few drawn values and a seed, to keep hypothesis's buffer small
                pool = self.draw(st.lists(values, min_size=1, max_size=6), label=f"{label} value pool")
                rng = np.random.default_rng(self.draw(st.integers(0, 2 ** 32 - 1), label=f"{label} seed"))
                if self.draw(st.booleans(), label=f"{label} from the pool"):
                    flat = rng.choice(np.array(pool), count)
                else:  # smooth: uniform between 0 and the first value, the others at random places
                    flat = rng.uniform(0, 1, count) * pool[0]
                    flat[rng.integers(0, count, len(pool) - 1)] = pool[1:]
            base = np.asarray(flat, dtype=np.float64).reshape(base_shape)
            if np.dtype(dtype).kind in "iub":
                base = np.nan_to_num(base, nan=0.0, posinf=0.0, neginf=0.0)
                info = np.iinfo(dtype) if np.dtype(dtype).kind != "b" else None
                base = (base != 0) if info is None else np.clip(np.round(base), info.min, info.max)
            base = base.astype(dtype)
        if base_shape != tuple(shape):
            return np.broadcast_to(base, shape)
        return self._layout(label, base)

    def _layout(self, label, a):
        """The same values in another memory layout."""
        layout = self.draw(st.sampled_from(["c"] * 4 + ["reversed", "strided", "fortran", "unaligned", "readonly", "list",
                                                        "imagearray"]), label=f"{label} layout")
        if a.ndim == 0 or a.size == 0:
            return a
        if layout == "reversed":  # negative strides
            axis = self.draw(st.integers(0, a.ndim - 1), label=f"{label} reversed axis")
            return np.flip(np.flip(a, axis).copy(), axis)
        if layout == "strided":  # every other element of a larger array
            axis = self.draw(st.integers(0, a.ndim - 1), label=f"{label} strided axis")
            big_shape = list(a.shape)
            big_shape[axis] *= 2
            big = np.zeros(big_shape, a.dtype)
            index = [slice(None)] * a.ndim
            index[axis] = slice(None, None, 2)
            big[tuple(index)] = a
            return big[tuple(index)]
        if layout == "fortran":
            return np.asfortranarray(a)
        if layout == "unaligned":  # a C-contiguous array at an odd address
            out = np.ndarray(a.shape, a.dtype, buffer=memoryview(bytearray(a.nbytes + 1))[1:])
            out[...] = a
            return out
        if layout == "readonly":
            a = a.copy()
            a.setflags(write=False)
            return a
        if layout == "list":
            return a.tolist()
        if layout == "imagearray":
            return glrecon.ImageArray(a, spacing=(1.0, 1.0, 1.0), origin=(0.0, 0.0, 0.0))
        return a

    def _strange_dtype(self, label, shape):
        kind = self.draw(st.sampled_from(["complex64", "complex128", "object", "U3", "S3", "timedelta64[s]", "datetime64[s]",
                                          "V4", "record", "longdouble"]), label=f"{label} strange dtype")
        n = math.prod(shape)
        if kind == "object":
            items = self.draw(st.lists(st.one_of(st.floats(), st.integers(), st.none(), st.text(max_size=3)), min_size=n, max_size=n),
                              label=f"{label} objects")
            a = np.empty(n, dtype=object)
            a[:] = items
            return a.reshape(shape)
        if kind == "record":
            return np.zeros(shape, dtype=[("a", "f4"), ("b", "f4")])
        return np.zeros(shape, dtype=kind) if kind != "longdouble" else np.ones(shape, dtype=np.longdouble)


# ---- values ------------------------------------------------------------------------------------------------------

def sane_floats(lo, hi):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


# Array values: mostly moderate line integrals or densities, sometimes anything a float can be.
DATA = st.one_of(sane_floats(-10, 10), sane_floats(-10, 10), sane_floats(-10, 10), st.just(0.0),
                 st.sampled_from(SPECIAL_FLOATS), st.floats(width=32))
POSITIVE_DATA = sane_floats(0, 1e3)
DETECTOR_PIXELS = st.integers(1, 8)
VOXELS = st.integers(1, 8)


def image_array(args, array, label, spacings, origins):
    """``array`` as an ImageArray with a spacing and an origin drawn: through the constructor (which checks them; a
    refusal leaves the plain array), or, at times, set as attributes (anything a user can assign)."""
    wrong = len(args.wrong)
    spacing = args.several(f"{label}.spacing", 3, spacings, odd=st.sampled_from([0.0, -1.0, 1e-300, 1e300]))
    origin = args.several(f"{label}.origin", 3, origins, odd=st.sampled_from([1e7, NAN]))
    if args.odd(f"{label} attributes"):
        image = glrecon.ImageArray(array)
        for name in ("spacing", "origin"):
            items = args.items[f"{label}.{name}"]
            if items is None:  # an odd form: a string instead, which the reconstructions refuse as a wrong type
                setattr(image, name, args.wrong_type(f"{label}.{name}", st.sampled_from(["1,1,1", b"1"])))
            else:
                setattr(image, name, items)
        return image
    image = result_of(calling(glrecon.ImageArray, array, spacing=spacing, origin=origin), args.wrong[wrong:])
    if image is None:
        del args.wrong[wrong:]  # the wrong types drawn were in the refused spacing or origin
        return array
    assert isinstance(image, glrecon.ImageArray) and len(image.spacing) == len(image.origin) == 3
    assert image.shape == array.shape and (array.size > 2 ** 20 or same_bits(image, array))
    return image


def scan_geometry(args, views_max=6, label="geometry"):
    """A small circular scan (cone-beam, sid 1000 mm, sdd 1536 mm) whose detector covers a volume of about 100 mm
    around the origin: the grids below fall inside its beam unless an odd value moves them."""
    views = args.draw(st.integers(1, views_max), label=f"{label} views")
    nu, nv = args.draw(DETECTOR_PIXELS, label=f"{label} nu"), args.draw(DETECTOR_PIXELS, label=f"{label} nv")
    su, sv = args.draw(sane_floats(20, 80), label=f"{label} su"), args.draw(sane_floats(20, 80), label=f"{label} sv")
    arc = args.draw(st.sampled_from([360.0, 200.0, 180.0, 90.0]), label=f"{label} arc")
    return glrecon.Geometry.circular(views, detector=(nu, nv), pixel=(su, sv), arc=arc)


def grid_args(args, label=""):
    """size, spacing, origin of a volume around the origin (at most 8^3 voxels of 1 to 12 mm), odd ones at times."""
    size = args.several(f"{label}size", 3, VOXELS, whole=True)
    spacing = args.several(f"{label}spacing", 3, sane_floats(1, 12), odd=st.sampled_from([1e-6, 1e6, 1e-7, 2e6]))
    origin = None
    if args.draw(st.booleans(), label=f"{label}origin given?"):
        origin = args.several(f"{label}origin", 3, sane_floats(-40, 0), odd=st.sampled_from([1e7, -1e7, 5000.0]))
    return size, spacing, origin


# ---- geometry ----------------------------------------------------------------------------------------------------

@given(data=st.data())
def test_circular(data):
    args = Args(data)
    kwargs = dict(
        projections=args.number("projections", st.integers(1, 12), whole=True),
        sid=args.number("sid", sane_floats(100, 2000)), sdd=args.number("sdd", sane_floats(2000, 3000)),
        detector=args.several("detector", 2, st.integers(1, 16), whole=True),
        pixel=args.several("pixel", 2, sane_floats(0.1, 10), odd=st.sampled_from([1e-6, 1e6, 1e-7])),
        first_angle=args.number("first_angle", sane_floats(-720, 720)), arc=args.number("arc", sane_floats(-400, 400)),
        detector_offset=args.several("detector_offset", 2, sane_floats(-50, 50), scalar_ok=False),
        source_offset=args.several("source_offset", 2, sane_floats(-50, 50), scalar_ok=False),
        out_of_plane=args.number("out_of_plane", sane_floats(-10, 10)), in_plane=args.number("in_plane", sane_floats(-10, 10)))
    g = result_of(calling(glrecon.Geometry.circular, **kwargs), args.wrong)
    if g is None:
        return
    n = int(kwargs["projections"])
    assert len(g) == n and g.is_circular
    vectors = g.vectors
    assert vectors.shape == (n, 12) and vectors.dtype == np.float64 and np.isfinite(vectors).all()
    assert g.gantry_angles.shape == (n,) and np.isfinite(g.gantry_angles).all()
    nu, nv = g.detector
    assert 1 <= nu <= 65536 and 1 <= nv <= 65536
    # The pixel steps are the pixel sizes: |u| = su, |v| = sv, to the rounding of the rotations (a few ulps).
    su, sv = g.pixel
    np.testing.assert_allclose(np.linalg.norm(vectors[:, 6:9], axis=1), su, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(vectors[:, 9:12], axis=1), sv, rtol=1e-12)


@given(data=st.data())
def test_rtk_file_round_trip(data, tmp_path_factory):
    """write_rtk then read_rtk_geometry then with_detector gives the same vectors bit for bit: the XML keeps 17 digits,
    and the vectors are computed from the same parameters by the same code."""
    args = Args(data)
    g = result_of(calling(glrecon.Geometry.circular, 
        args.draw(st.integers(1, 8), label="views"), sid=args.draw(sane_floats(100, 2000), label="sid"),
        sdd=args.draw(sane_floats(2000, 3000), label="sdd"), detector=(4, 3), pixel=(2.0, 1.5),
        first_angle=args.draw(sane_floats(-1e6, 1e6), label="first_angle"), arc=args.draw(sane_floats(-1e5, 1e5), label="arc"),
        detector_offset=(args.draw(sane_floats(-100, 100), label="offset u"), 0.0),
        source_offset=(0.0, args.draw(sane_floats(-100, 100), label="source offset v")),
        out_of_plane=args.draw(sane_floats(-1e6, 1e6), label="out"), in_plane=args.draw(sane_floats(-1e6, 1e6), label="in")))
    if g is None:
        return
    path = tmp_path_factory.mktemp("rtk") / "g.xml"
    g.write_rtk(path)
    back = glrecon.read_rtk_geometry(path)
    assert back.detector is None and len(back) == len(g)
    bound = result_of(calling(back.with_detector, g.detector, g.pixel, g.detector_origin))
    assert bound is not None, "a geometry written by write_rtk was refused when read back"
    assert same_bits(bound.vectors, g.vectors)


@given(data=st.data())
def test_from_vectors(data):
    args = Args(data)
    views = args.draw(st.integers(1, 6), label="views")
    rows = glrecon.Geometry.circular(views, detector=(8, 8), pixel=(2.0, 2.0)).vectors
    values = st.one_of(st.sampled_from(rows.ravel().tolist()), sane_floats(-2000, 2000))
    vectors = args.array("vectors", (views, 12), values, sane_dtype="float64")
    if isinstance(vectors, np.ndarray) and vectors.shape == rows.shape and vectors.dtype == np.float64 \
            and args.draw(st.booleans(), label="the circular scan's own rows"):
        vectors = rows.copy()
    detector = args.several("detector", 2, st.integers(1, 16), whole=True, scalar_ok=False)
    before = snapshot(vectors)
    g = result_of(calling(glrecon.Geometry.from_vectors, vectors, detector), args.wrong)
    assert_untouched(vectors, before)
    if g is None:
        return
    given_rows = np.asarray(vectors, dtype=np.float64)
    assert len(g) == len(given_rows) and not g.is_circular
    assert same_bits(g.vectors, np.ascontiguousarray(given_rows)), "from_vectors did not keep its rows"
    assert g.detector == tuple(int(d) for d in args.items["detector"])
    assert np.isfinite(g.vectors).all()


@given(data=st.data())
def test_with_detector(data, tmp_path_factory):
    args = Args(data)
    base = glrecon.Geometry.circular(args.draw(st.integers(1, 4), label="views"), detector=(4, 4), pixel=(4.0, 4.0))
    if args.draw(st.booleans(), label="from an RTK file"):
        path = tmp_path_factory.mktemp("rtk") / "g.xml"
        base.write_rtk(path)
        base = glrecon.read_rtk_geometry(path)
    detector = args.several("detector", 2, st.integers(1, 16), whole=True)
    pixel = args.several("pixel", 2, sane_floats(0.01, 100), odd=st.sampled_from([1e-6, 1e6, 1e-7, 2e6, 0.0]))
    origin = None
    if args.draw(st.booleans(), label="origin given?"):
        origin = args.several("origin", 2, sane_floats(-500, 500), odd=st.sampled_from([1e7, -1e7, 1e8]), scalar_ok=False)
    g = result_of(calling(base.with_detector, detector, pixel, origin), args.wrong)
    if g is None:
        return
    nu, nv = g.detector
    assert (nu, nv) == tuple(int(n) for n in args.items["detector"])
    su, sv = g.pixel
    assert (su, sv) == tuple(float(s) for s in args.items["pixel"])
    if origin is None:  # centred: pixel (0, 0) at -(n - 1)/2 pixels
        assert g.detector_origin == (-0.5 * (nu - 1) * su, -0.5 * (nv - 1) * sv)
    assert np.isfinite(g.vectors).all() and g.vectors.shape == (len(base), 12)


@given(data=st.data())
def test_from_astra_vec(data):
    args = Args(data)
    views = args.draw(st.integers(1, 6), label="views")
    t = np.deg2rad(np.linspace(0, 360, views, endpoint=False))
    s, c, z = np.sin(t), np.cos(t), np.zeros_like(t)
    cone = np.stack([s * 1000, -c * 1000, z, -s * 536, c * 536, z, c * 1.5, s * 1.5, z, z, z, z + 2.0], axis=1)
    values = st.one_of(st.sampled_from(cone.ravel().tolist()), sane_floats(-2000, 2000))
    vectors = args.array("vectors", (views, 12), values, sane_dtype="float64")
    if isinstance(vectors, np.ndarray) and vectors.shape == cone.shape and args.draw(st.booleans(), label="a real cone scan"):
        vectors = cone.copy()
    rows = args.number("det_row_count", st.integers(1, 16), whole=True)
    cols = args.number("det_col_count", st.integers(1, 16), whole=True)
    before = snapshot(vectors)
    g = result_of(calling(glrecon.from_astra_vec, vectors, rows, cols), args.wrong)
    assert_untouched(vectors, before)
    if g is None:
        return
    given_rows = np.asarray(vectors, dtype=np.float64)
    assert len(g) == given_rows.shape[0] and g.detector == (int(cols), int(rows))
    assert np.isfinite(g.vectors).all()
    # The steps are ASTRA's, only turned (a permutation with a sign: exact).
    for part in (slice(6, 9), slice(9, 12)):
        np.testing.assert_array_equal(np.sort(np.abs(g.vectors[:, part]), axis=1), np.sort(np.abs(given_rows[:, part]), axis=1))


@given(data=st.data())
def test_from_tigre(data):
    args = Args(data)
    views = args.draw(st.integers(1, 6), label="views")
    angles = args.array("angles", (views,), sane_floats(-10, 10), sane_dtype="float64")
    kwargs = dict(DSO=args.number("DSO", sane_floats(500, 1000)), DSD=args.number("DSD", sane_floats(1000, 2000)),
                  n_detector=args.several("n_detector", 2, st.integers(1, 16), whole=True, scalar_ok=False),
                  d_detector=args.several("d_detector", 2, sane_floats(0.1, 10), scalar_ok=False,
                                          odd=st.sampled_from([1e-6, 1e6, 1e-7, 0.0])),
                  off_detector=args.several("off_detector", 2, sane_floats(-10, 10), scalar_ok=False),
                  off_origin=args.several("off_origin", 3, sane_floats(-10, 10), scalar_ok=False))
    before = snapshot(angles)
    g = result_of(calling(glrecon.from_tigre, angles=angles, **kwargs), args.wrong)
    assert_untouched(angles, before)
    if g is None:
        return
    assert len(g) == np.size(np.asarray(angles)) and np.isfinite(g.vectors).all()
    nv, nu = (int(n) for n in args.items["n_detector"])
    assert g.detector == (nu, nv)
    # |u| = |du| and |v| = |dv|: sin^2 + cos^2 = 1 to a few ulps (rtol 1e-12 leaves a thousand).
    dv, du = (abs(float(d)) for d in args.items["d_detector"])
    np.testing.assert_allclose(g.pixel, (du, dv), rtol=1e-12)


# ---- files -------------------------------------------------------------------------------------------------------

# TIFF keeps the in-plane spacing as the resolution 1/s, a rational of two 32-bit terms (the writer's continued
# fraction, stopped where the next convergent's term passes 2^32): |1/s - h/k| < 1/(k k'), k' > 2^32 the next
# denominator, so relative to 1/s = h/k that is 1/(h k') < 2^-32 (h >= 1; the same with the terms' roles swapped for
# 1/s > 1). The long profile found 6.9e-11 (864.4999999403954 mm came back as 864.5); 3000 spacings near the bounds
# and across them stay under 2.33e-10 = 2^-32. The origin is stored in pixels (-origin / s, 17 digits) and multiplied
# back by the read spacing: the same relative error, plus two roundings of 2^-53. z's spacing (ImageJ's text, 17
# digits) is exact.
TIFF_RTOL = 2.0 ** -32 + 2.0 ** -50

IMAGE_NAMES = st.sampled_from(["v.mha", "v.mhd", "v.tif", "v.tiff", "V.MHA", "v.TIF"])


@given(data=st.data())
def test_write_then_read_is_the_identity(data, tmp_path_factory):
    """write_image then read_image gives the array back bit for bit as float32 (NaN and -0 included), and its spacing
    and origin: exactly through MetaImage (17 digits); through TIFF within TIFF_RTOL (below)."""
    args = Args(data)
    ndim = args.draw(st.sampled_from([2, 3]), label="ndim")
    shape = tuple(args.draw(st.integers(1, 5), label=f"axis {i}") for i in range(ndim))
    array = args.array("array", shape, DATA)
    name = args.draw(IMAGE_NAMES, label="name")
    spacing = origin = None
    if args.draw(st.booleans(), label="spacing given?"):
        near_bounds = st.floats(-16, -6).map(lambda e: 1e6 * (1 - 10 ** e)) | st.floats(-16, -6).map(lambda e: 1e-6 * (1 + 10 ** e))
        spacing = args.several("spacing", 3, sane_floats(1e-3, 1e3), odd=st.sampled_from([1e-6, 1e6, 1e-7, 2e6, 0.0]) | near_bounds)
    if args.draw(st.booleans(), label="origin given?"):
        origin = args.several("origin", 3, sane_floats(-1e3, 1e3), odd=st.sampled_from([1e7, -1e7, 1e7 + 1]))
    directory = tmp_path_factory.mktemp("image")
    path = directory / name
    before = snapshot(array)
    written, _ = attempt(calling(glrecon.write_image, path, array, spacing=spacing, origin=origin), args.wrong)
    assert_untouched(array, before)
    if not written:
        assert sorted(os.listdir(directory)) == [], "a refused write left files"
        return
    back = result_of(calling(glrecon.read_image, path))
    assert back is not None, "read_image refused what write_image wrote"
    expected = np.asarray(array)
    with np.errstate(all="ignore"):
        expected = expected.astype(np.float32)
    expected = expected.reshape((1,) * (3 - expected.ndim) + expected.shape)
    assert same_bits(back, expected), "the values did not come back bit for bit"
    # What was asked for: the arguments, else the array's own (an ImageArray), else 1 mm and centred.
    written_spacing = tuple(float(x) for x in args.items["spacing"]) if spacing is not None else \
        getattr(array, "spacing", (1.0, 1.0, 1.0))
    written_origin = tuple(float(x) for x in args.items["origin"]) if origin is not None else getattr(array, "origin", None)
    if written_origin is None:
        written_origin = tuple(-0.5 * (n - 1) * x for n, x in zip(expected.shape[::-1], written_spacing))
    tiff = name.lower().endswith((".tif", ".tiff"))
    np.testing.assert_allclose(back.spacing, written_spacing, rtol=TIFF_RTOL if tiff else 0)
    # (An origin under s 2^-1022 in magnitude underflows in -origin / s: 1e-290 mm absolute covers it for s <= 1e6.)
    np.testing.assert_allclose(back.origin, written_origin, rtol=TIFF_RTOL if tiff else 0, atol=1e-290 if tiff else 0)
    # Writing again over it needs overwrite=True; then the file holds the same values.
    with pytest.raises(glrecon.InputError, match="existing file"):
        glrecon.write_image(path, back)
    glrecon.write_image(path, back, overwrite=True)
    assert same_bits(glrecon.read_image(path), back)


def _metaimage_header(args):
    fields = []
    keys = ["ObjectType", "NDims", "DimSize", "ElementSpacing", "Offset", "ElementType", "ElementDataFile",
            "BinaryData", "BinaryDataByteOrderMSB", "ElementByteOrderMSB", "CompressedData", "ElementNumberOfChannels",
            "HeaderSize", "TransformMatrix", "Origin", "Position"]
    values = st.one_of(st.sampled_from(["Image", "3", "2", "1", "4", "0", "-1", "2 2 2", "1 1 1", "65536 65536 65536",
                                        "2147483648 1 1", "1e300 1 1", "nan 1 1", "inf", "1 1", "0 0 0", "MET_FLOAT",
                                        "MET_DOUBLE", "MET_UCHAR", "MET_SHORT", "MET_INT", "MET_LONG", "MET_CHAR",
                                        "MET_FLOAT_ARRAY", "LOCAL", "v.raw", "/dev/zero", "True", "False", "1e-300 1 1",
                                        "1 0 0 0 1 0 0 0 1", "", "\xff"]),
                       st.text(max_size=12))
    for key in args.draw(st.lists(st.sampled_from(keys), max_size=10), label="header keys"):
        fields.append(f"{key} = {args.draw(values, label=key)}")
    if args.draw(st.booleans(), label="a sane header"):
        fields = ["ObjectType = Image", "NDims = 3", "DimSize = 2 2 2", "ElementType = MET_FLOAT", *fields[:2],
                  "ElementDataFile = LOCAL"]
    return ("\n".join(fields) + "\n").encode("utf-8", "surrogateescape")


@given(data=st.data())
def test_read_image_of_any_bytes(data, tmp_path_factory):
    """Files made of random headers and bytes, or a valid file cut or with a byte changed: read_image gives an error
    or an array consistent with itself, never a crash or a hang."""
    args = Args(data)
    name = args.draw(IMAGE_NAMES, label="name")
    directory = tmp_path_factory.mktemp("read")
    kind = args.draw(st.sampled_from(["mangled", "mangled", "header", "bytes"]), label="kind")
    if kind == "mangled":
        glrecon.write_image(directory / name, np.arange(24, dtype=np.float32).reshape(2, 3, 4), spacing=(0.5, 1, 2))
        blob = bytearray((directory / name).read_bytes())
        for _ in range(args.draw(st.integers(1, 4), label="edits")):
            at = args.draw(st.integers(0, len(blob) - 1), label="at")
            blob[at] = args.draw(st.integers(0, 255), label="byte")
        blob = blob[:args.draw(st.integers(0, len(blob)), label="cut")] if args.draw(st.booleans(), label="cut?") else blob
        (directory / name).unlink()
        if name.lower().endswith(".mhd"):
            (directory / "v.raw").write_bytes(args.draw(st.binary(max_size=200), label="raw"))
    elif kind == "header":
        blob = _metaimage_header(args) + args.draw(st.binary(max_size=100), label="data")
    else:
        blob = args.draw(st.binary(max_size=300), label="bytes")
        if args.draw(st.booleans(), label="a TIFF signature"):
            blob = b"II*\x00" + blob
    (directory / name).write_bytes(bytes(blob))
    image = result_of(calling(glrecon.read_image, directory / name))
    spec = args.draw(st.sampled_from(["file", "directory", "glob"]), label="read_projections spec")
    spec = {"file": directory / name, "directory": directory, "glob": str(directory / "*")}[spec]
    stack = result_of(calling(glrecon.read_projections, spec))
    for read in (image, stack):
        if read is not None:
            assert isinstance(read, glrecon.ImageArray) and read.dtype == np.float32 and read.ndim == 3
            assert read.flags.c_contiguous and read.size >= 1
            assert all(math.isfinite(s) and s > 0 for s in read.spacing) and all(math.isfinite(o) for o in read.origin)
    if image is not None and stack is not None and spec == directory / name:
        assert same_bits(image, stack), "read_image and read_projections read the same file differently"


@given(data=st.data())
def test_read_rtk_geometry_of_any_bytes(data, tmp_path_factory):
    """RTK geometry files written by write_rtk, then mangled (bytes changed, cut, a value replaced): an error or a
    geometry whose every view is finite once bound to a detector."""
    args = Args(data)
    directory = tmp_path_factory.mktemp("rtk")
    glrecon.Geometry.circular(3, detector=(4, 4), pixel=(2.0, 2.0), arc=200).write_rtk(directory / "g.xml")
    text = (directory / "g.xml").read_bytes()
    kind = args.draw(st.sampled_from(["bytes", "value", "cut"]), label="kind")
    if kind == "bytes":
        blob = bytearray(text)
        for _ in range(args.draw(st.integers(1, 4), label="edits")):
            blob[args.draw(st.integers(0, len(blob) - 1), label="at")] = args.draw(st.integers(0, 255), label="byte")
        text = bytes(blob)
    elif kind == "value":  # one number of the file replaced by another text
        numbers = list(re.finditer(rb"-?\d+(\.\d+)?(e[-+]?\d+)?", text))
        m = numbers[args.draw(st.integers(0, len(numbers) - 1), label="which number")]
        value = args.draw(st.one_of(st.sampled_from([b"nan", b"inf", b"-inf", b"1e300", b"-1e300", b"1e-300", b"0", b"-0", b"",
                                                     b"1e7", b"99999999999999999999", b"0x10", b" 1", b"1 2"]),
                                    st.binary(max_size=6)), label="value")
        text = text[:m.start()] + value + text[m.end():]
    else:
        text = text[:args.draw(st.integers(0, len(text)), label="cut")]
    (directory / "g.xml").write_bytes(text)
    g = result_of(calling(glrecon.read_rtk_geometry, directory / "g.xml"))
    if g is None:
        return
    assert g.detector is None and len(g) >= 1
    assert np.isfinite(g.gantry_angles).all()
    bound = result_of(calling(g.with_detector, (4, 4), (2.0, 2.0)))
    if bound is not None:
        assert np.isfinite(bound.vectors).all() and bound.vectors.shape == (len(g), 12)


# ---- line integrals ----------------------------------------------------------------------------------------------

@given(data=st.data())
def test_line_integrals(data):
    args = Args(data)
    views, nv, nu = (args.draw(st.integers(1, 4), label=n) for n in ("views", "nv", "nu"))
    raw = args.array("projections", (views, nv, nu), st.one_of(POSITIVE_DATA, DATA))
    flat = dark = None
    if args.draw(st.booleans(), label="flat?"):
        flat = args.array("flat", args.draw(st.sampled_from([(nv, nu), (1, nv, nu), (2, nv, nu)]), label="flat shape"),
                          st.one_of(sane_floats(1e3, 1e4), DATA))
    if args.draw(st.booleans(), label="dark?"):
        dark = args.array("dark", (nv, nu), st.one_of(sane_floats(0, 10), DATA))
    i0 = args.number("i0", sane_floats(1e3, 1e4), odd=st.sampled_from([3e38, 3.1e38, 1e-300]))
    if isinstance(raw, np.ndarray) and args.draw(st.booleans(), label="an ImageArray with a layout"):
        raw = image_array(args, raw, "projections", sane_floats(0.1, 10), sane_floats(-100, 100))
    before = [snapshot(a) for a in (raw, flat, dark)]
    p = result_of(calling(glrecon.line_integrals, raw, flat=flat, dark=dark, i0=i0), args.wrong)
    for a, b in zip((raw, flat, dark), before):
        assert_untouched(a, b)
    if p is None:
        return
    shape = np.shape(raw)
    assert isinstance(p, glrecon.ImageArray) and p.dtype == np.float32
    assert p.shape == shape, f"line_integrals of {shape} gave {p.shape}"
    assert np.isfinite(p).all(), "non-finite line integrals"
    # Intensities, flat and dark fields are taken as the command line takes their files: finite, within 1e20.
    for given_array in (raw, flat, dark):
        if given_array is not None:
            with np.errstate(all="ignore"):
                assert (np.abs(np.asarray(given_array, np.float64)) <= 1e20).all(), "a NaN or huge intensity was taken"
    # The largest line integral is -ln of the smallest transmission kept (1e-6): 13.8155...
    assert (p <= -math.log(1e-6) * (1 + 2.0 ** -23)).all()


@given(data=st.data())
def test_line_integrals_inverts_the_beer_lambert_law(data):
    """line_integrals(i0 exp(-p)) = p. I = i0 exp(-p) rounded to float32 is off by a relative 2^-24 at most (i0 from
    1e-30 to 9e19, under the 1e20 beyond which intensities are refused, and p up to 13 keep I a normal float32), so
    -ln(I / i0) is off by 2^-24 absolute; the division and the log run in double (negligible) and the result is rounded
    to float32 (|p| 2^-24). Bound: 2^-23 (1 + p)."""
    args = Args(data)
    p = np.array(args.draw(st.lists(sane_floats(0, 13), min_size=1, max_size=24), label="p"))
    i0 = args.draw(st.one_of(sane_floats(1e-30, 9e19), st.sampled_from([1.0, 1e4, 65535.0])), label="i0")
    intensity = (i0 * np.exp(-p)).astype(np.float32).reshape(1, 1, -1)
    use_flat = args.draw(st.booleans(), label="as a flat field")
    out = result_of(calling(glrecon.line_integrals, intensity, flat=np.full(intensity.shape[1:], i0, np.float32) if use_flat else None,
                                                   i0=i0))
    assert out is not None
    reference = float(np.float32(i0)) if use_flat else i0  # a flat field is float32 too: its own rounding, 2^-24
    expected = -np.log(intensity.astype(np.float64) / reference)
    np.testing.assert_allclose(out.ravel(), expected.ravel(), rtol=0, atol=2.0 ** -24 * (1 + 13.0))
    np.testing.assert_allclose(out.ravel(), p, rtol=0, atol=2.0 ** -23 * (1 + p).max() * (2 if use_flat else 1))


# ---- reconstruction and projection -------------------------------------------------------------------------------

BACKEND_TEXT = st.sampled_from(["cpu"])
ODD_BACKENDS = ("auto", "nope", "graphics-mp", "CPU", "cuda")


def projections_for(args, geometry, label="projections", values=DATA):
    nu, nv = geometry.detector
    views = len(geometry)
    shape = (views, nv, nu)
    if args.odd(f"{label} mismatch"):
        shape = (args.draw(st.integers(0, views + 1), label="views"), args.draw(st.integers(0, nv + 1), label="nv"),
                 args.draw(st.integers(0, nu + 1), label="nu"))
    p = args.array(label, shape, values)
    if isinstance(p, np.ndarray) and p.ndim == 3 and args.odd(f"{label} layout"):
        p = image_array(args, p, label, sane_floats(20, 80), sane_floats(-100, 100))
    return p


def common_kwargs(args):
    return dict(backend=args.text("backend", BACKEND_TEXT, odd=ODD_BACKENDS),
                threads=args.number("threads", st.integers(0, 2), whole=True))


@given(data=st.data())
def test_fdk(data):
    args = Args(data)
    geometry = scan_geometry(args)
    p = projections_for(args, geometry)
    size, spacing, origin = grid_args(args)
    kwargs = dict(size=size, spacing=spacing, origin=origin, **common_kwargs(args),
                  window=args.number("window", st.sampled_from(["auto", "max", 1, 4]), whole=True),
                  filter=args.text("filter", st.sampled_from(["ram-lak", "shepp-logan", "cosine", "hamming", "hann"]),
                                   odd=("RAM-LAK", "hann ", "box")),
                  cutoff=args.number("cutoff", sane_floats(0.05, 1)), short_scan=args.flag("short_scan"),
                  batch=args.number("batch", st.integers(1, 64), whole=True),
                  roi=args.text("roi", st.sampled_from(["", "", "fov", "fov-cylinder", "sphere:0,0,0,30", "box:-20,-20,-20,20,20,20"]),
                                odd=("cylinder:0,0", "sphere:0,0,0,nan", "sphere:0,0,0,-1", "box:1,1,1,0,0,0", "/no/such.mha")))
    if args.odd("report"):
        kwargs["report"] = args.wrong_type("report", st.sampled_from([[], "r", 1]))
    before = snapshot(p)
    vol = result_of(calling(glrecon.fdk, p, geometry, **kwargs), args.wrong)
    assert_untouched(p, before)
    if vol is None:
        return
    assert_volume(vol, args.items["size"], args.items["spacing"])
    if isinstance(p, np.ndarray) and peak(p) <= 1e30:
        twice = result_of(calling(glrecon.fdk, doubled(p), geometry, **args.fresh(kwargs)))
        if twice is not None:
            assert_homogeneous(vol, twice, "fdk")


def long_run(value, limit):
    """Whether ``value`` is an iteration count the package takes (a whole number up to glrecon/limits.h's 100000)
    above ``limit``: a valid run, but one too long for a property test; skipped."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return False
    try:
        number = float(value)
    except (OverflowError, ValueError):
        return False
    return limit < number <= 100000 and number == math.floor(number)


def grid_shape(size):
    """The (z, y, x) shape of a grid of ``size`` ((x, y, z) as drawn), None where it holds no sensible numbers."""
    if size is None:
        return None
    size = [n[()] if isinstance(n, np.ndarray) and n.ndim == 0 else n for n in size]
    if not all(isinstance(n, numbers.Real) and not isinstance(n, (bool, np.bool_)) for n in size):
        return None
    try:
        shape = tuple(int(n) for n in size)[::-1]
    except (TypeError, ValueError, OverflowError):
        return None
    return shape if all(n >= 1 for n in shape) else None


def doubled(x):
    """2 x in float64, an ImageArray's spacing and origin kept (they are the grid's or the detector's)."""
    twice = 2 * np.asarray(x, np.float64)
    return glrecon.ImageArray(twice, x.spacing, x.origin) if isinstance(x, glrecon.ImageArray) else twice


def volume_for(args, size=None, label="volume", values=DATA):
    shape = tuple(args.draw(VOXELS, label=f"{label} axis {i}") for i in range(3)) if size is None else size
    return args.array(label, shape, values)


@given(data=st.data())
def test_project(data):
    args = Args(data)
    geometry = scan_geometry(args)
    volume = volume_for(args, values=st.one_of(POSITIVE_DATA, DATA))
    spacing = args.several("spacing", 3, sane_floats(1, 12), odd=st.sampled_from([1e-6, 1e6, 1e-7])) \
        if args.draw(st.booleans(), label="spacing given?") else None
    origin = args.several("origin", 3, sane_floats(-40, 0), odd=st.sampled_from([1e7, 5000.0])) \
        if args.draw(st.booleans(), label="origin given?") else None
    step = args.number("step", sane_floats(0.5, 6), odd=st.sampled_from([1e-300, 1e10, -1.0])) \
        if args.draw(st.booleans(), label="step given?") else None
    kwargs = dict(spacing=spacing, origin=origin, step=step, gpu=args.number("gpu", st.just(0), whole=True), **common_kwargs(args))
    before = snapshot(volume)
    p = result_of(calling(glrecon.project, volume, geometry, **kwargs), args.wrong)
    assert_untouched(volume, before)
    if p is None:
        return
    nu, nv = geometry.detector
    assert isinstance(p, glrecon.ImageArray) and p.shape == (len(geometry), nv, nu) and p.dtype == np.float32
    assert np.isfinite(p).all(), "non-finite projections"
    assert p.spacing[:2] == geometry.pixel and p.origin[:2] == geometry.detector_origin
    v = np.asarray(volume, dtype=np.float64)
    if (v >= 0).all():
        # Trilinear samples of non-negative voxels are non-negative, and so are their float sums.
        assert (p >= 0).all(), "negative line integrals of a non-negative volume"
    if not v.any():
        assert not p.any(), "the projections of a zero volume are not zero"
    if peak(v) <= 1e30:
        twice = result_of(calling(glrecon.project, doubled(volume), geometry, **args.fresh(kwargs)))
        if twice is not None:
            assert_homogeneous(p, twice, "project")


METHODS = ("sart", "sirt", "cgls", "osem", "asd_pocs", "pdhg_tv")
PROJECTOR_PAIRS = st.sampled_from(["interpolating", "matched"])


@given(data=st.data())
def test_iterative(data):
    args = Args(data)
    method = args.draw(st.sampled_from(METHODS), label="method")
    geometry = scan_geometry(args, views_max=4)
    values = POSITIVE_DATA if method == "osem" and args.draw(st.booleans(), label="non-negative data") else DATA
    p = projections_for(args, geometry, values=values)
    size, spacing, origin = grid_args(args)
    kwargs = dict(size=size, spacing=spacing, origin=origin, iterations=args.number("iterations", st.integers(1, 3), whole=True),
                  roi=args.text("roi", st.sampled_from(["", "", "fov", "sphere:0,0,0,30"]), odd=("cylinder:", "/no/such.mha")),
                  step=args.number("step", sane_floats(1, 6), odd=st.sampled_from([1e-300, 1e10])) if args.odd("step given") else None,
                  projector=args.text("projector", PROJECTOR_PAIRS, odd=("Matched", "exact")),
                  stop_residual=args.number("stop_residual", st.sampled_from([0.0, 0.0, 1e-3, 0.5]), odd=st.sampled_from([1.0, 1.5])),
                  stop_change=args.number("stop_change", st.sampled_from([0.0, 0.0, 1e-3, 0.5]), odd=st.sampled_from([1.0, 1.5])),
                  **common_kwargs(args))
    if method in ("sart", "osem", "asd_pocs"):
        kwargs["subsets"] = None if args.draw(st.booleans(), label="default subsets") else \
            args.number("subsets", st.integers(1, len(geometry)), whole=True)
    if method in ("sart", "sirt", "asd_pocs"):
        kwargs["lamb"] = None if args.draw(st.booleans(), label="default lambda") else args.number("lamb", sane_floats(0.1, 1.9))
    if method in ("sart", "sirt", "osem"):
        kwargs["positivity"] = args.flag("positivity")
    if method == "asd_pocs":
        kwargs.update(tv_steps=args.number("tv_steps", st.integers(1, 5), whole=True),
                      tv_alpha=args.number("tv_alpha", sane_floats(1e-4, 1)), tv_reduction=args.number("tv_reduction", sane_floats(0.5, 1)),
                      tv_ratio=args.number("tv_ratio", sane_floats(0.1, 10)),
                      lambda_reduction=args.number("lambda_reduction", sane_floats(0.5, 1)))
    if method == "pdhg_tv":
        kwargs["tv_weight"] = args.number("tv_weight", sane_floats(0, 0.1), odd=st.sampled_from([-1e-3, 100.0, 101.0]))
        shape = grid_shape(args.items["size"])
        kwargs["initial"] = volume_for(args, shape if shape and math.prod(shape) <= 4096 else None, "initial", POSITIVE_DATA)
    if long_run(kwargs["iterations"], 100):
        event("skipped: more than 100 iterations asked for")
        return
    report = {}
    kwargs["report"] = report
    before = snapshot(p)
    vol = result_of(calling(getattr(glrecon, method), p, geometry, **kwargs), args.wrong)
    assert_untouched(p, before)
    if vol is None:
        return
    assert_volume(vol, args.items["size"], args.items["spacing"])
    assert report["residuals"] and all(math.isfinite(r) and r >= 0 for r in report["residuals"]), report["residuals"]
    assert math.isfinite(report["final_residual"]) and math.isfinite(report["data_norm"])
    assert len(report["residuals"]) <= int(kwargs["iterations"])
    if method in ("osem", "asd_pocs", "pdhg_tv") or kwargs.get("positivity"):
        assert (vol >= 0).all(), f"{method} gave negative densities"
    # Homogeneity: SART, SIRT and CGLS from x0 = 0 are linear in the data, OS-EM (multiplicative, from a constant) is
    # homogeneous of degree 1, and so are positivity's clamp (max(2x, 0) = 2 max(x, 0)) and the stopping rules (their
    # thresholds are fractions of ||b||): f(2b) = 2 f(b), as assert_homogeneous derives. So is PDHG-TV (its TV bound
    # scales with max b, its steps do not depend on b). Not ASD-POCS: its TV gradient has a smoothing epsilon. Not from
    # an initial volume, which is not doubled. Not OS-EM on data near float's subnormal range (a value under 2^-90):
    # its voxels then shrink into subnormals, whose rounding is absolute, and b / A x divides by them, turning that
    # rounding into relative error (the long profile: 8.4 ulps with a datum of 1.18e-38 beside 1.0).
    positive = np.abs(np.asarray(p, np.float64))[np.asarray(p) != 0] if isinstance(p, np.ndarray) and np.size(p) else np.zeros(0)
    near_subnormal = method == "osem" and positive.size and positive.min() < 2.0 ** -90
    if near_subnormal:
        event("homogeneity not checked: osem with data near float's subnormal range")
    if method != "asd_pocs" and not near_subnormal and "initial" not in kwargs and isinstance(p, np.ndarray) and peak(p) <= 1e30:
        kwargs["report"] = {}
        twice = result_of(calling(getattr(glrecon, method), doubled(p), geometry, **args.fresh(kwargs)))
        if twice is not None:
            assert_homogeneous(vol, twice, method)


@given(data=st.data())
def test_operator(data):
    """glrecon.Operator: forward is project (bit for bit, the same projector), back has the volume's shape, .T swaps
    them, matvec/rmatvec are the flat forms; the matched pair is an adjoint pair: <A x, y> = <x, B y>."""
    args = Args(data)
    geometry = scan_geometry(args, views_max=4)
    size, spacing, origin = grid_args(args)
    pair = args.text("projector", PROJECTOR_PAIRS, odd=("", "transpose"))
    options = dict(backend=args.text("backend", BACKEND_TEXT, odd=ODD_BACKENDS),
                   threads=args.number("threads", st.integers(0, 2), whole=True),
                   step=args.number("step", sane_floats(1, 6), odd=st.sampled_from([1e-300, 1e10])) if args.odd("step given") else None)
    A = result_of(calling(glrecon.Operator, geometry, size, spacing, origin, projector=pair, **options), args.wrong)
    if A is None:
        return
    shape = grid_shape(args.items["size"])
    nu, nv = geometry.detector
    assert A.volume_shape == shape and A.projection_shape == (len(geometry), nv, nu)
    assert A.shape == (len(geometry) * nv * nu, math.prod(shape)) and A.T.shape == A.shape[::-1]
    args.wrong.clear()  # the operator is made; what follows draws its own arguments
    x = args.array("volume", shape, st.one_of(POSITIVE_DATA, DATA))
    y = args.array("projections", A.projection_shape, DATA)
    before = snapshot(x), snapshot(y)
    ax = result_of(calling(A.forward, x), args.wrong)
    by = result_of(calling(A.back, y), args.wrong)
    assert_untouched(x, before[0])
    assert_untouched(y, before[1])
    for result, expected in ((ax, A.projection_shape), (by, A.volume_shape)):
        if result is not None:
            assert isinstance(result, np.ndarray) and result.shape == expected and result.dtype == np.float32
            assert np.isfinite(result).all(), "non-finite values from the operator"
    grid_spacing = tuple(float(v) for v in args.items["spacing"])
    if ax is not None:
        # The same projector as glrecon.project on the same grid: the same bits (interpolating pair only: project
        # has no matched pair).
        if str(pair) == "interpolating":
            grid_origin = tuple(float(v) for v in args.items["origin"]) if origin is not None else \
                tuple(-0.5 * (n - 1) * v for n, v in zip(shape[::-1], grid_spacing))
            p = result_of(calling(glrecon.project, x, geometry, spacing=grid_spacing, origin=grid_origin, **options))
            assert p is not None and same_bits(ax, p), "Operator.forward differs from project"
        assert same_bits(A.T.back(x), ax) and same_bits(A.matvec(np.asarray(x).ravel()), ax.ravel())
    if by is not None:
        assert same_bits(A.T.forward(y), by) and same_bits(A.rmatvec(np.asarray(y).ravel()), by.ravel())
    if str(pair) == "matched" and sum(A.shape) <= 400:
        # B = A^T entry by entry (the matrices built column by column from unit vectors: up to 400 calls). The two sides
        # compute each weight by their own float path. An entry sums the samples of one ray inside one voxel's trilinear
        # support (at most 2 sqrt(3) of the largest spacing long): n <= ceil(2 sqrt(3) max spacing / step) + 1 terms,
        # each step * wx * wy * wz. Two sources of difference, each side: a weight (in [0, 1], 1 - f or f of a float
        # fraction) is rounded by up to half an ulp of 1 (2^-24) whatever its size, so a term by 3 2^-24 step in
        # absolute terms (a grazing entry of 0.0035 differed by 8.9e-8: 25 ulps of itself, 0.25 ulp of 1 times the 6 mm
        # step); the products and the n - 1 additions by (n + 2) 2^-23 of the entry. The two sides apart by twice the
        # sum. A flat 8 ulps of the largest entry failed at 9.4 ulps (4^3 voxels of 10 mm, 5 samples per support), and
        # relative bounds on entries, or on <A x, y> against <A |x|, |y|>, do not hold for the matched pair (an entry
        # of 6.1e-5 differed by 1e-3 of itself); a transposition error moves entries by a whole weight times the step.
        n, m = A.shape[1], A.shape[0]
        forward = np.stack([A.matvec(np.eye(1, n, j, np.float32)[0]) for j in range(n)], axis=1).astype(np.float64)
        back = np.stack([A.rmatvec(np.eye(1, m, i, np.float32)[0]) for i in range(m)], axis=1).astype(np.float64)
        assert forward.shape == (m, n) and back.shape == (n, m)
        assert np.isfinite(forward).all() and (forward >= 0).all()  # trilinear weights times a step: never negative
        largest = max(np.abs(forward).max(), np.abs(back).max())
        gap = np.abs(forward.T - back).max()
        given_step = float(options["step"]) if options["step"] is not None else 0.0
        if given_step > 0:
            step = given_step
            samples = math.ceil(2 * math.sqrt(3) * max(grid_spacing) / step) + 1
        else:
            # The default, one sample per voxel plane across the ray's main axis: a voxel's support there is the open
            # interval between its neighbours' planes, so one sample reads it (planes c - 1 and c + 1 weigh it exactly
            # 0; 3 counted as a margin), each standing for up to 2 sqrt(3) of the largest spacing (the main axis within
            # 63 degrees of the ray: src/operators/ray_march.h).
            step = 2 * math.sqrt(3) * max(grid_spacing)
            samples = 3
        bound = 2 * ((samples + 2) * 2.0 ** -23 * largest + samples * 3 * 2.0 ** -24 * step)
        assert gap <= bound, f"matched pair: max |A^T - B| = {gap!r}, bound {bound!r} ({samples} samples), largest entry {largest!r}"
    wrong_size = args.draw(st.integers(0, 3), label="a flat vector's length off by")
    if wrong_size:
        # A flat vector of another length: refused naming it, not NumPy's reshape error.
        outcome_ok, _ = attempt(calling(A.matvec, np.zeros(math.prod(shape) + wrong_size, np.float32)))
        assert not outcome_ok
        outcome_ok, _ = attempt(calling(A.rmatvec, np.zeros(A.shape[0] + wrong_size, np.float32)))
        assert not outcome_ok


@given(data=st.data())
def test_image_array(data):
    """ImageArray(array, spacing, origin): one number or three each, checked as a function's spacing and origin."""
    args = Args(data)
    array = args.array("array", tuple(args.draw(st.integers(1, 3), label=f"axis {i}") for i in range(3)), DATA)
    spacing = args.several("spacing", 3, sane_floats(0.1, 10), odd=st.sampled_from([0.0, NAN, 1e300]))
    origin = args.several("origin", 3, sane_floats(-10, 10))
    try:
        np.asarray(array)
    except ValueError:  # a ragged list: an ImageArray is an ndarray, and answers it as np.asarray does
        with pytest.raises((ValueError, TypeError, glrecon.Error)):  # (the spacing and origin are checked first)
            glrecon.ImageArray(array, spacing, origin)
        return
    image = result_of(calling(glrecon.ImageArray, array, spacing, origin), args.wrong)
    if image is None:
        return
    assert isinstance(image, glrecon.ImageArray)
    np.testing.assert_array_equal(image.spacing, [float(v) for v in args.items["spacing"]])  # NaN equal to NaN here
    np.testing.assert_array_equal(image.origin, [float(v) for v in args.items["origin"]])
    assert all(type(v) is float for v in image.spacing + image.origin) and len(image.spacing) == len(image.origin) == 3
    assert image.shape == np.shape(array)
    if isinstance(array, np.ndarray) and array.size <= 2 ** 20:  # a view of it, no copy
        assert same_bits(image, array) and (array.size == 0 or np.shares_memory(image, array))
    if image.ndim:
        assert image[:1].spacing == image.spacing  # slicing keeps them


# ---- the phantom -------------------------------------------------------------------------------------------------

# The Shepp-Logan table (src/core/phantom.cpp): per ellipsoid the largest semi-axis and the densities (rtk, modified).
_SHEPP_LOGAN = [(0.92, 2.0, 1.0), (0.880, -0.98, -0.8), (0.41, -0.02, -0.2), (0.31, -0.02, -0.2), (0.50, 0.02, 0.2),
                (0.046, 0.02, 0.2), (0.046, 0.01, 0.1), (0.046, 0.01, 0.1), (0.1, 0.02, 0.2), (0.1, -0.02, -0.2)]


@given(data=st.data())
def test_shepp_logan(data):
    args = Args(data)
    size, spacing, origin = grid_args(args)
    variant = args.text("variant", st.sampled_from(["rtk", "modified"]), odd=("RTK", "shepp"))
    density_scale = args.number("density_scale", sane_floats(-10, 10), odd=st.sampled_from([1e6, -1e6, 1.1e6]))
    kwargs = dict(size=size, spacing=spacing, origin=origin, variant=variant,
                  scale=args.number("scale", sane_floats(1, 200), odd=st.sampled_from([1e-300, 1e7, 1.1e7])),
                  supersample=args.number("supersample", st.integers(1, 3), whole=True),
                  threads=args.number("threads", st.integers(0, 2), whole=True))
    vol = result_of(calling(glrecon.phantom.shepp_logan, density_scale=density_scale, **kwargs), args.wrong)
    if vol is None:
        return
    assert_volume(vol, args.items["size"], args.items["spacing"])
    # A voxel is a mean of point densities, each a sum of some of the ellipsoids' densities: within the sum of their
    # magnitudes (3.12 rtk, 3.2 modified), times the scale; 1e-6 for the float32 rounding and the double sums.
    column = 1 if variant == "rtk" else 2
    bound = abs(float(density_scale)) * sum(abs(row[column]) for row in _SHEPP_LOGAN) * (1 + 1e-6)
    assert peak(vol) <= bound
    if abs(float(density_scale)) <= 5e5:
        twice = result_of(calling(glrecon.phantom.shepp_logan, density_scale=2 * float(density_scale), **args.fresh(kwargs)))
        assert twice is not None
        assert_homogeneous(vol, twice, "shepp_logan")


@given(data=st.data())
def test_phantom_project(data):
    args = Args(data)
    geometry = scan_geometry(args, views_max=4)
    variant = args.text("variant", st.sampled_from(["rtk", "modified"]), odd=("", "x"))
    scale = args.number("scale", sane_floats(1, 200), odd=st.sampled_from([1e-300, 1e7, 1e-6]))
    density_scale = args.number("density_scale", sane_floats(-10, 10), odd=st.sampled_from([1e6, -1e6]))
    noise_i0 = 0.0 if args.draw(st.booleans(), label="noiseless") else \
        args.number("noise_i0", sane_floats(1, 1e6), odd=st.sampled_from([1e-300, 5e-324, 1e-310, 1e12, 1.1e12]))
    kwargs = dict(variant=variant, scale=scale, noise_i0=noise_i0,
                  supersample=args.number("supersample", st.integers(1, 2), whole=True),
                  seed=args.number("seed", st.integers(0, 2 ** 64 - 1), whole=True),
                  threads=args.number("threads", st.integers(0, 2), whole=True))
    if args.odd("geometry"):
        geometry = args.wrong_type("geometry", st.sampled_from([None, "geometry.xml", 1]))
    p = result_of(calling(glrecon.phantom.project, geometry, density_scale=density_scale, **kwargs), args.wrong)
    if p is None:
        return
    nu, nv = geometry.detector
    assert isinstance(p, glrecon.ImageArray) and p.shape == (len(geometry), nv, nu) and p.dtype == np.float32
    assert np.isfinite(p).all(), "non-finite line integrals"
    assert p.spacing == (*geometry.pixel, 1.0)
    if float(noise_i0) == 0.0:
        # A ray crosses each ellipsoid along at most its longest diameter (2 a scale); 1e-6 for the roundings (float32's
        # 2^-24 per value and sum), at every scale since the chord is solved from the closest point
        # (test_tiny_phantoms_project_in_proportion).
        column = 1 if variant == "rtk" else 2
        bound = abs(float(density_scale)) * float(scale) * sum(2 * row[0] * abs(row[column]) for row in _SHEPP_LOGAN)
        assert peak(p) <= bound * (1 + 1e-6)
        if abs(float(density_scale)) <= 5e5:
            twice = result_of(calling(glrecon.phantom.project, geometry, density_scale=2 * float(density_scale), **args.fresh(kwargs)))
            assert twice is not None
            assert_homogeneous(p, twice, "phantom.project")
    elif args.draw(st.booleans(), label="repeat"):
        # The noise is the seed's: the same seed gives the same bits.
        again = result_of(calling(glrecon.phantom.project, geometry, density_scale=density_scale, **kwargs))
        assert same_bits(p, again)


def test_noise_with_a_subnormal_i0():
    """noise_i0=5e-324 (any i0 below 1 / DBL_MAX, 5.6e-309) is within noise_i0's bounds (0 to 1e12); every pixel's count
    is 0, read as one photon, and -log(1 / i0) = -log(inf) = -inf. `glrecon phantom` refuses what it simulated; Python
    handed the -inf projections back. Now refused as the command line refuses them. (The bound itself is the library's:
    1e-300 still gives a finite but meaningless -690.8 everywhere.)"""
    g = glrecon.Geometry.circular(2, detector=(4, 4), pixel=(40.0, 40.0))
    with pytest.raises(glrecon.InputError, match=r"simulated projection value at \(0, 0, 0\): expected finite values"):
        glrecon.phantom.project(g, density_scale=0.01, noise_i0=5e-324)


def test_noise_on_negative_line_integrals():
    """Found by test_phantom_project: with a negative density_scale the line integrals are negative, the Poisson mean
    noise_i0 exp(-p) was astronomically large (or inf) and std::poisson_distribution ran for ever (density_scale=-1:
    a mean near 1e90) or returned garbage (-10: inf, every pixel ln(i0)), as `glrecon phantom --density-scale -1
    --noise-i0 1000` did; now an InputError naming the pixel. Run in a child process with a timeout, so that a hang
    fails only this test."""
    code = ("import glrecon, glrecon.phantom\n"
            "g = glrecon.Geometry.circular(2, detector=(4, 4), pixel=(40.0, 40.0))\n"
            "for ds in (-1.0, -10.0):\n"
            "    try:\n"
            "        glrecon.phantom.project(g, density_scale=ds, noise_i0=1000.0)\n"
            "        print('RESULT')\n"
            "    except glrecon.Error as e:\n"
            "        print('ERROR', e)\n")
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        pytest.fail("phantom.project(density_scale=-1, noise_i0=1000) hung")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("ERROR") for line in lines), r.stdout


def test_tiny_phantoms_project_in_proportion():
    """Found by test_phantom_project's bound (a ray crosses an ellipsoid along at most its longest diameter): the line
    integrals of the phantom scale with ``scale``, but below about 1e-3 mm they do not: the central ray of a 1000 mm scan
    gives p / scale = 1.97562 from scale 128 down to 0.01, then 1.97646 (1e-3), 1.96816 (1e-4), 5.92 (1e-5), 29.2
    (1e-6) and 681 (1e-7), up to 345 times the physical maximum, without an error: the intersection's quadratic was
    solved about the source, its discriminant cancelling at a relative eps (|source| / semi-axis)^2. Now solved from
    the closest point (a cross product, exact for this ray along an axis), the chord keeps double's precision, and the
    float32 result float's: 1e-6 relative covers the two float32 roundings (2^-24 each) with room."""
    g = glrecon.Geometry.circular(1, detector=(1, 1), pixel=(20.0, 20.0))
    unit = float(glrecon.phantom.project(g, scale=1.0)[0, 0, 0])
    for scale in (1e-3, 1e-5, 1e-7):
        p = float(glrecon.phantom.project(g, scale=scale)[0, 0, 0])
        assert p / scale == pytest.approx(unit, rel=1e-6), (scale, p / scale, unit)


@pytest.mark.parametrize("call", [
    lambda g, p: glrecon.sirt(p, g, size=65536, spacing=1e-6, iterations=1),
    lambda g, p: glrecon.cgls(p, g, size=65536, spacing=1e-6, iterations=1, roi="fov"),
    lambda g, p: glrecon.Operator(g, 65536, spacing=1e-6),
], ids=["sirt", "cgls-roi", "Operator"])
def test_iterative_grids_are_memory_checked(call):
    """Found by test_iterative under ASan ("requested allocation size 0x1000000000000", the region of interest's mask):
    a 65536^3 grid of 1e-6 mm voxels (in the beam, so the geometry's checks pass) raises MemoryError (std::bad_alloc)
    from the iterative methods and Operator, where fdk and phantom.shepp_logan raise glrecon.InputError naming the
    memory needed; a grid that fits the address space but not the memory ((65536, 65536, 1) with a region of interest)
    was killed by the kernel's OOM killer instead. Now the mask (makeRegionOfInterest) and the cpu operator's volume
    (makeOperator) are checked before they are allocated, as the reconstruction's working set already was."""
    g = glrecon.Geometry.circular(4, detector=(8, 8), pixel=(40.0, 40.0))
    with pytest.raises(glrecon.InputError, match="memory"):
        call(g, np.ones((4, 8, 8), np.float32))
