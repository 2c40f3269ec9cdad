"""The pytest fixtures, and the server log in a failing test's report."""

import redis

pytest_plugins = ["pytester"]


def test_session_url_is_flushed_and_shared(rlockd_url, rlockd_session_server):
    r = redis.Redis.from_url(rlockd_url)
    assert rlockd_url == rlockd_session_server.url
    assert r.dbsize() == 0
    r.set("left-over", 1)


def test_session_url_again(rlockd_url):
    assert redis.Redis.from_url(rlockd_url).dbsize() == 0


def test_function_servers_differ(pytester):
    pytester.makepyfile("""
        seen = []
        def test_a(rlockd_server):
            seen.append(rlockd_server.port)
            assert rlockd_server.ping()
        def test_b(rlockd_server):
            seen.append(rlockd_server.port)
            assert rlockd_server.ping()
            assert seen[0] != seen[1]
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_failure_report_carries_the_server_log(pytester):
    pytester.makepyfile("""
        def test_fails(rlockd_server):
            rlockd_server.execute_command("SET", "k", "v")
            assert False, "on purpose"
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*rlockd log (port *)*", "*ready to accept connections*"])


def test_binary_option(pytester, tmp_path):
    pytester.makepyfile("""
        def test_x(rlockd_server):
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--rlockd-binary", str(tmp_path / "none"))
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*rlockd binary not found*(from the --rlockd-binary option)*"])


def test_binary_ini_option_is_named_in_its_error(pytester, tmp_path):
    pytester.makeini(f"""
        [pytest]
        rlockd_binary = {tmp_path / "none"}
    """)
    pytester.makepyfile("""
        def test_x(rlockd_server):
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*rlockd binary not found*(from the rlockd_binary ini option)*"])


def test_a_failed_test_leaves_its_timeline(pytester, tmp_path):
    pytester.makepyfile("""
        import redis

        def test_fails(rlockd_server):
            lock = redis.Redis.from_url(rlockd_server.url).lock("orders", timeout=30)
            assert lock.acquire(blocking=False)
            assert False, "on purpose"

        def test_passes(rlockd_server):
            assert rlockd_server.ping()
    """)
    out = tmp_path / "artifacts"
    result = pytester.runpytest("-p", "no:cacheprovider", "--rlockd-artifacts", str(out))
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*rlockd timeline (port *)*", f"*{out}*timeline.html*"])
    [written] = list(out.iterdir())
    assert "test_fails" in written.name
    assert 'data-lock="orders"' in written.read_text()


def test_a_failed_test_leaves_its_recording(pytester, tmp_path):
    pytester.makepyfile("""
        import redis

        def test_fails(rlockd_server):
            r = redis.Redis.from_url(rlockd_server.url)
            assert r.set("orders", "tok-a", nx=True, px=30000)
            assert not r.set("orders", "tok-b", nx=True, px=30000)
            assert False, "on purpose"

        def test_passes(rlockd_server):
            assert rlockd_server.ping()
    """)
    out = tmp_path / "artifacts"
    result = pytester.runpytest("-p", "no:cacheprovider", "--rlockd-artifacts", str(out), "--rlockd-record")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*rlockd recording (port *)*", f"*{out}*recording.jsonl*"])
    [recording] = [p for p in out.iterdir() if p.name.endswith("-recording.jsonl")]
    assert "test_fails" in recording.name
    lines = recording.read_text().splitlines()
    assert lines[0].startswith('{"t":"rlockd-record"')
    assert any('"args":["SET","orders","tok-b",' in line and '"reply":"$-1\\r\\n"' in line
               for line in lines), lines
    assert "TIMELINE" not in lines[-1], "the recording ends with the test's own commands"
