"""Start, address and stop the rlockd server from Python tests.

    with rlockd.Server() as srv:
        redis.Redis.from_url(srv.url).ping()
"""

from ._binary import binary_path
from ._server import RlockdError, ResponseError, Server

__all__ = ["Server", "RlockdError", "ResponseError", "binary_path"]
__version__ = "0.1.0"
