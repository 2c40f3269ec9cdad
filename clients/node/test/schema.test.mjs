// The package's fault tables and reply objects agree with the server's description of itself
// (RLOCKD SCHEMA, written from the server's own table): a kind, an argument, a scope option or
// a reply field added or renamed on one side fails here.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import rlockd, { withServer } from "rlockd";

const { FAULT_PARAMS, FAULT_OPTIONAL, FAULT_SCOPE } = rlockd._tables;

const decode = (v) => (Buffer.isBuffer(v) ? v.toString("utf8") : Array.isArray(v) ? v.map(decode) : v);
// RESP2's flat arrays as objects, all the way down (a map of the schema starts with "name").
const maps = (v) => {
  if (Array.isArray(v) && v.length % 2 === 0 && v[0] === "name") {
    const m = {};
    for (let i = 0; i < v.length; i += 2) m[v[i]] = maps(v[i + 1]);
    return m;
  }
  return Array.isArray(v) ? v.map(maps) : v;
};
const schema = async (srv, ...sub) => maps(decode(await srv.command("RLOCKD", "SCHEMA", ...sub)));
const op = (s, name) => s.ops.find((o) => o.name === name);
const camel = (name) => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

test(
  "the fault tables match the server's RLOCKD SCHEMA FAULT",
  withServer(async (srv) => {
    const fault = await schema(srv, "FAULT");
    const kinds = fault.ops.filter((o) => o.group === "kind");
    assert.deepEqual(Object.keys(FAULT_PARAMS), kinds.map((k) => k.name));
    for (const k of kinds) {
      const required = k.args.filter((a) => !a.optional);
      assert.ok(required.every((a) => a.token === null), `${k.name}: a required argument after a word`);
      assert.deepEqual(FAULT_PARAMS[k.name], required.map((a) => a.name), k.name);
      // An optional argument's field: its name, in camelCase with "Ms" for a time (jitter -> jitterMs).
      const optional = Object.entries(FAULT_OPTIONAL[k.name] || {});
      assert.deepEqual(
        optional.map(([field, word]) => [field.replace(/Ms$/, ""), word]),
        k.args.filter((a) => a.optional).map((a) => [a.name, a.token ?? ""]),
        k.name,
      );
    }
    const scope = new Set([...kinds.flatMap((k) => k.options), ...op(fault, "kill").options]);
    assert.deepEqual(
      FAULT_SCOPE.map(([field]) => field).sort(),
      [...scope].sort(),
    );
    for (const [field, word] of FAULT_SCOPE) assert.equal(word, field.toUpperCase());
  }),
);

test(
  "every kind is set through addFault with its arguments and each scope it takes",
  withServer(async (srv) => {
    const fault = await schema(srv, "FAULT");
    for (const k of fault.ops.filter((o) => o.group === "kind")) {
      const spec = { kind: k.name };
      for (const a of k.args.filter((a) => !a.optional)) spec[a.name] = a.type === "integer" ? 1 : "ERR x";
      for (const o of k.options) {
        const id = await srv.addFault({ ...spec, [o]: o === "id" || o === "times" ? 99999 : "nothing-matches" });
        assert.equal(typeof id, "number", `${k.name} ${o}`);
      }
      await srv.clearFaults();
    }
  }),
);

test(
  "the reply objects have the server's fields",
  withServer(async (srv) => {
    await srv.addFault({ kind: "error", message: "ERR x", command: "nothing" });
    const [info] = await srv.faults();
    assert.deepEqual(Object.keys(info), op(await schema(srv, "FAULT"), "list").fields.map(camel));
    assert.deepEqual(Object.keys(await srv.clockInfo()), op(await schema(srv, "CLOCK"), "info").fields.map(camel));
  }),
);

test(
  "every RLOCKD operation the package sends is in the schema",
  withServer(async (srv) => {
    const ops = {};
    for (const s of await schema(srv)) ops[s.name] = new Set(s.ops.map((o) => o.name));
    const require = createRequire(import.meta.url);
    const source = readFileSync(require.resolve("rlockd"), "utf8");
    const sent = [...source.matchAll(/(?:_rlockd\(|args = \[)"([A-Z]+)"(?:, "([A-Z]+)")?/g)];
    assert.ok(sent.length > 10, "RLOCKD calls found in index.cjs");
    for (const [, sub, name] of sent) {
      assert.ok(ops[sub.toLowerCase()], `RLOCKD ${sub}`);
      if (name && ops[sub.toLowerCase()].size) assert.ok(ops[sub.toLowerCase()].has(name.toLowerCase()), `RLOCKD ${sub} ${name}`);
    }
  }),
);
