// BullMQ (every one of its scripts calls XADD) against a server started by
// the package: jobs added, delayed and prioritised are processed by a
// Worker, QueueEvents sees them complete over XREAD BLOCK, and a flow adds
// a parent with its child.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Queue, Worker, QueueEvents, FlowProducer } from "bullmq";
import { RlockdServer } from "rlockd";

test("bullmq queue, worker, events and flow", async (t) => {
  const srv = await RlockdServer.start();
  const connection = { host: "127.0.0.1", port: srv.port, maxRetriesPerRequest: null };
  const queue = new Queue("jobs", { connection });
  const events = new QueueEvents("jobs", { connection });
  const flow = new FlowProducer({ connection });
  let worker;
  t.after(async () => {
    await worker?.close();
    await events.close();
    await queue.close();
    await flow.close();
    await srv.stop();
  });
  await events.waitUntilReady();
  const completed = [];
  const allDone = new Promise((resolve) =>
    events.on("completed", ({ jobId }) => {
      completed.push(jobId);
      if (completed.length === 5) resolve();
    }),
  );
  worker = new Worker("jobs", async (job) => ({ doubled: job.data.n * 2 }), { connection, concurrency: 2 });
  const first = await queue.add("double", { n: 21 });
  await queue.add("double", { n: 1 });
  await queue.add("double", { n: 2 });
  await queue.add("delayed", { n: 3 }, { delay: 200 });
  await queue.add("prio", { n: 4 }, { priority: 1 });
  await allDone;
  const counts = await queue.getJobCounts();
  assert.equal(counts.completed, 5);
  assert.equal(counts.waiting + counts.active + counts.delayed + counts.failed, 0);
  const done = await queue.getJob(first.id);
  assert.deepEqual(done.returnvalue, { doubled: 42 });
  const tree = await flow.add({
    name: "parent",
    queueName: "jobs",
    data: { n: 5 },
    children: [{ name: "child", queueName: "jobs", data: { n: 6 } }],
  });
  assert.equal(tree.children.length, 1);
  const parent = await queue.getJob(tree.job.id);
  assert.ok(parent, "the parent job exists");
});
