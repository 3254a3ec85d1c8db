"""cudaep._errors — errors and the checks of arguments and tensors, before anything is sent."""

import collections.abc
import numbers
import operator
import os
import numpy as np
from ._lib import (
    DTYPES, EBOUNDS, EDTYPE, EINVAL, ENAMETOOLONG, ESHAPE, MAX_RANK, _CODES, _DTYPES,
    _ORT_TYPES, _cep_err_name, _cep_last_error, _cep_strerror)


# ------------------------------------------------------------------ errors

class Error(Exception):
    """A failed call: .code is the negative CEP_E* code, .name its name
    ("EINVAL"), .detail the daemon's message."""

    def __init__(self, code, detail=None):
        self.code = code
        self.name = _cep_err_name(code).decode()
        self.detail = detail if detail is not None else _cep_last_error().decode()
        super().__init__("%s: %s" % (self.name, self.detail or _cep_strerror(code).decode()))


class InvalidArgument(Error, ValueError):
    """An argument the daemon refused: an input the model does not have or
    one missing, an output it does not have, a shape, a slice outside its
    region, a name too long (EINVAL, ESHAPE, EBOUNDS, ENAMETOOLONG). Named as
    onnxruntime's exception for the same errors; a ValueError."""


class InvalidType(InvalidArgument, TypeError):
    """A tensor whose element type the model does not take (EDTYPE): an
    InvalidArgument, and a TypeError."""


class NoSuchFile(Error, FileNotFoundError):
    """A model path that does not exist (ENOENT): a FileNotFoundError, with
    its errno and filename."""

    def __str__(self):
        return Exception.__str__(self)  # Error's "ENOENT: detail", not OSError's


class ClosedError(Error, ValueError):
    """A call on a client, session or region already closed (as a closed
    file's, a ValueError)."""


_ERROR_CLASSES = {EINVAL: InvalidArgument, ESHAPE: InvalidArgument, EBOUNDS: InvalidArgument,
                  ENAMETOOLONG: InvalidArgument, EDTYPE: InvalidType}


def _error(code, detail=None):
    """The exception for a failed call's code: Error, or the subclass that
    says what kind of failure it was."""
    return _ERROR_CLASSES.get(code, Error)(code, detail)


def _check(rc):
    if rc != 0:
        raise _error(rc)


# ------------------------------------------------------- argument checks

def _want_str(arg, v, optional=True):
    if v is None and optional:
        return None
    if not isinstance(v, str):
        raise TypeError("cudaep: %s must be a str%s, not %s"
                        % (arg, " or None" if optional else "", type(v).__name__))
    if "\0" in v:
        raise ValueError("cudaep: %s contains a NUL character" % arg)
    return v


def _want_int(arg, v, lo=None, hi=None):
    if isinstance(v, (bool, np.bool_)):
        raise TypeError("cudaep: %s must be an int, not bool" % arg)
    try:
        v = operator.index(v)
    except TypeError:
        raise TypeError("cudaep: %s must be an int, not %s" % (arg, type(v).__name__)) from None
    if lo is not None and v < lo:
        raise ValueError("cudaep: %s must be at least %d, not %d" % (arg, lo, v))
    if hi is not None and v > hi:
        raise ValueError("cudaep: %s must be at most %d, not %d" % (arg, hi, v))
    return v


def _want_bool(arg, v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, numbers.Integral) and v in (0, 1):
        return bool(v)
    raise TypeError("cudaep: %s must be a bool, not %s" % (arg, type(v).__name__))


def _want_choice(arg, v, choices):
    if not isinstance(v, str):
        raise TypeError("cudaep: %s must be a str (one of %s), not %s"
                        % (arg, ", ".join(map(repr, choices)), type(v).__name__))
    if v not in choices:
        raise ValueError("cudaep: %s %r is not one of %s"
                         % (arg, v, ", ".join(map(repr, choices))))
    return choices[v]


def _want_path(arg, v):
    if isinstance(v, (str, bytes, os.PathLike)):
        path = os.fsencode(v)
        if b"\0" in path:
            raise ValueError("cudaep: %s contains a NUL character" % arg)
        return path
    raise TypeError("cudaep: %s must be a path (str, bytes or os.PathLike), not %s"
                    % (arg, type(v).__name__))


def _want_names(arg, v):
    """A list of tensor names (any iterable of str but a str itself)."""
    if isinstance(v, (str, bytes)) or not isinstance(v, collections.abc.Iterable):
        raise TypeError("cudaep: %s must be a list of names, not %s" % (arg, type(v).__name__))
    names = list(v)
    for n in names:
        if not isinstance(n, str):
            raise TypeError("cudaep: %s must hold str names, not %s (%r)"
                            % (arg, type(n).__name__, n))
    return names


def _want_mapping(arg, v, what):
    if not isinstance(v, collections.abc.Mapping):
        raise TypeError("cudaep: %s must be a mapping {%s name: array}, not %s"
                        % (arg, what, type(v).__name__))
    for n in v:
        if not isinstance(n, str):
            raise TypeError("cudaep: %s names must be str, not %s (%r)"
                            % (arg, type(n).__name__, n))
    return v


def _dtype_code(what, dt):
    """The ONNX code of numpy dtype dt, or a TypeError naming the tensor."""
    dt = np.dtype(dt)
    code = _CODES.get(dt)
    if code is not None:
        return code
    if dt.name == "bfloat16":
        why = "its numpy type is not ml_dtypes', which cudaep holds bfloat16 as"
    elif dt.kind == "V" and dt.name.startswith(("float", "int", "uint")):
        # ml_dtypes' other types: float8_e8m0fnu, float4_e2m1fn, int4, ...
        why = "cudaep stores no %s type (cast it to float16, bfloat16 or float32)" % dt.name
    else:
        why = "cudaep stores %s" % ", ".join(d.name for d in DTYPES)
    raise TypeError("cudaep: %s has dtype %s, which cudaep cannot hold: %s" % (what, dt, why))


def _as_input(name, value, dtype=None):
    """value as a C-contiguous array in native byte order. A value that is
    not an array yet (a list, a Python number) becomes one of dtype, the
    model's type for the input, as onnxruntime does."""
    what = "input %r" % name
    if isinstance(value, (str, bytes, collections.abc.Mapping)) or value is None:
        raise TypeError("cudaep: %s must be an array, not %s" % (what, type(value).__name__))
    if not isinstance(value, np.ndarray):
        try:
            value = np.asarray(value, dtype=dtype)
        except TypeError as e:
            raise TypeError("cudaep: %s cannot be made an array: %s" % (what, e)) from None
        except (ValueError, OverflowError) as e:
            raise ValueError("cudaep: %s cannot be made an array: %s" % (what, e)) from None
    if not value.dtype.isnative:
        value = value.astype(value.dtype.newbyteorder("="))
    _dtype_code(what, value.dtype)
    if value.ndim > MAX_RANK:
        raise ValueError("cudaep: %s has rank %d, at most %d" % (what, value.ndim, MAX_RANK))
    # np.require keeps 0-d arrays 0-d (ascontiguousarray would make them 1-d).
    return np.require(value, requirements="C")


def _shape_of(t):
    return tuple(t.shape[k] for k in range(t.rank))


def _output_dtype(name, code):
    dt = _DTYPES.get(code)
    if dt is None:
        extra = " (install ml_dtypes to receive %s)" % _ORT_TYPES[code] \
            if 16 <= code <= 20 else ""
        raise _error(EDTYPE, "output %r has dtype %d, which numpy cannot hold%s"
                     % (name, code, extra))
    return dt


