// @testcontainers/redis's documented examples, run with only the import changed.
//
// The tests inside describe("RedisContainer") are those that node.testcontainers.org's
// Redis page includes from testcontainers-node packages/modules/redis/src/redis-container.test.ts
// (startContainer, startWithCredentials, initial data import, executeCommand, simpleConnect),
// as written there, with `import { RedisContainer } from "./redis-container"` replaced by
// require("rlockd/testcontainers") and connectTo's one TypeScript annotation dropped (this
// file is JavaScript). describe/it are node:test's (the same (name, options, fn) shape as
// vitest's); `expect` is the small stand-in below. The persistence example is not run:
// rlockd keeps its data in memory, and withPersistence says so.
const { describe, it } = require("node:test");
const assert = require("node:assert/strict");
const path = require("node:path");
const { createClient } = require("redis");
const { RedisContainer } = require("rlockd/testcontainers");

// The few vitest matchers the examples use.
function expect(actual) {
  return {
    toBe: (want) => assert.equal(actual, want),
    toEqual: (want) =>
      want && want.__containing !== undefined
        ? assert.ok(String(actual).includes(want.__containing), `${JSON.stringify(actual)} lacks ${want.__containing}`)
        : assert.deepEqual(actual, want),
    toBeTruthy: () => assert.ok(actual),
  };
}
expect.stringContaining = (s) => ({ __containing: s });

describe("RedisContainer", { timeout: 240_000 }, () => {
  // startContainer {
  it("should connect and execute set-get", async () => {
    const container = await new RedisContainer().start();

    const client = await connectTo(container);

    await client.set("key", "val");
    expect(await client.get("key")).toBe("val");

    await client.disconnect();
    await container.stop();
  });
  // }

  it("should connect with password and execute set-get", async () => {
    const container = await new RedisContainer().withPassword("test").start();

    const client = await connectTo(container);

    await client.set("key", "val");
    expect(await client.get("key")).toBe("val");

    await client.disconnect();
    await container.stop();
  });

  // initial data import {
  it("should load initial data and can read it", async () => {
    const container = await new RedisContainer()
      .withPassword("test")
      .withInitialData(path.join(__dirname, "initData.redis"))
      .start();
    const client = await connectTo(container);
    const user = {
      first_name: "David",
      last_name: "Bloom",
      dob: "03-MAR-1981",
    };
    expect(await client.get("user:002")).toBe(JSON.stringify(user));

    await client.disconnect();
    await container.stop();
  });
  // }

  // startWithCredentials {
  it("should start with credentials and login", async () => {
    const password = "testPassword";

    // Test authentication
    const container = await new RedisContainer().withPassword(password).start();
    expect(container.getConnectionUrl()).toEqual(`redis://:${password}@${container.getHost()}:${container.getPort()}`);

    const client = await connectTo(container);

    await client.set("key", "val");
    expect(await client.get("key")).toBe("val");

    await client.disconnect();
    await container.stop();
  });
  // }

  // executeCommand {
  it("should execute container cmd and return the result", async () => {
    const container = await new RedisContainer().start();

    const queryResult = await container.executeCliCmd("info", ["clients"]);
    expect(queryResult).toEqual(expect.stringContaining("connected_clients:1"));

    await container.stop();
  });
  // }

  // simpleConnect {
  async function connectTo(container) {
    const client = createClient({
      url: container.getConnectionUrl(),
    });
    await client.connect();
    expect(client.isOpen).toBeTruthy();
    return client;
  }
  // }
});

// This project's checks of the shape.
describe("rlockd/testcontainers", () => {
  it("takes an image name, maps only 6379, stops, and refuses persistence", async () => {
    const container = await new RedisContainer("redis:7.2-alpine").withExposedPorts(6379).start();
    assert.equal(container.image, "redis:7.2-alpine");
    assert.equal(container.getMappedPort(6379), container.getPort());
    assert.equal(container.getMappedPort("6379/tcp"), container.getFirstMappedPort());
    assert.throws(() => container.getMappedPort(6380), /6380/);
    assert.equal(container.getPassword(), "");
    assert.equal(container.getConnectionUrl(), `redis://${container.getHost()}:${container.getPort()}`);
    assert.equal(await container.server.command("SET", "lock", "t1", "NX", "PX", "30000"), "OK");
    assert.deepEqual((await container.server.locks("lock")).map((l) => l.key), ["lock"]);
    assert.equal(await container.executeCliCmd("get", ["lock"]), "t1\n");
    assert.equal(await container.executeCliCmd("set lock t2 NX"), "\n"); // nil prints as an empty line
    await container.stop();
    await assert.rejects(container.server.command("PING"));
    assert.throws(() => new RedisContainer().withPersistence("/tmp/x"), /not supported/);
  });

  it("fails the start when the initial data has an error", async () => {
    const file = path.join(require("node:os").tmpdir(), `rlockd-bad-${process.pid}.redis`);
    require("node:fs").writeFileSync(file, "SET a\n");
    await assert.rejects(new RedisContainer().withInitialData(file).start(), /Could not import initial data/);
    require("node:fs").rmSync(file);
  });
});
