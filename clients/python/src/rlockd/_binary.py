"""Finds the rlockd executable."""

import os
import pathlib
import stat

ENV = "RLOCKD_BINARY"


def bundled_binary():
    """The binary shipped inside this package (may be missing in a source tree)."""
    return pathlib.Path(__file__).resolve().parent / "bin" / "rlockd"


def binary_path(explicit=None):
    """Path of the rlockd executable to run.

    Order: ``explicit``, the ``RLOCKD_BINARY`` environment variable, the binary
    inside the package. Raises :class:`FileNotFoundError` with the place that
    was looked at when it is missing or not executable.
    """
    if explicit:
        path, source = pathlib.Path(explicit), "the binary= argument"
    elif os.environ.get(ENV):
        path, source = pathlib.Path(os.environ[ENV]), f"the {ENV} environment variable"
    else:
        path, source = bundled_binary(), "the rlockd package"
    if not path.is_file():
        raise FileNotFoundError(
            f"rlockd binary not found: {path} (from {source}); install the rlockd wheel "
            f"for this platform or set {ENV} to an rlockd executable"
        )
    if not os.access(path, os.X_OK):
        try:  # a wheel unpacked without its mode bits
            path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        except OSError:
            pass
        if not os.access(path, os.X_OK):
            raise PermissionError(f"rlockd binary is not executable: {path} (from {source})")
    return str(path)
