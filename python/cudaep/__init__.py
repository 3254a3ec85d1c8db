"""cudaep — the Python client of the cudaep GPU inference daemon.

A thin ctypes layer over libcudaep-client with numpy arrays in and out:

    import cudaep
    c = cudaep.connect()                  # the default socket, or socket="..."
    s = c.load("model.onnx")
    out = s.run({"x": x})                 # {"y": numpy array, ...}

    p = s.submit({"x": x})                # returns once the run is queued
    out = p.wait()                        # the outputs, once computed

and onnxruntime's face over it, so that code written for onnxruntime runs
on cudaep by changing its import:

    sess = cudaep.InferenceSession("model.onnx", precision="fp16")
    [y] = sess.run(["y"], {"x": x})

Tensors travel through shared-memory regions, so the daemon reads inputs and
writes outputs without a copy through the socket. Arrays that are views of
one of the client's regions (Region.array()) are passed by reference to
submit(): nothing is copied at all.

Element types: the numpy types of cudaep.DTYPES; bfloat16 and the float8
types are ml_dtypes' (ml_dtypes.bfloat16, float8_e4m3fn, float8_e4m3fnuz,
float8_e5m2, float8_e5m2fnuz, as onnx and jax hold them). Types that cudaep
does not store (float8_e8m0fnu, the 4-bit types, ...) are refused with a
TypeError naming the tensor.

Errors: a failure the daemon or the library reports raises cudaep.Error
(.code, .name, .detail: the daemon's message); those about the caller's
arguments are also the builtin exceptions Python code catches:
InvalidArgument (a ValueError: an unknown or missing input, an unknown
output, a shape, a name too long), InvalidType (an InvalidArgument and a
TypeError: a dtype the model does not take), NoSuchFile (a
FileNotFoundError: a model path that does not exist) and ClosedError (a
ValueError: a closed client, session or region). Arguments of the wrong
Python type, or outside the values a parameter takes, are refused before
anything is sent, with a plain TypeError or ValueError naming the argument.

The library is found through $CUDAEP_CLIENT_LIB, then the build tree next to
this package (build/lib/libcudaep-client.so), then the system's loader path.
"""
import collections.abc
import ctypes
import ctypes.util
import errno as _errno
import math
import mmap
import numbers
import operator
import os
import threading

import numpy as np

try:
    import ml_dtypes
except ImportError:  # bfloat16 tensors then cannot be held
    ml_dtypes = None

__all__ = ["connect", "Client", "Session", "Region", "Pending", "TensorInfo", "DTYPES",
           "Error", "InvalidArgument", "InvalidType", "NoSuchFile", "ClosedError",
           "InferenceSession", "NodeArg", "ModelMetadata", "SessionOptions", "RunOptions",
           "get_available_providers"]

MAX_RANK = 8


class _TensorInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char * 128),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int),
        ("dims", ctypes.c_int64 * MAX_RANK),
        ("dim_params", (ctypes.c_char * 64) * MAX_RANK),
    ]


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("region", ctypes.c_void_p),
        ("offset", ctypes.c_size_t),
        ("bytes", ctypes.c_size_t),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int),
        ("shape", ctypes.c_int64 * MAX_RANK),
    ]


class _Fence(ctypes.Structure):
    _fields_ = [("client", ctypes.c_void_p), ("seq", ctypes.c_uint64)]


class _SessionOptions(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("precision", ctypes.c_int),
        ("priority", ctypes.c_int),
        ("memory_limit", ctypes.c_uint64),
        ("batching", ctypes.c_int),
    ]


def _find_library():
    env = os.environ.get("CUDAEP_CLIENT_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    build = os.environ.get("CUDAEP_BUILD_DIR") or os.path.join(here, "..", "..", "build")
    local = os.path.join(build, "lib", "libcudaep-client.so")
    if os.path.exists(local):
        return local
    return ctypes.util.find_library("cudaep-client") or "libcudaep-client.so"


_lib = ctypes.CDLL(_find_library())


def _fn(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_vp, _int, _sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
_cep_strerror = _fn("cep_strerror", ctypes.c_char_p, _int)
_cep_err_name = _fn("cep_err_name", ctypes.c_char_p, _int)
_cep_last_error = _fn("cep_last_error", ctypes.c_char_p)
_cep_connect = _fn("cep_connect", _int, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_vp))
_cep_close = _fn("cep_close", None, _vp)
_cep_client_id = _fn("cep_client_id", ctypes.c_uint64, _vp)
_cep_client_backend = _fn("cep_client_backend", ctypes.c_char_p, _vp)
_cep_client_device = _fn("cep_client_device", ctypes.c_char_p, _vp)
_cep_ping = _fn("cep_ping", _int, _vp)
_cep_region_new = _fn("cep_region_new", _int, _vp, _sz, ctypes.POINTER(_vp))
_cep_region_data = _fn("cep_region_data", _vp, _vp)
_cep_region_size = _fn("cep_region_size", _sz, _vp)
_cep_region_free = _fn("cep_region_free", _int, _vp)
_cep_session_load = _fn("cep_session_load", _int, _vp, ctypes.c_char_p,
                        ctypes.POINTER(_SessionOptions), ctypes.POINTER(_vp))
_cep_session_load_fd = _fn("cep_session_load_fd", _int, _vp, _int, _int,
                           ctypes.POINTER(_SessionOptions), ctypes.POINTER(_vp))
_cep_session_free = _fn("cep_session_free", _int, _vp)
_cep_session_id = _fn("cep_session_id", ctypes.c_uint64, _vp)
_cep_session_input_count = _fn("cep_session_input_count", _int, _vp)
_cep_session_output_count = _fn("cep_session_output_count", _int, _vp)
_cep_session_input = _fn("cep_session_input", ctypes.POINTER(_TensorInfo), _vp, _int)
_cep_session_output = _fn("cep_session_output", ctypes.POINTER(_TensorInfo), _vp, _int)
_cep_run = _fn("cep_run", _int, _vp, ctypes.POINTER(_Tensor), _sz, ctypes.POINTER(_Tensor), _sz)
_cep_run_submit = _fn("cep_run_submit", _int, _vp, ctypes.POINTER(_Tensor), _sz,
                      ctypes.POINTER(_Tensor), _sz, ctypes.POINTER(_Fence))
_cep_fence_wait = _fn("cep_fence_wait", _int, ctypes.POINTER(_Fence), ctypes.c_int64)
_cep_fence_poll = _fn("cep_fence_poll", _int, ctypes.POINTER(_Fence))

# Error codes the Python layer acts on (client/cudaep.h).
ENOENT = -2
EBADF = -9
EAGAIN = -11
EINVAL = -22
ENOSPC = -28
ENAMETOOLONG = -36
ENOTCONN = -107
ETIMEDOUT = -110
ESHAPE = -4004
EDTYPE = -4005
EBOUNDS = -4006

# ONNX TensorProto.DataType -> the numpy type that holds it, and the type's
# name as onnxruntime writes it ("tensor(%s)").
_DTYPES = {
    1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16,
    6: np.int32, 7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64,
    12: np.uint32, 13: np.uint64,
}
if ml_dtypes is not None:
    _DTYPES[16] = ml_dtypes.bfloat16
    _DTYPES[17] = ml_dtypes.float8_e4m3fn
    _DTYPES[18] = ml_dtypes.float8_e4m3fnuz
    _DTYPES[19] = ml_dtypes.float8_e5m2
    _DTYPES[20] = ml_dtypes.float8_e5m2fnuz
_ORT_TYPES = {
    1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
    8: "string", 9: "bool", 10: "float16", 11: "double", 12: "uint32", 13: "uint64",
    14: "complex64", 15: "complex128", 16: "bfloat16", 17: "float8e4m3fn",
    18: "float8e4m3fnuz", 19: "float8e5m2", 20: "float8e5m2fnuz",
}
_CODES = {np.dtype(v): k for k, v in _DTYPES.items()}
DTYPES = tuple(np.dtype(v) for v in _DTYPES.values())
"""The numpy dtypes that tensors of cudaep are sent and received as."""

_PRECISIONS = {"fp32": 0, "tf32": 1, "fp16": 2, "bf16": 3}
_PRIORITIES = {"normal": 0, "high": 1, "low": 2}


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


# ---------------------------------------------------------------- objects

class TensorInfo:
    """A model input or output: name, numpy dtype (None if the client has no
    numpy type for it), dtype_code (ONNX's), type (onnxruntime's name,
    "tensor(float)"), and shape with ints for fixed dims and strings (or
    None) for symbolic ones."""

    def __init__(self, raw):
        self.name = raw.name.decode()
        self.dtype_code = raw.dtype
        self.dtype = _DTYPES.get(raw.dtype)
        self.type = "tensor(%s)" % _ORT_TYPES.get(raw.dtype, "undefined")
        self.shape = tuple(
            int(raw.dims[i]) if raw.dims[i] >= 0 else (raw.dim_params[i].value.decode() or None)
            for i in range(raw.rank))

    def __repr__(self):
        return "TensorInfo(%r, %s, %r)" % (self.name, np.dtype(self.dtype).name if self.dtype else self.dtype_code, self.shape)


class Region:
    """A shared-memory region of the client: .array(dtype, shape, offset)
    views its bytes as a numpy array without a copy."""

    def __init__(self, client, nbytes):
        self._client = client
        self._h = _vp()
        _check(_cep_region_new(client._handle(), nbytes, ctypes.byref(self._h)))
        self.size = _cep_region_size(self._h)
        self.addr = _cep_region_data(self._h)
        self._buf = (ctypes.c_uint8 * self.size).from_address(self.addr)
        client._regions.add(self)

    def array(self, dtype, shape, offset=0):
        """A numpy array of dtype and shape (a tuple of ints, or an int)
        over the region's bytes from offset on."""
        if not self._h or not self._client._h:
            raise ClosedError(EBADF, "the region is closed")
        try:
            dtype = np.dtype(dtype)
        except TypeError as e:
            raise TypeError("cudaep: dtype: %s" % e) from None
        if dtype.hasobject:
            raise TypeError("cudaep: dtype %s holds Python objects, not bytes" % dtype)
        if isinstance(shape, numbers.Integral) and not isinstance(shape, (bool, np.bool_)):
            shape = (shape,)
        if not isinstance(shape, collections.abc.Sequence):
            raise TypeError("cudaep: shape must be a tuple of ints, not %s" % type(shape).__name__)
        shape = tuple(_want_int("shape[%d]" % i, d, lo=0) for i, d in enumerate(shape))
        offset = _want_int("offset", offset, lo=0)
        count = math.prod(shape)
        if offset + count * dtype.itemsize > self.size:
            raise ValueError("cudaep: slice [%d, +%d) outside a region of %d bytes"
                             % (offset, count * dtype.itemsize, self.size))
        return np.frombuffer(self._buf, dtype=dtype, count=count, offset=offset).reshape(shape)

    def close(self):
        self._client._regions.discard(self)
        if self._h and not self._client._h:
            self._h = _vp()  # cep_close() already released it
        if self._h:
            self._buf = None
            rc = _cep_region_free(self._h)
            self._h = _vp()
            _check(rc)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _align(n, a=256):
    return (n + a - 1) // a * a


class Session:
    """A model loaded in the daemon. run() copies inputs into the session's
    region, runs, and returns the outputs as new numpy arrays (or, with
    copy=False, as views of the region valid until the next run).

    Feeds are a mapping {input name: array}. An array's dtype must be the
    model's (cudaep.InvalidType otherwise); a value that is not an array
    yet (a list, a number) is made one of the model's dtype."""

    def __init__(self, client, h, label):
        self._client = client
        self._h = h
        self._label = label
        self.id = _cep_session_id(h)
        self.inputs = [TensorInfo(_cep_session_input(h, i).contents)
                       for i in range(_cep_session_input_count(h))]
        self.outputs = [TensorInfo(_cep_session_output(h, i).contents)
                        for i in range(_cep_session_output_count(h))]
        self._input_dtypes = {i.name: i.dtype for i in self.inputs}
        self._region = None
        self._scratch = []  # regions for submit()'s copies, reused
        self._lock = threading.Lock()  # guards _scratch and _out_room
        self._out_room = {o.name: 0 for o in self.outputs}

    def _handle(self):
        if not self._h:
            raise ClosedError(EBADF, "session %r is closed" % self._label)
        if not self._client._h:
            raise ClosedError(ENOTCONN, "the client of session %r is closed" % self._label)
        return self._h

    def _feeds(self, feeds):
        """(names, arrays) of the feeds, checked and converted."""
        feeds = _want_mapping("feeds", feeds, "input")
        names = list(feeds)
        return names, [_as_input(n, feeds[n], self._input_dtypes.get(n)) for n in names]

    def _wanted(self, output_names):
        """The outputs to compute: output_names once each, in their order,
        or every output of the model for None."""
        if output_names is None:
            return [o.name for o in self.outputs]
        return list(dict.fromkeys(_want_names("output_names", output_names)))

    @staticmethod
    def _fill_inputs(tin, keep, names, arrays, places):
        """Fills the input tensors; places[i] is (region, offset)."""
        for i, (n, a) in enumerate(zip(names, arrays)):
            region, offset = places[i]
            nb = n.encode()
            keep.append(nb)
            t = tin[i]
            t.name, t.region, t.offset, t.bytes = nb, region._h, offset, a.nbytes
            t.dtype, t.rank = _dtype_code("input %r" % n, a.dtype), a.ndim
            for k, d in enumerate(a.shape):
                t.shape[k] = d

    def run(self, feeds, copy=True, output_names=None):
        """Runs and returns {output name: array} for the outputs named by
        output_names (None: all of the model's)."""
        h = self._handle()
        names, arrays = self._feeds(feeds)
        copy = _want_bool("copy", copy)
        wanted = self._wanted(output_names)
        for attempt in range(2):
            off, place = 0, []
            for a in arrays:
                place.append(off)
                off = _align(off + a.nbytes)
            outs = []
            for n in wanted:
                outs.append(off)
                off = _align(off + max(self._out_room.get(n, 0), 1))
            if self._region is None or self._region.size < off:
                if self._region is not None:
                    self._region.close()
                    self._region = None
                self._region = Region(self._client, max(off, 4096))
            for i, a in enumerate(arrays):
                self._region.array(a.dtype, a.shape, place[i])[...] = a
            tin = (_Tensor * len(arrays))()
            keep = []
            self._fill_inputs(tin, keep, names, arrays, [(self._region, p) for p in place])
            tout = (_Tensor * len(wanted))()
            for i, n in enumerate(wanted):
                nb = n.encode()
                keep.append(nb)
                t = tout[i]
                t.name, t.region, t.offset = nb, self._region._h, outs[i]
                t.bytes = self._out_room.get(n, 0)
            rc = _cep_run(h, tin, len(arrays), tout, len(wanted))
            if rc == ENOSPC and attempt == 0:
                # The reply carries every output's needed size: grow, retry.
                for i, n in enumerate(wanted):
                    self._out_room[n] = max(self._out_room.get(n, 0), tout[i].bytes)
                continue
            _check(rc)
            result = {}
            for i, n in enumerate(wanted):
                t = tout[i]
                view = self._region.array(_output_dtype(n, t.dtype), _shape_of(t), outs[i])
                result[n] = view.copy() if copy else view
            return result
        raise Error(ENOSPC, "outputs kept growing between attempts")

    def submit(self, feeds, outputs=None, output_names=None):
        """Queues a run and returns a Pending as soon as the daemon has
        accepted it, before it has computed anything. An array of feeds or
        outputs that is a view of one of the client's regions
        (Region.array()) is used where it is: the device reads and writes it
        directly, so leave the inputs alone and read the outputs only once
        Pending.wait() has returned. Other inputs are copied into a scratch
        region, and outputs not given land there and are copied out by
        wait(). The run computes the outputs given and those of
        output_names (None: all of the model's). At most 64 runs of a client
        are in flight (cudaep.Error EAGAIN beyond). Threads may submit to one
        session at once."""
        h = self._handle()
        names, arrays = self._feeds(feeds)
        given = dict(_want_mapping("outputs", {} if outputs is None else outputs, "output"))
        for n, a in given.items():
            if not isinstance(a, np.ndarray):
                raise TypeError("cudaep: output %r must be a numpy array (a view of one of "
                                "the client's regions), not %s" % (n, type(a).__name__))
            _dtype_code("output %r" % n, a.dtype)
            if self._client._locate(a) is None or not a.flags.writeable:
                raise ValueError("cudaep: output %r must be a writable, contiguous view "
                                 "of one of the client's regions" % n)
        wanted = [n for n in self._wanted(output_names) if n not in given]
        for attempt in range(2):
            spots = [self._client._locate(a) for a in arrays]
            with self._lock:
                room = dict(self._out_room)
            off, place = 0, []
            for a, spot in zip(arrays, spots):
                place.append(off if spot is None else None)
                if spot is None:
                    off = _align(off + a.nbytes)
            outs = {}
            for n in wanted:
                outs[n] = off
                off = _align(off + max(room.get(n, 0), 1))
            scratch = self._scratch_take(off) if off else None
            for i, a in enumerate(arrays):
                if spots[i] is None:
                    scratch.array(a.dtype, a.shape, place[i])[...] = a
            tin = (_Tensor * len(arrays))()
            keep = []
            self._fill_inputs(tin, keep, names, arrays,
                              [(scratch, place[i]) if spot is None else spot
                               for i, spot in enumerate(spots)])
            order = list(given) + wanted
            tout = (_Tensor * len(order))()
            for i, n in enumerate(order):
                nb = n.encode()
                keep.append(nb)
                t = tout[i]
                if n in given:
                    region, offset = self._client._locate(given[n])
                    t.name, t.region, t.offset, t.bytes = nb, region._h, offset, given[n].nbytes
                else:
                    t.name, t.region, t.offset = nb, scratch._h, outs[n]
                    t.bytes = room.get(n, 0)
            fence = _Fence()
            rc = _cep_run_submit(h, tin, len(arrays), tout, len(order), ctypes.byref(fence))
            if rc == ENOSPC and attempt == 0:
                # The reply tells every output's size: make room, retry.
                self._scratch_give(scratch)
                with self._lock:
                    for i, n in enumerate(order):
                        if n not in given:
                            self._out_room[n] = max(self._out_room.get(n, 0), tout[i].bytes)
                continue
            if rc != 0:
                self._scratch_give(scratch)
                raise _error(rc)
            return Pending(self, fence, order, tout, given, outs, scratch, (tin, keep))
        raise Error(ENOSPC, "outputs kept growing between attempts")

    def _scratch_take(self, nbytes):
        with self._lock:
            for i, r in enumerate(self._scratch):
                if r.size >= nbytes:
                    return self._scratch.pop(i)
        return Region(self._client, max(nbytes, 4096))

    def _scratch_give(self, region):
        if region is not None:
            with self._lock:
                self._scratch.append(region)

    def close(self):
        """Unloads the session; closing it again does nothing."""
        for r in self._scratch:
            r.close()
        self._scratch = []
        if self._region is not None:
            self._region.close()
            self._region = None
        if self._h and not self._client._h:
            self._h = None  # cep_close() already released it
        if self._h:
            rc = _cep_session_free(self._h)
            self._h = None
            _check(rc)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Pending:
    """A run in flight (Session.submit()). wait() returns its outputs once it
    has completed; done() says whether it has, without waiting."""

    def __init__(self, session, fence, order, tout, given, outs, scratch, keep):
        self._session = session
        self._fence = fence
        self._order = order
        self._tout = tout
        self._given = given
        self._outs = outs
        self._scratch = scratch
        self._keep = keep        # the tensors' structs and names, alive meanwhile
        self._result = None
        self._error = None

    def _finish(self, rc):
        if rc != 0:
            self._error = _error(rc)
        else:
            result = {}
            try:
                for i, n in enumerate(self._order):
                    if n in self._given:
                        result[n] = self._given[n]
                        continue
                    t = self._tout[i]
                    dt = _output_dtype(n, t.dtype)
                    result[n] = self._scratch.array(dt, _shape_of(t), self._outs[n]).copy()
                self._result = result
            except Error as e:
                self._error = e
        self._session._scratch_give(self._scratch)
        self._scratch = None
        self._keep = None

    def __del__(self):
        # A run dropped unwaited still holds its fence and its scratch
        # region until it completes.
        try:
            if self._result is None and self._error is None and self._session._client._h:
                self._finish(_cep_fence_wait(ctypes.byref(self._fence), -1))
        except Exception:
            pass

    def _closed(self):
        return ClosedError(ENOTCONN, "the client was closed while the run was in flight")

    def done(self):
        """Whether the run has completed (never waits)."""
        if self._result is None and self._error is None:
            if not self._session._client._h:
                raise self._closed()
            rc = _cep_fence_poll(ctypes.byref(self._fence))
            if rc == EAGAIN:
                return False
            self._finish(rc)
        return True

    def wait(self, timeout=None):
        """Waits for the run (at most timeout seconds, a number >= 0; None:
        as long as it takes) and returns {output name: array}: the arrays
        given to submit() as they are, the others as new arrays. Raises
        cudaep.Error with the run's error, or with name ETIMEDOUT when the
        time is up (the run stays in flight: wait again)."""
        if timeout is not None:
            if isinstance(timeout, (bool, np.bool_)) or not isinstance(timeout, numbers.Real):
                raise TypeError("cudaep: timeout must be a number of seconds or None, not %s"
                                % type(timeout).__name__)
            if not timeout >= 0:  # negative or NaN
                raise ValueError("cudaep: timeout must be >= 0 seconds (or None), not %r"
                                 % timeout)
        if self._result is None and self._error is None:
            if not self._session._client._h:
                raise self._closed()
            ns = -1 if timeout is None or timeout * 1e9 >= 2 ** 63 else int(timeout * 1e9)
            rc = _cep_fence_wait(ctypes.byref(self._fence), ns)
            if rc == ETIMEDOUT:
                raise Error(rc)
            self._finish(rc)
        if self._error is not None:
            raise self._error
        return self._result


def _options(name, precision, priority, memory_limit, batching):
    """cep_session_options from load()'s arguments, each checked."""
    name = _want_str("name", name)
    return _SessionOptions(name.encode() if name is not None else None,
                           _want_choice("precision", precision, _PRECISIONS),
                           _want_choice("priority", priority, _PRIORITIES),
                           _want_int("memory_limit", memory_limit, lo=0, hi=2 ** 64 - 1),
                           1 if _want_bool("batching", batching) else 0)


class Client:
    """A connection to cudaepd."""

    def __init__(self, socket=None, name=None):
        self._regions = set()
        self._h = _vp()
        sock = None if socket is None else _want_path("socket", socket)
        name = _want_str("name", name)
        _check(_cep_connect(sock or None, (name or "python").encode(), ctypes.byref(self._h)))
        self.id = _cep_client_id(self._h)
        self.backend = _cep_client_backend(self._h).decode()
        self.device = _cep_client_device(self._h).decode()

    def _handle(self):
        if not self._h:
            raise ClosedError(ENOTCONN, "the client is closed")
        return self._h

    def ping(self):
        _check(_cep_ping(self._handle()))

    def region(self, nbytes):
        """A new shared-memory region of nbytes (an int >= 1)."""
        nbytes = _want_int("nbytes", nbytes, lo=1)
        self._handle()
        return Region(self, nbytes)

    def _locate(self, a):
        """(region, offset) when a is a contiguous view of one of the
        client's live regions, else None."""
        if not isinstance(a, np.ndarray) or not a.flags.c_contiguous:
            return None
        ptr = a.__array_interface__["data"][0]
        for r in list(self._regions):  # a snapshot: other threads add regions
            if r._h and r.addr <= ptr and ptr + a.nbytes <= r.addr + r.size:
                return r, ptr - r.addr
        return None

    def load(self, path, name=None, precision="fp32", priority="normal", memory_limit=0,
             batching=False):
        """Loads the model at path (str, bytes or os.PathLike: a file name,
        never the model's bytes, which load_bytes() takes) into a new
        Session. name (at most 63 bytes) is shown by cudaepctl; precision is
        "fp32", "tf32", "fp16" or "bf16"; priority "normal", "high" or
        "low"; memory_limit bytes of device memory (0: none). batching=True
        lets the daemon merge its runs with other batching sessions' runs of
        the same model, precision and priority (see
        cep_session_options.batching). A path that does not exist raises
        cudaep.NoSuchFile, a FileNotFoundError."""
        p = _want_path("path", path)
        opts = _options(name, precision, priority, memory_limit, batching)
        h = _vp()
        rc = _cep_session_load(self._handle(), p, ctypes.byref(opts), ctypes.byref(h))
        if rc == ENOENT:
            e = NoSuchFile(rc)
            e.errno, e.strerror, e.filename = _errno.ENOENT, e.detail, os.fsdecode(p)
            raise e
        _check(rc)
        return Session(self, h, name or os.path.basename(os.fsdecode(p)))

    def load_bytes(self, model, name=None, precision="fp32", priority="normal",
                   memory_limit=0, batching=False):
        """As load(), from the model's serialized bytes (bytes, bytearray or
        memoryview); the model cannot have external data. name defaults to
        "<bytes>"."""
        if not isinstance(model, (bytes, bytearray, memoryview)):
            raise TypeError("cudaep: model must be bytes, not %s" % type(model).__name__)
        opts = _options("<bytes>" if name is None else name, precision, priority,
                        memory_limit, batching)
        h = _vp()
        fd = os.memfd_create("cudaep-model", os.MFD_CLOEXEC)
        try:
            view = memoryview(model).cast("B")
            done = 0
            while done < len(view):
                done += os.write(fd, view[done:])
            os.lseek(fd, 0, os.SEEK_SET)
            _check(_cep_session_load_fd(self._handle(), fd, -1, ctypes.byref(opts),
                                        ctypes.byref(h)))
        finally:
            os.close(fd)
        return Session(self, h, opts.name.decode())

    def close(self):
        """Closes the connection, and with it every region and session of
        the client; closing it again does nothing."""
        if self._h:
            _cep_close(self._h)
            self._h = _vp()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def connect(socket=None, name=None):
    """Connects to cudaepd (socket None: the default path; name: the
    client's, shown by cudaepctl)."""
    return Client(socket, name)


# -------------------------------------------------- onnxruntime's face

def get_available_providers():
    """onnxruntime's providers that InferenceSession answers to. cudaep runs
    every model on its daemon's backend whatever providers say; this lists
    the names onnxruntime code asks for, so that
    providers=get_available_providers() works as it does there."""
    return ["CUDAExecutionProvider", "CPUExecutionProvider"]


class SessionOptions:
    """Stands in for onnxruntime.SessionOptions: any attribute can be set;
    InferenceSession accepts it and ignores it (the daemon chooses its
    optimizations, threads and memory). cudaep's own options are
    InferenceSession's keywords."""


class RunOptions:
    """Stands in for onnxruntime.RunOptions: any attribute can be set;
    InferenceSession.run() accepts it and ignores it."""


class NodeArg:
    """A model input or output as onnxruntime describes it: name, shape (a
    list: an int for a fixed dimension, the dim_param string for a symbolic
    one, None for one unknown) and type ("tensor(float)", ...)."""

    __slots__ = ("name", "shape", "type")

    def __init__(self, info):
        self.name = info.name
        self.shape = list(info.shape)
        self.type = info.type

    def __repr__(self):
        return "NodeArg(name=%r, type=%r, shape=%r)" % (self.name, self.type, self.shape)


class ModelMetadata:
    """onnxruntime's model metadata: producer_name, graph_name, domain,
    description (the model's doc_string), graph_description (the graph's),
    version (model_version; 2**63 - 1 when the model has none, as
    onnxruntime gives it) and custom_metadata_map (metadata_props)."""

    def __init__(self):
        self.producer_name = self.graph_name = self.domain = ""
        self.description = self.graph_description = ""
        self.version = 2 ** 63 - 1
        self.custom_metadata_map = {}

    def __repr__(self):
        return "ModelMetadata(%s)" % ", ".join("%s=%r" % kv for kv in vars(self).items())


def _pb_fields(buf, i, end):
    """(field number, value) of a protobuf message in buf[i:end]: an int
    for a varint, a (start, end) span for a length-delimited field."""
    def varint(i):
        v = s = 0
        while True:
            if i >= end:
                raise ValueError("truncated")
            c = buf[i]
            i += 1
            v |= (c & 0x7F) << s
            s += 7
            if c < 0x80:
                return v, i
    while i < end:
        key, i = varint(i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(i)
            yield field, v
        elif wire == 2:
            n, i = varint(i)
            if i + n > end:
                raise ValueError("truncated")
            yield field, (i, i + n)
            i += n
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError("wire type %d" % wire)


def _model_metadata(buf):
    """ModelMetadata from the ModelProto in buf (onnx.proto's field
    numbers), reading its top-level fields and the graph's only."""
    m = ModelMetadata()

    def text(span):
        return bytes(buf[span[0]:span[1]]).decode("utf-8", "replace")
    for f, v in _pb_fields(buf, 0, len(buf)):
        if f == 2:
            m.producer_name = text(v)
        elif f == 4:
            m.domain = text(v)
        elif f == 5:
            m.version = v - 2 ** 64 if v >= 2 ** 63 else v
        elif f == 6:
            m.description = text(v)
        elif f == 7:
            for gf, gv in _pb_fields(buf, v[0], v[1]):
                if gf == 2:
                    m.graph_name = text(gv)
                elif gf == 10:
                    m.graph_description = text(gv)
        elif f == 14:
            key = value = ""
            for ef, ev in _pb_fields(buf, v[0], v[1]):
                if ef == 1:
                    key = text(ev)
                elif ef == 2:
                    value = text(ev)
            m.custom_metadata_map[key] = value
    return m


_ORT_KWARGS = ("enable_fallback", "read_config_from_model", "disabled_optimizers")
_LOAD_KWARGS = ("name", "precision", "priority", "memory_limit", "batching")


def _check_providers(providers, provider_options):
    if providers is not None:
        if isinstance(providers, (str, bytes)) or \
                not isinstance(providers, collections.abc.Sequence):
            raise TypeError("cudaep: providers must be a list of provider names or "
                            "(name, options) pairs, not %s" % type(providers).__name__)
        for p in providers:
            ok = isinstance(p, str) or (isinstance(p, tuple) and len(p) == 2 and
                                        isinstance(p[0], str) and
                                        isinstance(p[1], collections.abc.Mapping))
            if not ok:
                raise TypeError("cudaep: providers must hold provider names or (name, options "
                                "dict) pairs, not %r" % (p,))
    if provider_options is not None:
        if not isinstance(provider_options, collections.abc.Sequence) or not all(
                isinstance(o, collections.abc.Mapping) for o in provider_options):
            raise TypeError("cudaep: provider_options must be a list of dicts")


class InferenceSession:
    """onnxruntime.InferenceSession's face over a cudaep session, so code
    written for onnxruntime runs on cudaep by changing its import.

        sess = cudaep.InferenceSession(path_or_bytes, sess_options=None,
                                       providers=None, provider_options=None,
                                       precision="fp32", ...)

    path_or_bytes is a model file's path (str or os.PathLike) or its
    serialized bytes. providers and provider_options are accepted and
    ignored: the daemon runs every session on its own backend (cudaepd
    --backend), which no client can choose; they are only checked to be
    lists of names or (name, options) pairs. sess_options and run()'s
    run_options are accepted and ignored too (SessionOptions and RunOptions
    stand in for onnxruntime's). cudaep's own options are keywords:
    precision, priority, memory_limit, batching and name as Client.load()
    takes them, socket (the daemon's; None: the default) or client (an open
    cudaep.Client to load into, which stays the caller's; otherwise the
    session opens its own connection and closes it with close()).
    onnxruntime's own keywords enable_fallback, read_config_from_model and
    disabled_optimizers are ignored; any other keyword is a TypeError."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None,
                 **kwargs):
        self._client = None
        self._own = False
        self._session = None
        load_kw = {k: kwargs.pop(k) for k in _LOAD_KWARGS if k in kwargs}
        socket = kwargs.pop("socket", None)
        client = kwargs.pop("client", None)
        for k in _ORT_KWARGS:
            kwargs.pop(k, None)
        if kwargs:
            raise TypeError("cudaep: InferenceSession() got an unexpected keyword argument %r"
                            % next(iter(kwargs)))
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._model_path, self._model_bytes = None, bytes(path_or_bytes)
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            self._model_path, self._model_bytes = os.fspath(path_or_bytes), None
        else:
            raise TypeError("cudaep: path_or_bytes must be a model's path (str or os.PathLike) "
                            "or its bytes, not %s" % type(path_or_bytes).__name__)
        _check_providers(providers, provider_options)
        _options(load_kw.get("name"), load_kw.get("precision", "fp32"),
                 load_kw.get("priority", "normal"), load_kw.get("memory_limit", 0),
                 load_kw.get("batching", False))  # refused here, before connecting
        if client is not None:
            if not isinstance(client, Client):
                raise TypeError("cudaep: client must be a cudaep.Client, not %s"
                                % type(client).__name__)
            if socket is not None:
                raise ValueError("cudaep: give socket or client, not both")
            client._handle()
        self._sess_options = sess_options
        self._meta = None
        if client is None:
            client = Client(socket, name="python-ort")
            self._own = True
        self._client = client
        try:
            if self._model_bytes is not None:
                self._session = client.load_bytes(self._model_bytes, **load_kw)
            else:
                self._session = client.load(self._model_path, **load_kw)
        except BaseException:
            if self._own:
                client.close()
            raise
        self._inputs = [NodeArg(i) for i in self._session.inputs]
        self._outputs = [NodeArg(o) for o in self._session.outputs]
        backend = client.backend
        self._providers = ["CUDAExecutionProvider" if backend.startswith("cuda")
                           else "CPUExecutionProvider"]

    @property
    def session(self):
        """The cudaep.Session underneath (for submit() and regions)."""
        return self._session

    @property
    def client(self):
        """The cudaep.Client the session lives in."""
        return self._client

    def get_inputs(self):
        """The model's inputs, as NodeArgs."""
        return list(self._inputs)

    def get_outputs(self):
        """The model's outputs, as NodeArgs."""
        return list(self._outputs)

    def get_overridable_initializers(self):
        """Always empty: cudaep lists initializers among no inputs."""
        return []

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model on input_feed ({input name: array}) and returns the
        outputs named by output_names (None or empty: all of the model's),
        as a list of numpy arrays in that order. An unknown or missing input
        or an unknown output raises cudaep.InvalidArgument (a ValueError), an
        array of another dtype than the model's cudaep.InvalidType (also a
        TypeError). Threads may run one session at once."""
        if not output_names:
            names = [o.name for o in self._outputs]
        else:
            names = _want_names("output_names", output_names)
        result = self._session.submit(input_feed, output_names=names).wait()
        return [result[n] for n in names]

    def get_modelmeta(self):
        """The model's ModelMetadata (read from the model's file or bytes
        the first time it is asked for)."""
        if self._meta is None:
            try:
                if self._model_bytes is not None:
                    self._meta = _model_metadata(self._model_bytes)
                else:
                    with open(self._model_path, "rb") as f:
                        size = os.fstat(f.fileno()).st_size
                        if size == 0:
                            self._meta = ModelMetadata()
                        else:
                            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                                self._meta = _model_metadata(buf)
            except ValueError as e:
                raise Error(-4002, "the model's metadata cannot be read: %s" % e) from None
        return self._meta

    def get_providers(self):
        """One name: the onnxruntime provider that the daemon's backend
        stands for (CUDAExecutionProvider for cuda, CPUExecutionProvider for
        the host backends)."""
        return list(self._providers)

    def get_provider_options(self):
        return {p: {} for p in self._providers}

    def get_session_options(self):
        """The sess_options given (a new SessionOptions when none was)."""
        if self._sess_options is None:
            self._sess_options = SessionOptions()
        return self._sess_options

    def end_profiling(self):
        """"" as onnxruntime gives when it was not profiling: cudaep keeps
        no profile of a session (bench/profile shows where a model's time
        goes)."""
        return ""

    def close(self):
        """Unloads the session and closes its own connection (not a client
        given); closing it again does nothing."""
        try:
            if self._session is not None:
                self._session.close()
        finally:
            if self._own and self._client is not None:
                self._client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if self._own and self._client is not None:
                self._client.close()
        except Exception:
            pass
