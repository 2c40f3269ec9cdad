// The CommonJS entry under TypeScript (require through import =).
import rlockd = require("rlockd");

export async function useCjs(): Promise<string> {
  const srv: rlockd.RlockdServer = await rlockd.RlockdServer.start();
  await srv.stop();
  return srv.url;
}
