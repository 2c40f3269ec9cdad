"""pytest plugin (registered through the ``pytest11`` entry point).

Fixtures: ``rlockd_server`` (a fresh server per test), ``rlockd_session_server``
(one for the run), ``rlockd_url`` (the session server's URL, flushed and its
test control reset before each test), ``rlockd_cluster`` (a fresh
:class:`rlockd.Cluster` of 3 primaries per test), ``rlockd_sentinel`` (a fresh
:class:`rlockd.Replicated`: a primary, one replica, three Sentinels) and
``rlockd_server_factory`` (more servers, or other sizes, in one test). When a test that used any of them fails, each server's log is
attached to the report, and its lock timeline (``RLOCKD TIMELINE``) is written under
``--rlockd-artifacts DIR`` (default ``rlockd-artifacts`` in the rootdir) with its path in the
report. With ``--rlockd-record``, every server the fixtures start records its commands
(``RLOCKD RECORD START``; ``rlockd_url``'s session server anew for each test, its script cache
flushed too), and a failed
test's recording is saved beside its timeline (``…-recording.jsonl``), for ``rlockd replay``.
Passing tests write nothing.
"""

import os
import re

import pytest

from ._binary import binary_path
from ._server import Server
from ._topology import Cluster, Replicated

_SERVERS = "_rlockd_servers"


def pytest_addoption(parser):
    group = parser.getgroup("rlockd")
    group.addoption("--rlockd-binary", dest="rlockd_binary", default=None,
                    help="rlockd executable to run (default: RLOCKD_BINARY, then the bundled one)")
    parser.addini("rlockd_binary", "rlockd executable to run", default=None)
    group.addoption("--rlockd-artifacts", dest="rlockd_artifacts", default=None,
                    help="directory for the lock timelines of failed tests "
                         "(default: rlockd-artifacts in the rootdir)")
    group.addoption("--rlockd-record", dest="rlockd_record", action="store_true", default=False,
                    help="record every command of the servers the fixtures start, and save a "
                         "failed test's recording beside its timeline (for rlockd replay)")


def _binary(config):
    """The executable the options name, checked here so that an error names the option."""
    opt = config.getoption("rlockd_binary")
    if opt:
        return binary_path(opt, source="the --rlockd-binary option")
    ini = config.getini("rlockd_binary")
    if ini:
        return binary_path(ini, source="the rlockd_binary ini option")
    return None


def _track(request, srv):
    node = request.node
    servers = getattr(node, _SERVERS, None)
    if servers is None:
        servers = []
        setattr(node, _SERVERS, servers)
    servers.append(srv)


@pytest.fixture
def rlockd_server_factory(request):
    """``factory(**kwargs)`` starts a :class:`rlockd.Server`, ``factory(rlockd.Cluster, 6)``
    a cluster of 6, ``factory(rlockd.Replicated, 2, sentinels=1)`` a replicated set; all stop
    after the test."""
    started = []

    def factory(cls=Server, *args, **kwargs):
        kwargs.setdefault("binary", _binary(request.config))
        srv = cls(*args, **kwargs).start()
        started.append(srv)
        _track(request, srv)
        _record(request.config, srv)
        return srv

    yield factory
    for srv in started:
        srv.stop()


@pytest.fixture
def rlockd_server(rlockd_server_factory):
    """A fresh rlockd server for this test."""
    return rlockd_server_factory()


@pytest.fixture
def rlockd_cluster(rlockd_server_factory):
    """A fresh Redis Cluster of 3 primaries (:class:`rlockd.Cluster`) for this test."""
    return rlockd_server_factory(Cluster, 3)


@pytest.fixture
def rlockd_sentinel(rlockd_server_factory):
    """A fresh primary with one replica and three Sentinels watching it as ``mymaster``
    (:class:`rlockd.Replicated`) for this test."""
    return rlockd_server_factory(Replicated, 1, sentinels=3)


@pytest.fixture(scope="session")
def rlockd_session_server(request):
    """One rlockd server shared by the whole test session."""
    srv = Server(binary=_binary(request.config)).start()
    yield srv
    srv.stop()


@pytest.fixture
def rlockd_url(request, rlockd_session_server):
    """URL of the session server, emptied (FLUSHALL) before the test, its test control
    reset: clock back to the system's and running, no faults, no lock events or violations."""
    srv = rlockd_session_server
    _record(request.config, srv)
    srv.execute_command("FLUSHALL")
    if request.config.getoption("rlockd_record"):
        # A recording replays on empty servers: no script loaded by an earlier test either.
        srv.execute_command("SCRIPT", "FLUSH")
    srv.skew_clock(0)
    srv.clear_faults()
    srv.reset_lock_checks()
    _track(request, rlockd_session_server)
    return rlockd_session_server.url


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for i, srv in enumerate(getattr(item, _SERVERS, ())):
            where = f"port {srv._port}" if srv._port else "not started"
            report.sections.append((f"rlockd log ({where})", srv.logs or "(empty)\n"))
            # The recording first: it then ends with the test's own commands.
            recording = _save_recording(item, srv, i, report.when)
            path = _write_timeline(item, srv, i, report.when)
            if path:
                report.sections.append((f"rlockd timeline ({where})", path + "\n"))
            if recording:
                report.sections.append((f"rlockd recording ({where})", recording + "\n"))


def _record(config, srv):
    """Starts ``srv``'s process recording (a new one) when ``--rlockd-record`` asks."""
    if config.getoption("rlockd_record"):
        srv.execute_command("RLOCKD", "RECORD", "START")


def _artifact(item, index, when, what):
    opt = item.config.getoption("rlockd_artifacts")
    base = opt if opt else os.path.join(str(item.config.rootpath), "rlockd-artifacts")
    os.makedirs(base, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", item.nodeid).strip("_")
    return os.path.abspath(os.path.join(base, f"{name}-{when}-{index}-{what}"))


def _save_recording(item, srv, index, when):
    """Saves ``srv``'s recording for the failed ``item`` (``--rlockd-record``); its path, or
    None."""
    if not item.config.getoption("rlockd_record") or not srv._port:
        return None
    path = _artifact(item, index, when, "recording.jsonl")
    try:
        srv.execute_command("RLOCKD", "RECORD", "SAVE", path)
    except Exception:  # the server is gone or refuses: the log says why
        return None
    return path


def _write_timeline(item, srv, index, when):
    """Writes ``srv``'s timeline for the failed ``item``; its path, or None if the server
    cannot say (not started, stopped, test control off)."""
    if not srv._port:
        return None
    try:
        doc = srv.timeline()
    except Exception:  # the server is gone or refuses: the log says why
        return None
    path = _artifact(item, index, when, "timeline.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(doc)
    return path
