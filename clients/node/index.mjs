// ESM entry: the implementation is index.cjs (one module state for both).
import cjs from "./index.cjs";

export const RlockdServer = cjs.RlockdServer;
export const RlockdCluster = cjs.RlockdCluster;
export const RlockdReplicated = cjs.RlockdReplicated;
export const RlockdTopology = cjs.RlockdTopology;
export const RlockdError = cjs.RlockdError;
export const LocksUnsafeError = cjs.LocksUnsafeError;
export const binaryPath = cjs.binaryPath;
export const withServer = cjs.withServer;
export const writeTimeline = cjs.writeTimeline;
export default cjs;
