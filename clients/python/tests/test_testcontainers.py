"""Testcontainers' documented Redis examples, run with only the import changed.

Each example below is as testcontainers-python documents it, with
``from testcontainers.redis import RedisContainer`` (or
``testcontainers.community.redis``) replaced by ``from rlockd.testcontainers
import RedisContainer``; the checks after each example are this project's.
"""

import asyncio
import time
from datetime import timedelta

import pytest
import redis

from rlockd.testcontainers import AsyncRedisContainer, RedisContainer


# From testcontainers-python docs/modules/redis_example.py (the module's usage example).
def basic_example():
    with RedisContainer() as redis_container:
        # Get connection parameters
        host = redis_container.get_container_host_ip()
        port = redis_container.get_exposed_port(redis_container.port)

        # Create Redis client
        client = redis.Redis(host=host, port=port, decode_responses=True)
        print("Connected to Redis")

        # String operations
        client.set("greeting", "Hello, Redis!")
        value = client.get("greeting")
        print(f"\nString value: {value}")

        # List operations
        client.lpush("tasks", "task1", "task2", "task3")
        tasks = client.lrange("tasks", 0, -1)
        print("\nTasks list:")
        for task in tasks:
            print(f"- {task}")

        # Set operations
        client.sadd("tags", "python", "redis", "docker", "testing")
        tags = client.smembers("tags")
        print("\nTags set:")
        for tag in tags:
            print(f"- {tag}")

        # Hash operations
        user_data = {"name": "John Doe", "email": "john@example.com", "age": "30"}
        client.hset("user:1", mapping=user_data)
        user = client.hgetall("user:1")
        print("\nUser hash:")
        for field, value in user.items():
            print(f"{field}: {value}")

        # Sorted set operations
        scores = {"player1": 100, "player2": 200, "player3": 150}
        client.zadd("leaderboard", scores)
        leaderboard = client.zrevrange("leaderboard", 0, -1, withscores=True)
        print("\nLeaderboard:")
        for player, score in leaderboard:
            print(f"{player}: {score}")

        # Key expiration
        client.setex("temp_key", timedelta(seconds=10), "This will expire")
        ttl = client.ttl("temp_key")
        print(f"\nTemp key TTL: {ttl} seconds")

        # Pipeline operations
        with client.pipeline() as pipe:
            pipe.set("pipeline_key1", "value1")
            pipe.set("pipeline_key2", "value2")
            pipe.set("pipeline_key3", "value3")
            pipe.execute()
        print("\nPipeline operations completed")

        # Pub/Sub operations
        pubsub = client.pubsub()
        pubsub.subscribe("test_channel")

        # Publish a message
        client.publish("test_channel", "Hello from Redis!")

        # Get the message
        message = pubsub.get_message()
        if message and message["type"] == "message":
            print(f"\nReceived message: {message['data']}")

        # Clean up
        pubsub.unsubscribe()
        pubsub.close()


def test_the_documented_usage_example(capsys):
    basic_example()
    out = capsys.readouterr().out
    assert "String value: Hello, Redis!" in out
    assert "- task3\n- task2\n- task1\n" in out
    for tag in ("python", "redis", "docker", "testing"):
        assert f"- {tag}\n" in out
    assert "name: John Doe\nemail: john@example.com\nage: 30\n" in out
    assert "player2: 200.0\nplayer3: 150.0\nplayer1: 100.0\n" in out
    assert "Temp key TTL: 10 seconds" in out
    assert "Pipeline operations completed" in out


# From the RedisContainer docstring (testcontainers.redis), then this project's checks.
def test_the_docstring_example():
    with RedisContainer() as redis_container:
        redis_client = redis_container.get_client()
        assert redis_client.ping() is True
        assert redis_client.set("k", "v") and redis_client.get("k") == b"v"
    with pytest.raises(redis.ConnectionError):
        redis_client.ping()  # stopped with its with block


# From testcontainers-python modules/redis/tests/test_redis.py, unchanged but the import.
def test_docker_run_redis():
    config = RedisContainer()
    with config as redis:
        client = redis.get_client()
        p = client.pubsub()
        p.subscribe("test")
        client.publish("test", "new_msg")
        msg = wait_for_message(p)
        assert "data" in msg
        assert b"new_msg", msg["data"]


def test_docker_run_redis_with_password():
    config = RedisContainer(password="mypass")
    with config as redis:
        client = redis.get_client(decode_responses=True)
        client.set("hello", "world")
        assert client.get("hello") == "world"


def wait_for_message(pubsub, timeout=1, ignore_subscribe_messages=True):
    now = time.time()
    timeout = now + timeout
    while now < timeout:
        message = pubsub.get_message(ignore_subscribe_messages=ignore_subscribe_messages)
        if message is not None:
            return message
        time.sleep(0.01)
        now = time.time()
    return None


# The pytest fixture shape users write around it (start/stop, an image name passed and ignored).
@pytest.fixture(scope="module")
def redis_container():
    container = RedisContainer("redis:7-alpine")
    container.start()
    yield container
    container.stop()


def test_start_stop_fixture_and_accessors(redis_container):
    client = redis.Redis(host=redis_container.get_container_host_ip(),
                         port=int(redis_container.get_exposed_port(6379)), decode_responses=True)
    assert client.set("orders", "a", nx=True, px=10_000)
    assert client.get("orders") == "a"
    assert redis_container.image == "redis:7-alpine"
    with pytest.raises(ValueError):
        redis_container.get_exposed_port(6380)
    # The password is enforced as the image's --requirepass would.
    with RedisContainer(password="s3cret") as c:
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(host=c.get_container_host_ip(), port=c.get_exposed_port(6379)).ping()
        assert c.get_client().ping()
    # The lock scripts users test run against it, and its test control is there.
    lock = redis_container.get_client().lock("job", timeout=5)
    assert lock.acquire(blocking=False)
    assert [lk.key for lk in redis_container.server.locks("job")] == ["job"]
    lock.release()


def test_async_container():
    async def main():
        with AsyncRedisContainer() as container:
            client = await container.get_async_client(decode_responses=True)
            await client.set("a", "1")
            assert await client.get("a") == "1"
            await client.aclose()
    asyncio.run(main())


def test_not_started():
    with pytest.raises(RuntimeError):
        RedisContainer().get_exposed_port(6379)
