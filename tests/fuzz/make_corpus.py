#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_request (tests/fuzz/corpus/fuzz_request/).

Each seed is one input in fuzz_request.c's format: a start byte (bit 0: say
Hello first, bit 1: the peer is root), then records of control byte, 16-bit
little-endian length and packet. Packets are cudaep.proto Requests, encoded
here by hand so the script needs nothing but Python.

Run from anywhere: python3 tests/fuzz/make_corpus.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "fuzz_request")

SEALED, UNSEALED, DEVNULL, OVERSIZED, FDS_TRUNCATED = 1, 2, 4, 8, 16


def varint(n):
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


def fb(num, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(num << 3 | 2) + varint(len(data)) + data


def request(rid, body_field, body=b""):
    return fv(1, rid) + fb(body_field, body)


def rec(packet, ctl=0):
    return bytes([ctl]) + struct.pack("<H", len(packet)) + packet


HELLO = request(1, 10, fv(1, 1) + fb(2, "seed"))
PING = request(2, 11, fv(1, 12345))


def tensor(name, region, offset, nbytes, shape):
    packed = b"".join(varint(d) for d in shape)
    return (fb(1, name) + fv(2, region) + fv(3, offset) + fv(4, nbytes) +
            fv(5, 1) + fb(6, packed))


SEEDS = {
    "admin_bodies": bytes([1]) + b"".join(
        rec(request(i, f)) for i, f in enumerate((30, 31, 32, 33, 34), 3)),
    "admin_bodies_as_root": bytes([3]) + b"".join(
        rec(request(i, f)) for i, f in enumerate((31, 32, 33), 3)),
    "hello_late": bytes([0]) + rec(PING) + rec(HELLO) + rec(PING),
    "hello_twice": bytes([0]) + rec(HELLO) + rec(HELLO) + rec(PING),
    "hello_old_version": bytes([0]) + rec(request(1, 10, fv(1, 7))) +
    rec(PING),
    "register_release": bytes([1]) +
    rec(request(3, 12, fv(1, 4096) + fb(2, "r")), SEALED) +
    rec(request(4, 13, fv(1, 1))) + rec(request(5, 33)),
    "register_8k": bytes([1]) +
    rec(request(3, 12, fv(1, 8192)), SEALED | 1 << 5),
    "register_limits": bytes([1]) + b"".join(
        rec(request(3 + i, 12, fv(1, 32768)), SEALED | 7 << 5)
        for i in range(4)),
    "register_unsealed": bytes([1]) +
    rec(request(3, 12, fv(1, 4096)), UNSEALED),
    "register_fd_count": bytes([1]) +
    rec(request(3, 12, fv(1, 4096))) +
    rec(request(4, 12, fv(1, 4096)), SEALED | UNSEALED) +
    rec(PING, DEVNULL),
    "load_model_fd": bytes([1]) +
    rec(request(3, 14, fv(1, 0) + fb(4, fb(1, "m") + fv(2, 2))), DEVNULL) +
    rec(request(4, 14, fv(1, 0) + fv(3, 1)), SEALED | DEVNULL),
    "load_model_region": bytes([1]) +
    rec(request(3, 12, fv(1, 4096)), SEALED) +
    rec(request(4, 14, fv(1, 1) + fb(2, fv(1, 1) + fv(2, 0) + fv(3, 4096)))),
    "sessions": bytes([1]) +
    rec(request(3, 15, fv(1, 5))) + rec(request(4, 17, fv(1, 5))) +
    rec(request(5, 16, fv(1, 5) +
                fb(2, tensor("x", 1, 0, 64, (1, 16))) +
                fb(3, tensor("y", 1, 64, 64, (1, 16))))),
    "framing": bytes([1]) + rec(PING, OVERSIZED | SEALED) +
    rec(PING, FDS_TRUNCATED | DEVNULL) + rec(b"\xff\xff\xff", UNSEALED) +
    rec(fv(1, 9) + fv(99, 1)) + rec(b"") + rec(PING),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in sorted(SEEDS.items()):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print("wrote %d seeds to %s" % (len(SEEDS), OUT))


if __name__ == "__main__":
    main()
