"""Finds the rlockd executable."""

import os
import pathlib
import platform
import shutil
import stat

ENV = "RLOCKD_BINARY"
HOW_TO_GET = (f"set {ENV} to an rlockd executable or put rlockd on PATH (cargo install --path "
              "<rlockd checkout>, or /usr/local/bin/rlockd from the rlockd container image)")


def bundled_binary():
    """The binary shipped inside this package (may be missing in a source tree)."""
    return pathlib.Path(__file__).resolve().parent / "bin" / "rlockd"


def binary_path(explicit=None, source=None):
    """Path of the rlockd executable to run.

    Order: ``explicit`` (named ``source`` in errors, by default "the binary=
    argument"), the ``RLOCKD_BINARY`` environment variable, the binary inside
    the package, ``rlockd`` on PATH when the package has none. Raises :class:`FileNotFoundError` with the place that was
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
        if not path.is_file():  # no binary for this platform in the package: rlockd on PATH
            found = shutil.which("rlockd")
            if found:
                return found
            raise FileNotFoundError(
                f"rlockd binary not found: the rlockd package carries none for "
                f"{platform.system().lower()}-{platform.machine().lower()} and there is no rlockd "
                f"on PATH; {HOW_TO_GET}"
            )
    if not path.is_file():
        raise FileNotFoundError(f"rlockd binary not found: {path} (from {source}); {HOW_TO_GET}")
    if not os.access(path, os.X_OK):
        if bundled:  # the package's own copy, unpacked without its mode bits
            try:
                path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
            except OSError:
                pass
        if not os.access(path, os.X_OK):
            raise PermissionError(f"rlockd binary is not executable: {path} (from {source})")
    return str(path)
