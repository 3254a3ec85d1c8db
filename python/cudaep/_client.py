"""cudaep._client — the client's objects: Client, Session, Region, Pending, TensorInfo."""

import collections.abc
import ctypes
import ctypes.util
import errno as _errno
import logging
import math
import numbers
import os
import threading
import weakref
import numpy as np
from . import _generate
from ._lib import (
    EAGAIN, EBADF, ENOENT, ENOSPC, ENOTCONN, ETIMEDOUT, _DTYPES, _Fence, _ORT_TYPES,
    _PRECISIONS, _PRIORITIES, _KernelStats, _SessionOptions, _Tensor, _cep_client_backend,
    _cep_client_device, _cep_client_id, _cep_close, _cep_connect, _cep_fence_poll,
    _cep_fence_wait, _cep_ping, _cep_region_data, _cep_region_free, _cep_region_new,
    _cep_region_size, _cep_run, _cep_run_submit, _cep_session_free, _cep_session_id,
    _cep_session_input, _cep_session_input_count, _cep_session_load,
    _cep_session_load_fd, _cep_session_output, _cep_session_output_count,
    _cep_kernel_stats_get, _vp)
from ._errors import (
    ClosedError, Error, NoSuchFile, _as_input, _check, _dtype_code, _error,
    _output_dtype, _shape_of, _want_bool, _want_choice, _want_int, _want_mapping,
    _want_names, _want_path, _want_str)


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

    def __init__(self, client, h, label, kernels_before=None):
        self._client = client
        self._h = h
        self._label = label
        # The daemon's kernel counters before the load, until the first
        # run has said what it cost in compiles.
        self._kernels_before = kernels_before
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
        self._generations = weakref.WeakSet()
        self.last_generate_stats = None
        """The stats of the session's last generation once it was freed (a
        dict, see Generation.stats()); None before."""

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
            if self._kernels_before is not None:
                self._say_compiles()
            return result
        raise Error(ENOSPC, "outputs kept growing between attempts")

    def _say_compiles(self):
        """After the first run: a warning on the "cudaep" logger when the
        daemon compiled kernels for this model, and for how long (a model
        whose kernels are all prebuilt says nothing)."""
        before, self._kernels_before = self._kernels_before, None
        try:
            after = self._client.kernel_stats()
        except Error:
            return
        n = after["compiled"] - before["compiled"]
        if after["arch"] and n > 0:
            logging.getLogger("cudaep").warning(
                "the daemon compiled %d kernel source%s for sm_%d in %.1f s for the first run "
                "of %r (not in its prebuilt set; `cudaepctl kernels` lists them)", n,
                "" if n == 1 else "s", after["arch"],
                (after["compile_us"] - before["compile_us"]) / 1e6, self._label)

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

    def generate(self, input_ids, max_new_tokens, temperature=0.0, top_k=0, top_p=1.0,
                 repetition_penalty=1.0, eos_token_id=None, seed=0, capacity=0,
                 signal_every=1, stream=False):
        """Generates up to max_new_tokens tokens after the prompt input_ids
        (a list or 1-D array of ints, or a [1, n] array) with the session's
        model, a decoder with a key/value cache as Hugging Face exporters
        write them; the daemon runs every step (cep_generate_start()).
        temperature 0 is greedy; else the daemon samples with top_k (0: all
        tokens), top_p and repetition_penalty (1: none), from seed: the same
        seed, model and options give the same tokens. eos_token_id: None, a
        stop token or a list of at most 16; the one met ends the sequence
        and is its last token. capacity: key/value slots, prompt included
        (0: the prompt plus max_new_tokens). signal_every: the daemon wakes
        the reader every that many tokens.

        Returns the list of new tokens, or with stream=True a Generation
        that yields them as they come (freed once exhausted; closing it
        early cancels the rest). The generation's stats are then in
        last_generate_stats. Options out of range, a model that is not a
        decoder and a token outside the vocabulary raise InvalidArgument
        with the daemon's message; a capacity smaller than the prompt
        cudaep.Error ENOSPC; a second generation of a session while one
        runs cudaep.Error EBUSY (the session's runs too, meanwhile)."""
        return _generate.generate(self, input_ids, max_new_tokens, temperature, top_k, top_p,
                                  repetition_penalty, eos_token_id, seed, capacity,
                                  signal_every, stream)

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
        """Unloads the session, after freeing its generations (which
        cancels those still running); closing it again does nothing."""
        for g in list(self._generations):
            g.close()
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
        self._generations = weakref.WeakSet()  # freed before the connection
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

    def kernel_stats(self):
        """The daemon's device-kernel counters, as a dict: arch (the
        device's sm_<arch>, 0 on the host backend), modules (loaded now),
        compiled and compile_us (NVRTC's compiles in the daemon and their
        time), prebuilt (modules from the prebuilt set) and from_disk
        (modules read from the kernel cache directory)."""
        st = _KernelStats()
        _check(_cep_kernel_stats_get(self._handle(), ctypes.byref(st)))
        return {f: int(getattr(st, f)) for f, _ in _KernelStats._fields_}

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
        before = self._kernels_now()
        rc = _cep_session_load(self._handle(), p, ctypes.byref(opts), ctypes.byref(h))
        if rc == ENOENT:
            e = NoSuchFile(rc)
            e.errno, e.strerror, e.filename = _errno.ENOENT, e.detail, os.fsdecode(p)
            raise e
        _check(rc)
        return Session(self, h, name or os.path.basename(os.fsdecode(p)), before)

    def _kernels_now(self):
        """kernel_stats() where the backend has device kernels, else None
        (then a session's first run asks nothing more)."""
        try:
            st = self.kernel_stats()
        except Error:
            return None
        return st if st["arch"] else None

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
        before = self._kernels_now()
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
        return Session(self, h, opts.name.decode(), before)

    def close(self):
        """Closes the connection, and with it every region and session of
        the client; closing it again does nothing."""
        if self._h:
            for g in list(self._generations):
                g.close()
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


