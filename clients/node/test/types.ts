// Compiled with tsc --noEmit by clients/test.sh: the declarations in index.d.ts
// describe the ESM entry as it is used.
import { RlockdServer, RlockdError, binaryPath, withServer } from "rlockd";
import type { RlockdOptions, RespReply } from "rlockd";

const options: RlockdOptions = { port: 0, password: "pw", args: ["--loglevel", "verbose"], startupTimeoutMs: 5000 };

export async function use(): Promise<void> {
  const srv: RlockdServer = await RlockdServer.start(options);
  const url: string = srv.url;
  const port: number = srv.port;
  const running: boolean = srv.running;
  const reply: RespReply = await srv.command("SET", "k", 1, Buffer.from("v"));
  const pong: boolean = await srv.ping();
  const logs: string = srv.logs();
  const exe: string = binaryPath();
  await srv.stop(1000);
  // @ts-expect-error the port is a number
  const wrong: string = srv.port;
  try {
    await RlockdServer.start({ binary: "/nonexistent" });
  } catch (e) {
    if (e instanceof RlockdError) {
      const log: string | undefined = e.logs;
      void log;
    }
  }
  void [url, port, running, reply, pong, logs, exe, wrong];
}

// withServer keeps the body's return type and the runner's arguments.
export const body: (label: string) => Promise<number> = withServer(async (srv: RlockdServer, label: string) => {
  await srv.ping();
  return label.length;
});
