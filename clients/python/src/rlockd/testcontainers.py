"""The shape of Testcontainers' Redis module, started without Docker.

Switching a test is its import line::

    from testcontainers.redis import RedisContainer     # before (Docker)
    from rlockd.testcontainers import RedisContainer    # after (rlockd, no Docker)

The names, constructor and accessors are those of ``testcontainers.redis`` /
``testcontainers.community.redis``: ``RedisContainer(image, port, password)``,
``start``/``stop``, the ``with`` block, ``get_client``,
``get_container_host_ip``, ``get_exposed_port``; ``AsyncRedisContainer`` with
``get_async_client``. No image is pulled or run: the image name is accepted and
ignored, and an rlockd process (:class:`rlockd.Server`) answers in its place; its
test control is at :attr:`RedisContainer.server`.
"""

from ._server import Server

__all__ = ["RedisContainer", "AsyncRedisContainer"]


class RedisContainer:
    """An rlockd server in the place of a ``redis`` container.

    ``image`` is only recorded (no image is run); ``port`` is the container port
    a test asks :meth:`get_exposed_port` about (6379 as in Testcontainers);
    ``password`` is required of clients, as ``--requirepass`` does in the image.
    Other keyword arguments of Testcontainers' ``DockerContainer`` (``name``,
    ``environment``...) have nothing to configure here and are ignored.
    """

    def __init__(self, image="redis:latest", port=6379, password=None, **kwargs):
        self.image = image
        self.port = int(kwargs.pop("port_to_expose", port))
        self.password = password
        self.server = Server(password=password)

    # -- lifecycle (DockerContainer's) ----------------------------------------

    def start(self):
        self.server.start()
        return self

    def stop(self, force=True, delete_volume=True):
        self.server.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- DockerContainer's builder methods that mean something without Docker --

    def with_exposed_ports(self, *ports):
        return self

    def with_env(self, key, value):
        return self

    def with_name(self, name):
        return self

    # -- accessors ---------------------------------------------------------------

    def get_container_host_ip(self):
        return self.server.host

    def get_exposed_port(self, port):
        """The host port for a container port: only the Redis port is exposed."""
        if int(port) != self.port:
            raise ValueError(f"port {port} is not exposed (the Redis port is {self.port})")
        if not self.server.running:
            raise RuntimeError("the container is not started: call start() or use a with block")
        return self.server.port

    def get_logs(self):
        """``(stdout, stderr)`` as bytes, as Docker gives a container's logs."""
        return self.server.logs.encode(), b""

    def get_client(self, **kwargs):
        """A ``redis.Redis`` connected to the server; keyword arguments go to it."""
        import redis

        return redis.Redis(host=self.get_container_host_ip(), port=self.get_exposed_port(self.port),
                           password=self.password, **kwargs)

    def __repr__(self):
        return f"<rlockd.testcontainers.RedisContainer in place of {self.image}>"


class AsyncRedisContainer(RedisContainer):
    """:class:`RedisContainer` with ``get_async_client`` (a ``redis.asyncio.Redis``)."""

    async def get_async_client(self, **kwargs):
        from redis.asyncio import Redis

        return Redis(host=self.get_container_host_ip(), port=self.get_exposed_port(self.port),
                     password=self.password, **kwargs)
