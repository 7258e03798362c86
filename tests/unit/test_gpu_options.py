"""The option checks of the GPU backends and strategies (solvers/gpu/options.py): one message
shape for every option, naming the option and the value; no CuPy needed."""
import numpy as np
import pytest

from hinesbatch.solvers.gpu import options as check


@pytest.mark.parametrize("value", [1, 7, np.int64(3), np.uint8(2)])
def test_positive_int_accepts_ints_and_returns_python_ints(value):
    out = check.positive_int("threads", value)
    assert out == int(value) and type(out) is int


@pytest.mark.parametrize(("value", "error", "match"), [
    (0, ValueError, "threads must be a positive int, got 0"),
    (-3, ValueError, "threads must be a positive int, got -3"),
    (True, TypeError, "threads must be an int, got bool"),
    (np.True_, TypeError, "threads must be an int, got bool"),
    (2.0, TypeError, "threads must be an int, got float"),
    ("4", TypeError, "threads must be an int, got str"),
])
def test_positive_int_refuses_what_is_not_a_positive_int(value, error, match):
    with pytest.raises(error, match=match):
        check.positive_int("threads", value)


def test_positive_int_with_a_multiple_and_a_maximum():
    assert check.positive_int("block_size", 64, multiple_of=32, at_most=1024) == 64
    for bad in (16, 48, 2048, 0):
        with pytest.raises(ValueError, match=f"block_size must be a multiple of 32 from 32 to "
                                             f"1024, got {bad}"):
            check.positive_int("block_size", bad, multiple_of=32, at_most=1024)


def test_flag_takes_python_and_numpy_bools_only():
    assert check.flag("reroot", True) is True and check.flag("reroot", np.False_) is False
    for bad, kind in ((1, "int"), ("yes", "str"), (None, "NoneType")):
        with pytest.raises(TypeError, match=f"reroot must be a bool, got {kind}"):
            check.flag("reroot", bad)


def test_one_of_numbers_and_strings():
    assert check.one_of("buffers", 2, (1, 2)) == 2
    assert check.one_of("keep", "rhs", ("rhs", "factors")) == "rhs"
    with pytest.raises(ValueError, match=r"buffers must be one of \(1, 2\), got 3"):
        check.one_of("buffers", 3, (1, 2))
    with pytest.raises(ValueError, match=r"buffers must be one of \(1, 2\), got True"):
        check.one_of("buffers", True, (1, 2))  # True == 1, but a bool is not a count
    with pytest.raises(ValueError, match="keep must be one of 'rhs', 'factors', got 'x'"):
        check.one_of("keep", "x", ("rhs", "factors"))
    with pytest.raises(ValueError, match=r"lanes must be one of \(1,\) for per-cell structures, "
                                         r"got 2"):
        check.one_of("lanes", 2, [1], context=" for per-cell structures")


def test_optional_passes_none_through():
    assert check.optional(check.positive_int, "groups", None) is None
    assert check.optional(check.positive_int, "groups", 3) == 3
    with pytest.raises(ValueError, match="groups must be a positive int, got 0"):
        check.optional(check.positive_int, "groups", 0)
    assert check.optional(check.one_of, "buffers", 1, choices=(1, 2)) == 1
