"""Options checked before anything starts: an unknown keyword or a value of the wrong type is
a one-line ``TypeError`` naming the accepted options, never silently ignored."""

import functools
import inspect
import os

# What each option takes: a tuple of types, and how the error names them.
_INT = ((int,), "an int")
_TYPES = {
    "port": _INT,
    "nodes": _INT,
    "replicas": _INT,
    "sentinels": _INT,
    "host": ((str,), "a str"),
    "password": ((str, type(None)), "a str or None"),
    "binary": ((str, os.PathLike, type(None)), "a path or None"),
    "startup_timeout": ((int, float), "a number of seconds"),
    "args": ((list, tuple), "a list of command-line arguments"),
}


def checked(init):
    """Wraps a class's ``__init__`` (or a method taking options): refuses unknown options and
    values of the wrong type."""
    sig = inspect.signature(init)
    names = [n for n in sig.parameters if n != "self"]

    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        what = f"rlockd.{type(self).__name__}"
        if init.__name__ != "__init__":
            what += f".{init.__name__}()"
        unknown = [k for k in kwargs if k not in names]
        if unknown:
            raise TypeError(f"{what}: unknown option {unknown[0]!r}; accepted: {', '.join(names)}")
        try:
            bound = sig.bind(self, *args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{what}: {e}; accepted: {', '.join(names)}") from None
        for name, value in bound.arguments.items():
            if name not in _TYPES:
                continue
            types, text = _TYPES[name]
            if isinstance(value, bool) or not isinstance(value, types):
                raise TypeError(f"{what}: option {name!r} takes {text}, not {value!r}")
        return init(self, *args, **kwargs)

    return wrapper
