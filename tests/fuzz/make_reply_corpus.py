#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_reply (tests/fuzz/corpus/fuzz_reply/).

Each seed is one input in fuzz_reply.c's format: a start byte (bit 0: a
fence page is made, bit 1: too short, bit 2: the daemon closes its end
once the packets are queued), with a page four (seq, status) byte
pairs for slots 1 to 4, then records of control byte (bit 0: /dev/null
attached, bit 1: the fence page attached, bit 2: padded past the packet
limit), 16-bit little-endian length and packet. Packets are cudaep.proto
Responses, encoded here by hand so the script needs nothing but Python.

The target's client makes its calls in one order, so request ids are known:
1 Hello, 2 Ping, 3 RegisterRegion, 4 LoadModel, 5 SessionInfo, then (with
a session and a region) 6 and 7 two Runs, then Stats, Unload,
ReleaseRegion and Ping.

Run from anywhere: python3 tests/fuzz/make_reply_corpus.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "fuzz_reply")

DEVNULL, PAGE, OVERSIZED = 1, 2, 4
PING_KEY = 0x9e3779b97f4a7c15  # client.c: a ping's payload is its id ^ this
FLOAT, INT64 = 1, 7
ELIMIT, EUNSUPPORTED, ENOENT, ENOSPC, EINVAL = -4008, -4003, -2, -28, -22


def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def fv(num, value):
    return varint(num << 3) + varint(value)


def fs(num, value):
    """A sint32 field (zigzag)."""
    return fv(num, (value << 1) ^ (value >> 31))


def fb(num, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(num << 3 | 2) + varint(len(data)) + data


def response(rid, body_field=None, body=b"", code=0, message=""):
    out = fv(1, rid)
    if code:
        out += fb(2, fs(1, code) + fb(2, message))
    if body_field is not None:
        out += fb(body_field, body)
    return out


def hello(slots=0, version=1):
    return response(1, 10, fv(1, version) + fb(2, "0.1.0") + fv(3, 7) +
                    fb(4, "host") + fb(5, "fuzz cpu") + fv(7, 65536) +
                    fv(8, slots))


def ping(rid):
    return response(rid, 11, fv(1, rid ^ PING_KEY))


def dim(value=None, param=None):
    return fb(3, fv(1, value) if param is None else fb(2, param))


def info(name, dtype, dims):
    return fb(1, name) + fv(2, dtype) + b"".join(dims)


def session(sid, inputs, outputs):
    return (fv(1, sid) + fb(2, "m") + b"".join(fb(3, i) for i in inputs) +
            b"".join(fb(4, o) for o in outputs))


X = info("x", FLOAT, [dim(param="batch"), dim(4)])
Y = info("y", FLOAT, [dim(param="batch"), dim(4)])
Z = info("z", INT64, [dim(param="batch")])


def load(rid, inputs=(X,), outputs=(Y, Z)):
    return response(rid, 14, fb(1, session(5, inputs, outputs)))


def tensor(name, offset, nbytes, dtype, shape):
    packed = b"".join(varint(d) for d in shape)
    return (fb(1, name) + fv(2, 1) + fv(3, offset) + fv(4, nbytes) +
            fv(5, dtype) + fb(6, packed))


def run(rid, code=0, ybytes=64, zbytes=32):
    body = (fb(1, tensor("z", 8192, zbytes, INT64, (zbytes // 8,))) +
            fb(1, tensor("y", 4096, ybytes, FLOAT, (ybytes // 16, 4))))
    return response(rid, 16, body, code,
                    "output 'y' needs %d bytes" % ybytes if code else "")


def run_done(rid, seq, code, message):
    return response(rid, 18, fv(1, seq), code, message)


def stats(rid):
    return response(rid, 34, fv(1, 1) + fb(2, fb(1, "runs") + fv(2, 3)) +
                    fb(3, fb(1, "regions") + fv(2, 1) + fv(3, 2) + fv(4, 3)))


def rec(packet, ctl=0):
    return bytes([ctl]) + struct.pack("<H", len(packet)) + packet


def slots(*pairs):
    out = b""
    for seq, status in pairs:
        out += bytes([seq, status & 0xFF])
    return out


def opening(page=False):
    """Hello, Ping, RegisterRegion, LoadModel, SessionInfo: ids 1 to 5."""
    return (rec(hello(64 if page else 0), PAGE if page else 0) + rec(ping(2)) +
            rec(response(3, 12, fv(1, 1))) + rec(load(4)) +
            rec(response(5, 15, session(5, [X], [Y, Z]))))


def closing(first):
    """Stats, Unload, ReleaseRegion, Ping from request id first."""
    return (rec(stats(first)) + rec(response(first + 1, 17)) +
            rec(response(first + 2, 13)) + rec(ping(first + 3)))


SEEDS = {
    "no_page": bytes([0]) + opening() + rec(run(6)) + rec(run(7)) +
    closing(8),
    "page": bytes([1]) + slots((1, 0), (2, 0), (0, 0), (0, 0)) +
    opening(True) + rec(run(6)) + rec(run(7)) + closing(8),
    "page_run_failed": bytes([1]) + slots((1, 0), (2, EINVAL), (0, 0), (0, 0)) +
    opening(True) + rec(run(6)) + rec(run(7)) +
    rec(run_done(7, 2, EINVAL, "node 'Gather_0': index 6 is out of range")) +
    closing(8),
    "page_both_failed": bytes([1]) +
    slots((1, EINVAL), (2, ELIMIT), (0, 0), (0, 0)) + opening(True) +
    rec(run(6)) + rec(run(7)) + rec(run_done(7, 2, ELIMIT, "second")) +
    rec(run_done(6, 1, 0, "")) + closing(8),
    "page_run_done_during_call": bytes([1]) + slots((0, 0), (0, 0), (0, 0), (0, 0)) +
    opening(True) + rec(run(6)) + rec(run(7)) +
    rec(run_done(6, 1, EINVAL, "late")) + closing(8),
    "page_short": bytes([3]) + slots((1, 0), (2, 0), (0, 0), (0, 0)) +
    opening(True) + rec(run(6)) + rec(run(7)) + closing(8),
    "enospc": bytes([0]) + opening() + rec(run(6, ENOSPC, 8192, 16384)) +
    rec(run(7, 0, 4096 + 16, 8)) + closing(8),
    "errors": bytes([0]) + rec(hello()) +
    rec(response(2, None, b"", ELIMIT, "client 7 holds 3 regions")) +
    rec(response(3, None, b"", ELIMIT, "")) +
    rec(response(4, None, b"", EUNSUPPORTED, "node 'Conv_0': op Conv opset 22")) +
    rec(response(5, None, b"", ENOENT, "no session 0")) +
    rec(response(6, None, b"", 5, "positive")) + rec(ping(7)),
    "refused_connection": bytes([0]) +
    rec(response(0, None, b"", ELIMIT, "too many connections for uid 0")),
    "refused_then_closed": bytes([4]) +
    rec(response(0, None, b"", ELIMIT, "too many connections for uid 0")),
    # What found the fd leak of closed_reason() (fixed in 0aef52d).
    "closed_empty_packet_with_fd": bytes([4]) + rec(b"", DEVNULL) +
    rec(hello()),
    "version_mismatch": bytes([0]) + rec(hello(0, 2)),
    "framing": bytes([0]) + rec(hello()) + rec(ping(2), OVERSIZED) +
    rec(b"\xff\xff\xff") + rec(ping(4), DEVNULL) + rec(ping(5), PAGE) +
    rec(response(9, 11, fv(1, 1))) + rec(b""),
    "long_lists": bytes([0]) + opening().replace(
        rec(load(4)), rec(load(4, [info("in%d" % i, FLOAT,
                                         [dim(param="n%d" % i), dim(i)])
                                    for i in range(40)], [Y, Z]))) +
    rec(run(6)) + rec(run(7)) + closing(8),
    "admin_bodies": bytes([0]) + rec(hello()) + rec(ping(2)) +
    rec(response(3, 12, fv(1, 1))) +
    rec(response(4, 31, fb(1, fv(1, 7) + fb(2, "c")) + fv(2, 1))) +
    rec(response(5, 33, fb(1, fb(1, "total") + fb(2, "device") + fv(3, 1)))) +
    rec(response(6, 32, fb(1, fv(1, 5) + fb(3, "s") + fb(25, "capture")))),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in sorted(SEEDS.items()):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print("wrote %d seeds to %s" % (len(SEEDS), OUT))


if __name__ == "__main__":
    main()
