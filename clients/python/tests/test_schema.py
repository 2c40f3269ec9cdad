"""The front end's fault tables and reply types agree with the server's description of itself
(RLOCKD SCHEMA, written from the server's own table): a kind, an argument, a scope option or a
reply field added or renamed on one side fails here."""

import dataclasses
import inspect
import re
import typing

import rlockd
from rlockd import _control


def _decode(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, list):
        return [_decode(x) for x in v]
    return v


def _maps(v):
    """RESP2's flat arrays as dicts, all the way down (lists of pairs with a str key in front)."""
    v = _decode(v)
    if isinstance(v, list) and len(v) % 2 == 0 and v and all(isinstance(k, str) for k in v[::2]) \
            and v[0] == "name":
        return {v[i]: _maps(v[i + 1]) for i in range(0, len(v), 2)}
    if isinstance(v, list):
        return [_maps(x) for x in v]
    return v


def _schema(srv, sub):
    return _maps(srv.execute_command("RLOCKD", "SCHEMA", sub))


def _op(schema, name):
    return next(o for o in schema["ops"] if o["name"] == name)


def test_the_fault_tables_match_the_server(rlockd_server):
    fault = _schema(rlockd_server, "FAULT")
    kinds = [o for o in fault["ops"] if o["group"] == "kind"]
    assert [k["name"] for k in kinds] == list(_control._FAULT_ARITY)
    assert list(typing.get_args(_control.FaultKind)) == list(_control._FAULT_ARITY)
    for k in kinds:
        plain = [a for a in k["args"] if a["token"] is None]
        required = [a for a in plain if not a["optional"]]
        assert _control._FAULT_ARITY[k["name"]] == (len(required), len(plain)), k["name"]
        tokens = {a["name"]: a["token"] for a in k["args"] if a["token"] is not None}
        assert _control._FAULT_TOKENS.get(k["name"], {}) == tokens, k["name"]
    scope = sorted({o for k in kinds for o in k["options"]} | set(_op(fault, "kill")["options"]))
    assert sorted(_control._FAULT_SCOPE) == scope
    assert all(_control._FAULT_SCOPE[o] == o.upper() for o in scope)
    params = inspect.signature(rlockd.Server.add_fault).parameters
    keywords = {n for n, p in params.items() if p.kind == p.KEYWORD_ONLY}
    assert keywords == set(scope) | {t for k in kinds for t in _control._FAULT_TOKENS.get(k["name"], {})}
    kill = inspect.signature(rlockd.Server.kill_clients).parameters
    assert sorted(n for n in kill if n != "self") == sorted(_op(fault, "kill")["options"])


def test_the_reply_types_have_the_server_s_fields(rlockd_server):
    def names(cls):
        return [f.name for f in dataclasses.fields(cls)]

    assert names(rlockd.FaultInfo) == _op(_schema(rlockd_server, "FAULT"), "list")["fields"]
    assert names(rlockd.Lock) == _schema(rlockd_server, "LOCKS")["fields"]
    assert names(rlockd.LockEvent) == _schema(rlockd_server, "EVENTS")["fields"]
    assert names(_control.ClockInfo) == _op(_schema(rlockd_server, "CLOCK"), "info")["fields"]


def test_every_operation_the_front_end_sends_is_in_the_schema(rlockd_server):
    ops = {s["name"]: {o["name"] for o in s["ops"]}
           for s in _maps(rlockd_server.execute_command("RLOCKD", "SCHEMA"))}
    source = inspect.getsource(_control) + inspect.getsource(rlockd._topology)
    # _rlockd("CLOCK", "GET"), _rlockd("REPL", "CRASH", …), args = ["FAULT", "KILL"]
    sent = set(re.findall(r'(?:_rlockd\(|args(?:: List\[Any\])? = \[)"([A-Z]+)"(?:, "([A-Z]+)")?', source))
    assert sent, "no RLOCKD call found in _control.py"
    for sub, op in sent:
        assert sub.lower() in ops, f"RLOCKD {sub}"
        if op and ops[sub.lower()]:
            assert op.lower() in ops[sub.lower()], f"RLOCKD {sub} {op}"
