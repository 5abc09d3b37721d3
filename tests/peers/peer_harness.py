"""What the peer tests (and tests/bench/peers.py) share: finding the peers ./dev installed, a port
for a server that restarts, and following a growing file."""
import os
import socket


def peer(variable, what):
    """The path ./dev installed a peer at, from the variable .bazelrc passes to tests."""
    path = os.environ.get(variable, "")
    if not os.access(path, os.X_OK):
        raise AssertionError(f"{variable}={path!r} is not an executable: run the tests with "
                             f"./dev test, which installs {what} there")
    return path


def free_port():
    """A port free now, for a server that must come back on the same one after a restart (or
    that does not log the port it was given)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FileTail:
    """The complete lines a growing file gained since the last call, each byte read once."""

    def __init__(self, path):
        self.path, self.offset, self.lines = path, 0, 0

    def read(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        data = data[:data.rfind(b"\n") + 1]  # whole lines only
        self.offset += len(data)
        new = data.splitlines()
        self.lines += len(new)
        return new

    def count(self):
        """The complete lines so far, what is new read."""
        self.read()
        return self.lines
