"""The Server object: start, address, stop, errors, logs, orphans."""

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest
import redis

import rlockd


def wait_until(pred, secs=10.0):
    deadline = time.monotonic() + secs  # hang guard only
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie left by a killed parent counts as gone
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_bundled_binary_is_used_and_static():
    path = rlockd.binary_path()
    assert path.endswith(os.path.join("rlockd", "bin", "rlockd"))
    assert "site-packages" in path
    out = subprocess.run([path, "--version"], capture_output=True, text=True, check=True)
    assert "rlockd" in out.stdout + out.stderr


def test_context_manager_url_port_and_stop():
    with rlockd.Server() as srv:
        assert srv.running
        assert srv.url == f"redis://127.0.0.1:{srv.port}"
        r = redis.Redis.from_url(srv.url)
        assert r.ping() is True
        assert srv.execute_command("PING") == "PONG"
        assert srv.execute_command("SET", "k", "v") == "OK"
        assert srv.execute_command("GET", "k") == b"v"
        assert srv.execute_command("INCR", "n") == 1
        pid = srv.pid
        port = srv.port
    assert not srv.running
    assert wait_until(lambda: not pid_alive(pid))
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    srv.stop()  # idempotent


def test_error_reply_raises():
    with rlockd.Server() as srv:
        with pytest.raises(rlockd.ResponseError, match="unknown command"):
            srv.execute_command("NOSUCHCOMMAND")


def test_password():
    with rlockd.Server(password="s3cret") as srv:
        assert srv.url == f"redis://:s3cret@127.0.0.1:{srv.port}"
        assert redis.Redis.from_url(srv.url).ping()
        assert srv.ping()
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=srv.port).ping()


def test_two_servers_are_independent():
    with rlockd.Server() as a, rlockd.Server() as b:
        assert a.port != b.port
        ra, rb = redis.Redis.from_url(a.url), redis.Redis.from_url(b.url)
        assert ra.set("lock", "a", nx=True)
        assert rb.set("lock", "b", nx=True)
        assert ra.get("lock") == b"a" and rb.get("lock") == b"b"


def test_fixed_port_and_taken_port_error():
    with rlockd.Server() as first:
        with pytest.raises(rlockd.RlockdError, match=f"{first.port}.*already in use") as err:
            rlockd.Server(port=first.port).start()
        assert "rlockd log" in str(err.value)
        assert first.ping()


def test_missing_binary_error(monkeypatch, tmp_path):
    missing = tmp_path / "nope" / "rlockd"
    monkeypatch.setenv("RLOCKD_BINARY", str(missing))
    with pytest.raises(FileNotFoundError, match="RLOCKD_BINARY") as err:
        rlockd.Server().start()
    assert str(missing) in str(err.value)
    with pytest.raises(FileNotFoundError, match="binary= argument"):
        rlockd.Server(binary=str(missing)).start()


def test_a_non_executable_binary_is_refused_not_changed(monkeypatch, tmp_path):
    text = tmp_path / "rlockd"
    text.write_text("echo this is not rlockd\n")
    text.chmod(0o644)
    monkeypatch.setenv("RLOCKD_BINARY", str(text))
    with pytest.raises(PermissionError, match="not executable.*RLOCKD_BINARY"):
        rlockd.Server().start()
    with pytest.raises(PermissionError, match="not executable.*binary= argument"):
        rlockd.Server(binary=str(text)).start()
    assert text.stat().st_mode & 0o777 == 0o644


def test_env_override_runs_that_binary(monkeypatch, tmp_path):
    copy = tmp_path / "my-rlockd"
    copy.write_bytes(open(rlockd.binary_path(), "rb").read())
    copy.chmod(0o755)
    monkeypatch.setenv("RLOCKD_BINARY", str(copy))
    assert rlockd.binary_path() == str(copy)
    with rlockd.Server() as srv:
        assert os.readlink(f"/proc/{srv.pid}/exe") == str(copy)
        assert srv.ping()


def test_bad_argument_reports_exit_code_and_log():
    with pytest.raises(rlockd.RlockdError, match="exited with code") as err:
        rlockd.Server(args=["--databases", "0"]).start()
    assert "rlockd log" in str(err.value)


def test_logs_are_captured():
    with rlockd.Server(args=["--loglevel", "verbose"]) as srv:
        assert srv.ping()
    assert "ready to accept connections" in srv.logs


def test_killed_parent_leaves_no_server(tmp_path):
    script = textwrap.dedent("""
        import sys, time, rlockd
        srv = rlockd.Server().start()
        print(srv.pid, srv.port, flush=True)
        time.sleep(60)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        pid, port = map(int, child.stdout.readline().split())
        assert pid_alive(pid)
        assert redis.Redis(port=port).ping()
        child.send_signal(signal.SIGKILL)  # no atexit, no finally: only the pipe tells
        child.wait(10)
        assert wait_until(lambda: not pid_alive(pid)), "rlockd outlived its killed parent"
    finally:
        child.kill()
        child.wait()


def test_interpreter_exit_stops_servers():
    script = "import rlockd; s = rlockd.Server().start(); print(s.pid, flush=True)"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=30, check=True)
    pid = int(out.stdout.split()[0])
    assert wait_until(lambda: not pid_alive(pid))


def test_without_a_bundled_binary_rlockd_on_path_is_used(monkeypatch, tmp_path):
    from rlockd import _binary

    monkeypatch.delenv("RLOCKD_BINARY", raising=False)
    on_path = tmp_path / "bin" / "rlockd"
    on_path.parent.mkdir()
    on_path.write_bytes(open(rlockd.binary_path(), "rb").read())
    on_path.chmod(0o755)
    monkeypatch.setattr(_binary, "bundled_binary", lambda: tmp_path / "none" / "rlockd")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError, match="carries none for .* no rlockd on PATH; .*cargo install"):
        rlockd.binary_path()
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert rlockd.binary_path() == str(on_path)
    with rlockd.Server() as srv:
        assert srv.ping()
