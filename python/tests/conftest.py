"""Fixtures for the Python client's tests: a real cudaepd on a temporary
socket, started from the build tree."""
import os
import socket
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
BUILD = os.environ.get("CUDAEP_BUILD_DIR") or os.path.join(HERE, "..", "..", "build")


def _wait_ready(path, proc, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError("cudaepd exited with %d" % proc.returncode)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.connect(path)
            return
        except OSError:
            time.sleep(0.01)
        finally:
            s.close()
    raise RuntimeError("cudaepd did not start in %gs" % timeout)


def _daemon(tmp_path, backend, *extra):
    sock = str(tmp_path / "cudaep.sock")
    log = open(tmp_path / "daemon.log", "wb")
    proc = subprocess.Popen([os.path.join(BUILD, "bin", "cudaepd"), "--socket", sock,
                             "--backend", backend, *extra],
                            stdout=log, stderr=log)
    try:
        _wait_ready(sock, proc)
        yield sock
    finally:
        proc.terminate()
        rc = proc.wait(timeout=10)
        log.close()
        assert rc == 0, (tmp_path / "daemon.log").read_text()


@pytest.fixture
def daemon(tmp_path):
    """Yields the socket path of a fresh cudaepd; stops it afterwards and
    checks that it exited cleanly."""
    # The host backend: these tests check the client and the engine's
    # results, and run in CI (the GPU machine runs the C suites).
    yield from _daemon(tmp_path, "host")


@pytest.fixture
def async_daemon(tmp_path):
    """As daemon, on the host backend with queued streams: runs complete
    after their replies, as on a GPU."""
    yield from _daemon(tmp_path, "host-async")


@pytest.fixture(params=["host-async", "host"])
def batch_daemon(request, tmp_path):
    """As daemon, on either host backend, merging the runs of batching
    sessions in batches of 4 that wait up to a second to fill."""
    yield from _daemon(tmp_path, request.param, "--batch-window-us", "1000000",
                       "--batch-max", "4")
