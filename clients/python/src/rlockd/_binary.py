"""Finds the rlockd executable."""

import os
import pathlib
import stat

ENV = "RLOCKD_BINARY"


def bundled_binary():
    """The binary shipped inside this package (may be missing in a source tree)."""
    return pathlib.Path(__file__).resolve().parent / "bin" / "rlockd"


def binary_path(explicit=None, source=None):
    """Path of the rlockd executable to run.

    Order: ``explicit`` (named ``source`` in errors, by default "the binary=
    argument"), the ``RLOCKD_BINARY`` environment variable, the binary inside
    the package. Raises :class:`FileNotFoundError` with the place that was
    looked at when it is missing, :class:`PermissionError` when a file named by
    the caller or ``RLOCKD_BINARY`` is not executable (it is never changed).
    """
    bundled = False
    if explicit:
        path, source = pathlib.Path(explicit), source or "the binary= argument"
    elif os.environ.get(ENV):
        path, source = pathlib.Path(os.environ[ENV]), f"the {ENV} environment variable"
    else:
        path, source, bundled = bundled_binary(), "the rlockd package", True
    if not path.is_file():
        raise FileNotFoundError(
            f"rlockd binary not found: {path} (from {source}); install the rlockd wheel "
            f"for this platform or set {ENV} to an rlockd executable"
        )
    if not os.access(path, os.X_OK):
        if bundled:  # the package's own copy, unpacked without its mode bits
            try:
                path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
            except OSError:
                pass
        if not os.access(path, os.X_OK):
            raise PermissionError(f"rlockd binary is not executable: {path} (from {source})")
    return str(path)
