"""cudaep._generate — generation: Session.generate()'s arguments made into
cep_generate_options, and Generation, the iterator over the tokens of one
generation that the daemon runs (cep_generate_start/read/cancel/free)."""

import ctypes
import numbers
import numpy as np

from ._lib import (
    ENOTSUP, ETIMEDOUT, GEN_END, GEN_STOP_MAX, _GEN_REASONS, _GenerateOptions,
    _GenerateStats, _cep_generate_cancel, _cep_generate_free, _cep_generate_read,
    _cep_generate_start, _cep_generate_stats_get, _vp)
from ._errors import Error, _error, _want_bool, _want_int

_U32 = 2 ** 32 - 1
_READ_MAX = 256           # tokens one cep_generate_read() takes at most
_READ_WAIT_NS = 100_000_000  # a wait's slice: Ctrl-C is seen between slices


def _want_float(arg, v):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise TypeError("cudaep: %s must be a number, not %s" % (arg, type(v).__name__))
    return float(v)


def _prompt(input_ids):
    """input_ids as a C-contiguous int64 array of one dimension: a list or a
    1-D array of ints, or a [1, n] array."""
    if isinstance(input_ids, (str, bytes)) or input_ids is None:
        raise TypeError("cudaep: input_ids must be a list or an array of ints, not %s"
                        % type(input_ids).__name__)
    a = np.asarray(input_ids)
    if a.ndim == 2 and a.shape[0] == 1:
        a = a[0]
    if a.ndim != 1:
        raise ValueError("cudaep: input_ids must be a list, a 1-D array or a [1, n] array "
                         "(one sequence), not of shape %s" % (a.shape,))
    if a.size == 0:
        raise ValueError("cudaep: input_ids is empty: the prompt needs a token at least")
    if a.dtype == np.bool_ or a.dtype.kind not in "iu":
        raise TypeError("cudaep: input_ids must hold int64 values, not %s" % a.dtype)
    if a.dtype.kind == "u" and int(a.max()) > 2 ** 63 - 1:
        raise ValueError("cudaep: input_ids holds %d, beyond int64" % int(a.max()))
    return np.ascontiguousarray(a, dtype=np.int64)


def _stops(eos_token_id):
    """The stop tokens: None, an int or a list of ints."""
    if eos_token_id is None:
        return []
    if isinstance(eos_token_id, numbers.Integral) and not isinstance(eos_token_id,
                                                                     (bool, np.bool_)):
        eos_token_id = [eos_token_id]
    if isinstance(eos_token_id, (str, bytes)):
        raise TypeError("cudaep: eos_token_id must be an int, a list of ints or None, not %s"
                        % type(eos_token_id).__name__)
    try:
        stops = list(eos_token_id)
    except TypeError:
        raise TypeError("cudaep: eos_token_id must be an int, a list of ints or None, not %s"
                        % type(eos_token_id).__name__) from None
    stops = [_want_int("eos_token_id[%d]" % i, t, lo=-2 ** 63, hi=2 ** 63 - 1)
             for i, t in enumerate(stops)]
    if len(stops) > GEN_STOP_MAX:
        raise ValueError("cudaep: eos_token_id holds %d stop tokens, at most %d"
                         % (len(stops), GEN_STOP_MAX))
    return stops


def options(max_new_tokens, temperature, top_k, top_p, repetition_penalty, eos_token_id,
            seed, capacity, signal_every):
    """(cep_generate_options, the stop tokens' array it points into) from
    generate()'s arguments. Types, and values that the C types cannot hold,
    are checked here; the ranges of the contract (max_new_tokens >= 1,
    temperature >= 0, top_p in (0, 1], ...) are the daemon's to check, so
    that its message is the one raised."""
    stops = _stops(eos_token_id)
    arr = (ctypes.c_int64 * max(len(stops), 1))(*stops)
    o = _GenerateOptions(
        max_new_tokens=_want_int("max_new_tokens", max_new_tokens, lo=0, hi=_U32),
        capacity=_want_int("capacity", capacity, lo=0, hi=_U32),
        temperature=_want_float("temperature", temperature),
        top_k=_want_int("top_k", top_k, lo=0, hi=_U32),
        top_p=_want_float("top_p", top_p),
        repetition_penalty=_want_float("repetition_penalty", repetition_penalty),
        seed=_want_int("seed", seed, lo=0, hi=2 ** 64 - 1),
        stop_tokens=ctypes.cast(arr, ctypes.POINTER(ctypes.c_int64)) if stops else None,
        n_stop_tokens=len(stops),
        signal_every=_want_int("signal_every", signal_every, lo=0, hi=_U32))
    return o, arr


def _stats_dict(st):
    d = {f: int(getattr(st, f)) for f, _ in _GenerateStats._fields_ if f != "reason"}
    d["reason"] = _GEN_REASONS.get(st.reason, "unknown(%d)" % st.reason)
    return d


def start(session, input_ids, opts):
    """A new Generation of session from checked options (options())."""
    if _cep_generate_start is None:
        raise Error(ENOTSUP, "this libcudaep-client has no generation (cep_generate_start); "
                    "rebuild it")
    prompt = _prompt(input_ids)
    h = _vp()
    rc = _cep_generate_start(session._handle(),
                             prompt.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)),
                             prompt.size, ctypes.byref(opts[0]), ctypes.byref(h))
    if rc != 0:
        raise _error(rc)
    return Generation(session, h)


class Generation:
    """One generation in the daemon, iterated for its tokens (ints) as they
    come. It is freed once exhausted; close() (or leaving a with block, or
    the garbage collector) before that cancels it. After its end,
    session.last_generate_stats holds its stats()."""

    def __init__(self, session, h):
        self._session = session
        self._h = h
        self._buf = (ctypes.c_int64 * _READ_MAX)()
        self._pending = []
        self._stats = None
        session._generations.add(self)
        session._client._generations.add(self)

    def __iter__(self):
        return self

    def __next__(self):
        while not self._pending:
            if not self._h:
                raise StopIteration
            self._session._client._handle()
            n = ctypes.c_size_t(0)
            rc = _cep_generate_read(self._h, self._buf, _READ_MAX, ctypes.byref(n),
                                    _READ_WAIT_NS)
            if rc == 0:
                self._pending = list(self._buf[:n.value])
                self._pending.reverse()
            elif rc == ETIMEDOUT:
                continue
            elif rc == GEN_END:
                self._free()
                raise StopIteration
            else:
                err = _error(rc)  # before free(): it holds cep_last_error()'s message
                self._free()
                raise err
        return self._pending.pop()

    def cancel(self):
        """Asks the daemon to stop after its current step; the tokens it
        wrote before still come. Does nothing once the generation is freed."""
        if self._h:
            _cep_generate_cancel(self._h)

    def stats(self):
        """{prompt_tokens, tokens (generated so far), first_token_ns,
        total_ns, reason ("running", "stop", "length", "cancelled",
        "error")}: live while it runs, final once it is freed."""
        if not self._h:
            return dict(self._stats) if self._stats is not None else None
        st = _GenerateStats()
        _cep_generate_stats_get(self._h, ctypes.byref(st))
        return _stats_dict(st)

    def _free(self):
        """Frees the generation (cancelling it if it runs) and records its
        stats; returns the code cep_generate_free() gave."""
        if not self._h:
            return 0
        st = _GenerateStats()
        rc = _cep_generate_free(self._h, ctypes.byref(st))
        self._h = _vp()
        self._pending = []
        self._stats = _stats_dict(st)
        self._session.last_generate_stats = dict(self._stats)
        self._session._generations.discard(self)
        self._session._client._generations.discard(self)
        return rc

    def close(self):
        """Cancels the generation if it still runs and frees it; tokens not
        read yet are dropped. Closing it again does nothing."""
        self._free()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if self._h and self._session._client._h:
                self._free()
        except Exception:
            pass


def generate(session, input_ids, max_new_tokens, temperature, top_k, top_p,
             repetition_penalty, eos_token_id, seed, capacity, signal_every, stream):
    stream = _want_bool("stream", stream)
    opts = options(max_new_tokens, temperature, top_k, top_p, repetition_penalty,
                   eos_token_id, seed, capacity, signal_every)
    g = start(session, input_ids, opts)
    if stream:
        return g
    try:
        return list(g)
    finally:
        g.close()  # after a KeyboardInterrupt: cancelled, not left running


__all__ = ["Generation"]
