"""The Python client against a real cudaepd: connect, ping, regions as
numpy views, errors carrying the daemon's message."""
import os

import numpy as np
import pytest

import cudaep


def test_connect_and_ping(daemon):
    with cudaep.connect(daemon, name="pytest") as c:
        assert c.id > 0
        assert c.backend == "host"
        c.ping()


def test_kernel_stats_of_the_host_backend_are_zero(daemon):
    # The host backend has no device kernels: every counter is 0, so a
    # session's first run has nothing to say about compiling.
    with cudaep.connect(daemon) as c:
        st = c.kernel_stats()
        assert set(st) == {"arch", "modules", "compiled", "compile_us", "prebuilt",
                           "from_disk"}
        assert c.backend == "host"
        assert all(v == 0 for v in st.values()), st


def test_no_daemon_names_the_socket(tmp_path):
    path = str(tmp_path / "nobody.sock")
    with pytest.raises(cudaep.Error) as e:
        cudaep.connect(path)
    assert e.value.code < 0
    assert path in e.value.detail


def test_region_is_a_numpy_view(daemon):
    with cudaep.connect(daemon) as c, c.region(1 << 16) as r:
        a = r.array(np.float32, (128, 128))
        assert a.shape == (128, 128) and not a.any()
        a[...] = np.arange(128 * 128, dtype=np.float32).reshape(128, 128)
        b = r.array(np.float32, (128, 128))
        assert np.array_equal(a, b)
        with pytest.raises(ValueError):
            r.array(np.float32, (129, 128))


def test_bad_model_is_an_error(daemon, tmp_path):
    model = tmp_path / "bad.onnx"
    model.write_bytes(b"definitely not protobuf \xff\xff\xff")
    with cudaep.connect(daemon) as c:
        with pytest.raises(cudaep.Error) as e:
            c.load(str(model))
        assert e.value.code < 0 and e.value.detail
        c.ping()  # the connection still serves
