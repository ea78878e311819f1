"""Hostile request-dump files, for the reader's tests (standard library only).

`write_all(folder, good, canary)` writes into `folder` one file of each kind below (and a symlink
to `good`, a good dump kept outside the folder) and returns {file name: the words its refusal
must contain}. Nothing here is ever unpickled by the tests except through the reader.
"""

import os
import pickle
import struct


class _System:
    """Pickles as a call of os.system: unpickled by a plain pickle.load, it runs `command`."""

    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


def canary(path):
    """A dump whose request is a call of os.system creating `path`."""
    return pickle.dumps([(_System("touch '%s'" % path), {}, 0.0, 0.0)], protocol=4)


def unknown_class():
    """A class of io_struct that a request dump never holds (the tokenized request)."""
    def text(s):
        return b"\x8c" + bytes([len(s)]) + s

    # [TokenizedGenerateReqInput()] as protocol 4 writes it: the class, NEWOBJ, an empty state
    return (b"\x80\x04](" + text(b"sglang.srt.managers.io_struct") + text(b"TokenizedGenerateReqInput")
            + b"\x93)\x81}be.")


def huge_length():
    """A list whose first item declares 1 GiB of bytes in a file of a few bytes."""
    return b"\x80\x04]\x94\x8e" + struct.pack("<Q", 1 << 30) + b"abc" + b"a."


def huge_frame():
    """A protocol 4 frame that declares 1 GiB."""
    return b"\x80\x04\x95" + struct.pack("<Q", 1 << 30) + b"]."


def deep(n=100000):
    """A list nested `n` deep."""
    return b"\x80\x04" + b"]" * n + b"a" * (n - 1) + b"."


def write_all(folder, good, canary_path):
    os.makedirs(folder, exist_ok=True)
    files = {
        "canary.pkl": (canary(canary_path), ["posix.system", "no request dump holds"]),
        "unknown.pkl": (unknown_class(), ["TokenizedGenerateReqInput", "no request dump holds"]),
        "huge.pkl": (huge_length(), ["declares 1073741824 bytes"]),
        "frame.pkl": (huge_frame(), ["frame of 1073741824 bytes"]),
        "deep.pkl": (deep(), ["nested more than"]),
    }
    with open(good, "rb") as f:
        data = f.read()
    files["truncated.pkl"] = (data[: len(data) // 2], ["truncated"])
    want = {}
    for name, (blob, words) in files.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(blob)
        want[name] = words
    os.symlink(os.path.abspath(good), os.path.join(folder, "link.pkl"))
    want["link.pkl"] = ["symbolic link"]
    os.mkfifo(os.path.join(folder, "fifo.pkl"))
    want["fifo.pkl"] = ["not a regular file"]
    return want
