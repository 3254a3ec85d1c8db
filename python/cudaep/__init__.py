"""cudaep — the Python client of the cudaep GPU inference daemon.

A thin ctypes layer over libcudaep-client with numpy arrays in and out:

    import cudaep
    c = cudaep.connect()                  # the default socket, or socket="..."
    s = c.load("model.onnx")
    out = s.run({"x": x})                 # {"y": numpy array, ...}

Tensors travel through a shared-memory region owned by the session, so the
daemon reads inputs and writes outputs without a copy through the socket.
Errors raise cudaep.Error with the daemon's message.

The library is found through $CUDAEP_CLIENT_LIB, then the build tree next to
this package (build/lib/libcudaep-client.so), then the system's loader path.
"""
import ctypes
import ctypes.util
import os

import numpy as np

__all__ = ["connect", "Client", "Session", "Region", "Error", "TensorInfo"]

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


class _SessionOptions(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("precision", ctypes.c_int),
        ("priority", ctypes.c_int),
        ("memory_limit", ctypes.c_uint64),
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

# Error codes the Python layer acts on (client/cudaep.h).
ENOSPC = -28

_DTYPES = {
    1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16,
    6: np.int32, 7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64,
    12: np.uint32, 13: np.uint64,
}
_CODES = {np.dtype(v): k for k, v in _DTYPES.items()}
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


def _dtype_code(dt):
    dt = np.dtype(dt)
    if dt not in _CODES:
        raise TypeError("cudaep: unsupported dtype %s" % dt)
    return _CODES[dt]


class TensorInfo:
    """A model input or output: name, numpy dtype (None if cudaep has no
    numpy match, e.g. bfloat16), and shape with ints for fixed dims and
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
        self._buf = (ctypes.c_uint8 * self.size).from_address(_cep_region_data(self._h))

    def array(self, dtype, shape, offset=0):
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
        if offset < 0 or offset + count * dtype.itemsize > self.size:
            raise ValueError("cudaep: slice [%d, +%d) outside a region of %d bytes"
                             % (offset, count * dtype.itemsize, self.size))
        return np.frombuffer(self._buf, dtype=dtype, count=count, offset=offset).reshape(shape)

    def close(self):
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
                t.dtype, t.rank = _dtype_code(a.dtype), a.ndim
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
                dt = _DTYPES.get(t.dtype)
                if dt is None:
                    raise Error(-4005, "output %r has dtype %d, which numpy cannot hold" % (o.name, t.dtype))
                shape = tuple(t.shape[k] for k in range(t.rank))
                view = self._region.array(dt, shape, outs[i])
                result[o.name] = view.copy() if copy else view
            return result
        raise Error(ENOSPC, "outputs kept growing between attempts")

    def close(self):
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


class Client:
    """A connection to cudaepd."""

    def __init__(self, socket=None, name=None):
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

    def load(self, path, name=None, precision="fp32", priority="normal", memory_limit=0):
        opts = _SessionOptions(name.encode() if name else None, _PRECISIONS[precision],
                               _PRIORITIES[priority], memory_limit)
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
