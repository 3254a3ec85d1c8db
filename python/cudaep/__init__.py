"""cudaep — the Python client of the cudaep GPU inference daemon.

A thin ctypes layer over libcudaep-client with numpy arrays in and out:

    import cudaep
    c = cudaep.connect()                  # the default socket, or socket="..."
    s = c.load("model.onnx")
    out = s.run({"x": x})                 # {"y": numpy array, ...}

    p = s.submit({"x": x})                # returns once the run is queued
    out = p.wait()                        # the outputs, once computed

    d = c.load("decoder.onnx")            # a decoder with a key/value cache
    tokens = d.generate([1, 2, 3], max_new_tokens=32, eos_token_id=2)
    for t in d.generate([1, 2, 3], 32, temperature=0.8, top_p=0.9, stream=True):
        print(t)                          # each token as the daemon makes it

and onnxruntime's face over it, so that code written for onnxruntime runs
on cudaep by changing its import:

    sess = cudaep.InferenceSession("model.onnx", precision="fp16")
    [y] = sess.run(["y"], {"x": x})

Tensors travel through shared-memory regions, so the daemon reads inputs and
writes outputs without a copy through the socket. Arrays that are views of
one of the client's regions (Region.array()) are passed by reference to
submit(): nothing is copied at all.

Element types: the numpy types of cudaep.DTYPES; bfloat16, the float8
and the 4-bit types are ml_dtypes' (ml_dtypes.bfloat16, float8_e4m3fn,
float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, int4, uint4, float4_e2m1fn,
as onnx and jax hold them: the 4-bit ones a byte each, the value in the low
nibble). Types that cudaep does not store (float8_e8m0fnu, int2, ...) are
refused with a TypeError naming the tensor.

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
__all__ = ["connect", "Client", "Session", "Region", "Pending", "Generation", "TensorInfo",
           "DTYPES",
           "Error", "InvalidArgument", "InvalidType", "NoSuchFile", "ClosedError",
           "InferenceSession", "NodeArg", "ModelMetadata", "SessionOptions", "RunOptions",
           "get_available_providers"]


from ._lib import *  # noqa: F401,F403 (the error codes, DTYPES, MAX_RANK)
from ._errors import *  # noqa: F401,F403
from ._client import *  # noqa: F401,F403
from ._generate import Generation  # noqa: F401
from ._ort import *  # noqa: F401,F403
