"""What the peer tests share: finding the peers ./dev installed, and following a growing file."""
import os


def peer(variable, what):
    """The path ./dev installed a peer at, from the variable .bazelrc passes to tests."""
    path = os.environ.get(variable, "")
    if not os.access(path, os.X_OK):
        raise AssertionError(f"{variable}={path!r} is not an executable: run the tests with "
                             f"./dev test, which installs {what} there")
    return path


class LineCounter:
    """Counts the lines of a growing file, reading each byte once."""

    def __init__(self, path):
        self.path, self.offset, self.lines = path, 0, 0

    def count(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return 0
        self.offset += len(data)
        self.lines += data.count(b"\n")
        return self.lines
