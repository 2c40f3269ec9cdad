// The CommonJS entry under TypeScript (require through import =).
import rlockd = require("rlockd");

export async function useCjs(): Promise<string> {
  const srv: rlockd.RlockdServer = await rlockd.RlockdServer.start();
  const locks: rlockd.LockInfo[] = await srv.locks();
  await srv.addFault({ kind: "dropmsg", channel: "c" });
  await srv.assertLocksSafe();
  await srv.stop();
  void locks;
  return srv.url;
}
