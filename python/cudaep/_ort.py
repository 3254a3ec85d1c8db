"""cudaep._ort — onnxruntime's face: InferenceSession and what goes with it."""

import collections.abc
import mmap
import os
from ._errors import (
    Error, _want_names)
from ._client import (
    Client, _options)


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
