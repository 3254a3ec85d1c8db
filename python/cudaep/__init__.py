"""cudaep — the Python client of the cudaep GPU inference daemon.

A thin ctypes layer over libcudaep-client with numpy arrays in and out:

    import cudaep
    c = cudaep.connect()                  # the default socket, or socket="..."
    s = c.load("model.onnx")
    out = s.run({"x": x})                 # {"y": numpy array, ...}

    p = s.submit({"x": x})                # returns once the run is queued
    out = p.wait()                        # the outputs, once computed

Tensors travel through shared-memory regions, so the daemon reads inputs and
writes outputs without a copy through the socket. Arrays that are views of
one of the client's regions (Region.array()) are passed by reference to
submit(): nothing is copied at all. Errors raise cudaep.Error with the
daemon's message.

Element types: the numpy types of cudaep.DTYPES; bfloat16 is ml_dtypes'
(ml_dtypes.bfloat16, as onnx and jax hold it). float8 and other types that
cudaep does not store are refused with a TypeError naming the tensor.

The library is found through $CUDAEP_CLIENT_LIB, then the build tree next to
this package (build/lib/libcudaep-client.so), then the system's loader path.
"""
import ctypes
import ctypes.util
import os
import threading

import numpy as np

try:
    import ml_dtypes
except ImportError:  # bfloat16 tensors then cannot be held
    ml_dtypes = None

__all__ = ["connect", "Client", "Session", "Region", "Pending", "Error", "TensorInfo", "DTYPES"]

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
ENOSPC = -28
EAGAIN = -11
ETIMEDOUT = -110
EDTYPE = -4005

# ONNX TensorProto.DataType -> the numpy type that holds it.
_DTYPES = {
    1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16,
    6: np.int32, 7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64,
    12: np.uint32, 13: np.uint64,
}
if ml_dtypes is not None:
    _DTYPES[16] = ml_dtypes.bfloat16
_CODES = {np.dtype(v): k for k, v in _DTYPES.items()}
DTYPES = tuple(np.dtype(v) for v in _DTYPES.values())
"""The numpy dtypes that tensors of cudaep are sent and received as."""
_PRECISIONS = {"fp32": 0, "tf32": 1, "fp16": 2, "bf16": 3}
_PRIORITIES = {"normal": 0, "high": 1, "low": 2}


class Error(Exception):
    """A failed call: .code is the negative CEP_E* code, .name its name
    ("EINVAL"), .detail the daemon's message."""

    def __init__(self, code, detail=None):
        self.code = code
        self.name = _cep_err_name(code).decode()
        self.detail = detail if detail is not None else _cep_last_error().decode()
        super().__init__("%s: %s" % (self.name, self.detail or _cep_strerror(code).decode()))


def _check(rc):
    if rc != 0:
        raise Error(rc)


def _dtype_code(what, dt):
    """The ONNX code of numpy dtype dt, or a TypeError naming the tensor."""
    dt = np.dtype(dt)
    code = _CODES.get(dt)
    if code is not None:
        return code
    if dt.name.startswith(("float8", "float6", "float4")):
        why = "cudaep stores no %s type (cast it to float16, bfloat16 or float32)" % dt.name
    elif dt.name == "bfloat16":
        why = "its numpy type is not ml_dtypes', which cudaep holds bfloat16 as"
    else:
        why = "cudaep stores %s" % ", ".join(d.name for d in DTYPES)
    raise TypeError("cudaep: %s has dtype %s, which cudaep cannot hold: %s" % (what, dt, why))


def _output_dtype(name, code):
    dt = _DTYPES.get(code)
    if dt is None:
        extra = " (install ml_dtypes to receive bfloat16)" if code == 16 else ""
        raise Error(EDTYPE, "output %r has dtype %d, which numpy cannot hold%s"
                    % (name, code, extra))
    return dt


class TensorInfo:
    """A model input or output: name, numpy dtype (None if the client has no
    numpy type for it), and shape with ints for fixed dims and
    strings (or None) for symbolic ones."""

    def __init__(self, raw):
        self.name = raw.name.decode()
        self.dtype_code = raw.dtype
        self.dtype = _DTYPES.get(raw.dtype)
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
        _check(_cep_region_new(client._h, nbytes, ctypes.byref(self._h)))
        self.size = _cep_region_size(self._h)
        self.addr = _cep_region_data(self._h)
        self._buf = (ctypes.c_uint8 * self.size).from_address(self.addr)
        client._regions.add(self)

    def array(self, dtype, shape, offset=0):
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
        if offset < 0 or offset + count * dtype.itemsize > self.size:
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
    copy=False, as views of the region valid until the next run)."""

    def __init__(self, client, h):
        self._client = client
        self._h = h
        self.id = _cep_session_id(h)
        self.inputs = [TensorInfo(_cep_session_input(h, i).contents)
                       for i in range(_cep_session_input_count(h))]
        self.outputs = [TensorInfo(_cep_session_output(h, i).contents)
                        for i in range(_cep_session_output_count(h))]
        self._region = None
        self._scratch = []  # regions for submit()'s copies, reused
        self._lock = threading.Lock()  # guards _scratch and _out_room
        self._out_room = {o.name: 0 for o in self.outputs}

    def _layout(self, arrays):
        """Offsets for the inputs then the outputs' rooms in one region."""
        off, place = 0, []
        for a in arrays:
            place.append(off)
            off = _align(off + a.nbytes)
        outs = []
        for o in self.outputs:
            outs.append(off)
            off = _align(off + max(self._out_room[o.name], 1))
        return place, outs, off

    def run(self, feeds, copy=True):
        names = list(feeds)
        # np.require keeps 0-d arrays 0-d (ascontiguousarray would make them 1-d).
        arrays = [np.require(feeds[n], requirements="C") for n in names]
        for n, a in zip(names, arrays):
            _dtype_code("input %r" % n, a.dtype)
        for attempt in range(2):
            place, outs, need = self._layout(arrays)
            if self._region is None or self._region.size < need:
                if self._region is not None:
                    self._region.close()
                self._region = Region(self._client, max(need, 4096))
            tin = (_Tensor * len(arrays))()
            keep = []
            for i, (n, a) in enumerate(zip(names, arrays)):
                if a.ndim > MAX_RANK:
                    raise ValueError("cudaep: input %r has rank %d, at most %d" % (n, a.ndim, MAX_RANK))
                self._region.array(a.dtype, a.shape, place[i])[...] = a
                nb = n.encode()
                keep.append(nb)
                t = tin[i]
                t.name, t.region, t.offset, t.bytes = nb, self._region._h, place[i], a.nbytes
                t.dtype, t.rank = _dtype_code("input %r" % n, a.dtype), a.ndim
                for k, d in enumerate(a.shape):
                    t.shape[k] = d
            tout = (_Tensor * len(self.outputs))()
            for i, o in enumerate(self.outputs):
                nb = o.name.encode()
                keep.append(nb)
                t = tout[i]
                t.name, t.region, t.offset = nb, self._region._h, outs[i]
                t.bytes = self._out_room[o.name]
            rc = _cep_run(self._h, tin, len(arrays), tout, len(self.outputs))
            if rc == ENOSPC and attempt == 0:
                # The reply carries every output's needed size: grow, retry.
                for i, o in enumerate(self.outputs):
                    self._out_room[o.name] = max(self._out_room[o.name], tout[i].bytes)
                continue
            _check(rc)
            result = {}
            for i, o in enumerate(self.outputs):
                t = tout[i]
                dt = _output_dtype(o.name, t.dtype)
                shape = tuple(t.shape[k] for k in range(t.rank))
                view = self._region.array(dt, shape, outs[i])
                result[o.name] = view.copy() if copy else view
            return result
        raise Error(ENOSPC, "outputs kept growing between attempts")

    def submit(self, feeds, outputs=None):
        """Queues a run and returns a Pending as soon as the daemon has
        accepted it, before it has computed anything. An array of feeds or
        outputs that is a view of one of the client's regions
        (Region.array()) is used where it is: the device reads and writes it
        directly, so leave the inputs alone and read the outputs only once
        Pending.wait() has returned. Other inputs are copied into a scratch
        region, and outputs not given land there and are copied out by
        wait(). At most 64 runs of a client are in flight (cudaep.Error
        EAGAIN beyond). Threads may submit to one session at once."""
        names = list(feeds)
        arrays = [np.require(feeds[n], requirements="C") for n in names]
        for n, a in zip(names, arrays):
            _dtype_code("input %r" % n, a.dtype)
        given = dict(outputs or {})
        for n, a in given.items():
            _dtype_code("output %r" % n, a.dtype)
            if self._client._locate(a) is None or not a.flags.writeable:
                raise ValueError("cudaep: output %r must be a writable, contiguous view "
                                 "of one of the client's regions" % n)
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
            for o in self.outputs:
                if o.name not in given:
                    outs[o.name] = off
                    off = _align(off + max(room[o.name], 1))
            scratch = self._scratch_take(off) if off else None
            tin = (_Tensor * len(arrays))()
            keep = []
            for i, (n, a) in enumerate(zip(names, arrays)):
                if a.ndim > MAX_RANK:
                    self._scratch_give(scratch)
                    raise ValueError("cudaep: input %r has rank %d, at most %d" % (n, a.ndim, MAX_RANK))
                if spots[i] is None:
                    scratch.array(a.dtype, a.shape, place[i])[...] = a
                    region, offset = scratch, place[i]
                else:
                    region, offset = spots[i]
                nb = n.encode()
                keep.append(nb)
                t = tin[i]
                t.name, t.region, t.offset, t.bytes = nb, region._h, offset, a.nbytes
                t.dtype, t.rank = _dtype_code("input %r" % n, a.dtype), a.ndim
                for k, d in enumerate(a.shape):
                    t.shape[k] = d
            order = list(given) + [o.name for o in self.outputs if o.name not in given]
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
                    t.bytes = room[n]
            fence = _Fence()
            rc = _cep_run_submit(self._h, tin, len(arrays), tout, len(order), ctypes.byref(fence))
            if rc == ENOSPC and attempt == 0:
                # The reply tells every output's size: make room, retry.
                self._scratch_give(scratch)
                with self._lock:
                    for i, n in enumerate(order):
                        if n not in given:
                            self._out_room[n] = max(self._out_room[n], tout[i].bytes)
                continue
            if rc != 0:
                self._scratch_give(scratch)
                raise Error(rc)
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
            self._error = Error(rc)
        else:
            result = {}
            for i, n in enumerate(self._order):
                if n in self._given:
                    result[n] = self._given[n]
                    continue
                t = self._tout[i]
                dt = _DTYPES.get(t.dtype)
                if dt is None:
                    self._error = Error(EDTYPE, "output %r has dtype %d, which numpy cannot hold"
                                        % (n, t.dtype))
                    break
                shape = tuple(t.shape[k] for k in range(t.rank))
                result[n] = self._scratch.array(dt, shape, self._outs[n]).copy()
            self._result = result
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

    def done(self):
        """Whether the run has completed (never waits)."""
        if self._result is None and self._error is None:
            if not self._session._client._h:
                raise Error(-107, "the client was closed while the run was in flight")
            rc = _cep_fence_poll(ctypes.byref(self._fence))
            if rc == EAGAIN:
                return False
            self._finish(rc)
        return True

    def wait(self, timeout=None):
        """Waits for the run (at most timeout seconds; None: as long as it
        takes) and returns {output name: array}: the arrays given to
        submit() as they are, the others as new arrays. Raises cudaep.Error
        with the run's error, or with name ETIMEDOUT when the time is up
        (the run stays in flight: wait again)."""
        if self._result is None and self._error is None:
            if not self._session._client._h:
                raise Error(-107, "the client was closed while the run was in flight")
            ns = -1 if timeout is None else max(0, int(timeout * 1e9))
            rc = _cep_fence_wait(ctypes.byref(self._fence), ns)
            if rc == ETIMEDOUT:
                raise Error(rc)
            self._finish(rc)
        if self._error is not None:
            raise self._error
        return self._result


class Client:
    """A connection to cudaepd."""

    def __init__(self, socket=None, name=None):
        self._regions = set()
        self._h = _vp()
        _check(_cep_connect(socket.encode() if socket else None,
                            (name or "python").encode(), ctypes.byref(self._h)))
        self.id = _cep_client_id(self._h)
        self.backend = _cep_client_backend(self._h).decode()
        self.device = _cep_client_device(self._h).decode()

    def ping(self):
        _check(_cep_ping(self._h))

    def region(self, nbytes):
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
        """Loads the model at path into a new Session. batching=True lets the
        daemon merge its runs with other batching sessions' runs of the same
        model, precision and priority (see cep_session_options.batching)."""
        opts = _SessionOptions(name.encode() if name else None, _PRECISIONS[precision],
                               _PRIORITIES[priority], memory_limit, 1 if batching else 0)
        h = _vp()
        _check(_cep_session_load(self._h, os.fsencode(path), ctypes.byref(opts), ctypes.byref(h)))
        return Session(self, h)

    def close(self):
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
    """Connects to cudaepd (socket None: the default path)."""
    return Client(socket, name)
