"""cudaep._lib — the library: its loading, its functions' ctypes signatures, the error codes and the element-type tables."""
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


class _KernelStats(ctypes.Structure):
    _fields_ = [
        ("arch", ctypes.c_uint32),
        ("modules", ctypes.c_uint64),
        ("compiled", ctypes.c_uint64),
        ("compile_us", ctypes.c_uint64),
        ("prebuilt", ctypes.c_uint64),
        ("from_disk", ctypes.c_uint64),
    ]


class _SessionOptions(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("precision", ctypes.c_int),
        ("priority", ctypes.c_int),
        ("memory_limit", ctypes.c_uint64),
        ("batching", ctypes.c_int),
    ]


class _GenerateOptions(ctypes.Structure):
    _fields_ = [
        ("max_new_tokens", ctypes.c_uint32),
        ("capacity", ctypes.c_uint32),
        ("temperature", ctypes.c_float),
        ("top_k", ctypes.c_uint32),
        ("top_p", ctypes.c_float),
        ("repetition_penalty", ctypes.c_float),
        ("seed", ctypes.c_uint64),
        ("stop_tokens", ctypes.POINTER(ctypes.c_int64)),
        ("n_stop_tokens", ctypes.c_uint32),
        ("signal_every", ctypes.c_uint32),
    ]


class _GenerateStats(ctypes.Structure):
    _fields_ = [
        ("prompt_tokens", ctypes.c_uint64),
        ("tokens", ctypes.c_uint64),
        ("first_token_ns", ctypes.c_uint64),
        ("total_ns", ctypes.c_uint64),
        ("reason", ctypes.c_int),
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


def _fn_new(name, restype, *argtypes):
    """As _fn, for a function that a library built before it lacks: None
    then, and the callers say what is missing."""
    try:
        return _fn(name, restype, *argtypes)
    except AttributeError:
        return None


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
_cep_kernel_stats_get = _fn("cep_kernel_stats_get", _int, _vp, ctypes.POINTER(_KernelStats))
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
_cep_generate_start = _fn_new("cep_generate_start", _int, _vp, ctypes.POINTER(ctypes.c_int64),
                              _sz, ctypes.POINTER(_GenerateOptions), ctypes.POINTER(_vp))
_cep_generate_read = _fn_new("cep_generate_read", _int, _vp, ctypes.POINTER(ctypes.c_int64),
                             _sz, ctypes.POINTER(_sz), ctypes.c_int64)
_cep_generate_cancel = _fn_new("cep_generate_cancel", _int, _vp)
_cep_generate_stats_get = _fn_new("cep_generate_stats_get", _int, _vp,
                                  ctypes.POINTER(_GenerateStats))
_cep_generate_free = _fn_new("cep_generate_free", _int, _vp, ctypes.POINTER(_GenerateStats))

# Error codes the Python layer acts on (client/cudaep.h).
ENOENT = -2
EBADF = -9
EAGAIN = -11
EINVAL = -22
ENOSPC = -28
ENAMETOOLONG = -36
ENOTCONN = -107
ENOTSUP = -95
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
    # The 4-bit types: a byte each, as ml_dtypes holds them (client/cudaep.h).
    _DTYPES[21] = ml_dtypes.uint4
    _DTYPES[22] = ml_dtypes.int4
    if hasattr(ml_dtypes, "float4_e2m1fn"):
        _DTYPES[23] = ml_dtypes.float4_e2m1fn
_ORT_TYPES = {
    1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
    8: "string", 9: "bool", 10: "float16", 11: "double", 12: "uint32", 13: "uint64",
    14: "complex64", 15: "complex128", 16: "bfloat16", 17: "float8e4m3fn",
    18: "float8e4m3fnuz", 19: "float8e5m2", 20: "float8e5m2fnuz", 21: "uint4", 22: "int4",
    23: "float4e2m1",
}
_CODES = {np.dtype(v): k for k, v in _DTYPES.items()}
DTYPES = tuple(np.dtype(v) for v in _DTYPES.values())
"""The numpy dtypes that tensors of cudaep are sent and received as."""

# cep_generate_read()'s return once every token has been read, and
# cep_gen_reason's values by name (client/cudaep.h).
GEN_END = 1
GEN_STOP_MAX = 16
_GEN_REASONS = {0: "running", 1: "stop", 2: "length", 3: "cancelled", 4: "error"}

_PRECISIONS = {"fp32": 0, "tf32": 1, "fp16": 2, "bf16": 3}
_PRIORITIES = {"normal": 0, "high": 1, "low": 2}


