import { AssertionError } from "node:assert";

/** Options of {@link RlockdServer.start}. */
export interface RlockdOptions {
  /** TCP port; 0 (the default) lets the server pick a free one. */
  port?: number;
  /** Address to listen on (default 127.0.0.1). */
  host?: string;
  /** Sets `requirepass`; the URL then carries it. */
  password?: string;
  /** Extra command-line options, e.g. `["--notify-keyspace-events", "KEA"]`. */
  args?: string[];
  /** rlockd executable (default: RLOCKD_BINARY, then the one in this package). */
  binary?: string;
  /** How long to wait for the ready line (default 10000). */
  startupTimeoutMs?: number;
  /** A node:test context: the server's log goes into its report if the test fails (see `reportTo`). */
  test?: TestLike;
}

/** What `reportTo` needs of a test context (node:test's `t`). */
export interface TestLike {
  after(fn: () => unknown): unknown;
  diagnostic(message: string): unknown;
  readonly passed?: boolean;
}

/** A decoded RESP2 reply of {@link RlockdServer.command}. */
export type RespReply = string | number | Buffer | null | RespReply[];

/** One holder of a lock: a Redisson `uuid:threadId`, a token, a semaphore member. */
export interface LockHolder {
  id: string;
  /** Re-entries (1 for non-reentrant locks). */
  count: number;
  /** This hold's remaining lease in ms, when known. */
  leaseMs: number | null;
  /** A sorted-set holder's score (acquisition time or deadline, unix ms). */
  score: number | null;
}

/** One waiter of a fair lock, in queue order. */
export interface LockWaiter {
  id: string;
  deadlineMs: number | null;
}

/** What {@link RlockdServer.locks} recognises. */
export type LockKind = "reentrant" | "fair" | "read-write" | "token" | "counter" | "zset-semaphore";

/** A lock as the server reads it out of the keyspace (`RLOCKD LOCKS`). */
export interface LockInfo {
  key: string;
  db: number;
  kind: LockKind;
  /** `read` or `write` for a read-write lock. */
  mode: string | null;
  /** Remaining TTL of the lock's key (null: no TTL). */
  leaseMs: number | null;
  /** A counter's value (free permits, a latch's count). */
  value: number | null;
  holders: LockHolder[];
  waiters: LockWaiter[];
}

/** Something that happened to a lock (`RLOCKD EVENTS`). */
export interface LockEvent {
  /** Increasing id, for `since`. */
  id: number;
  timeMs: number;
  db: number;
  key: string;
  kind: LockKind;
  event: "acquired" | "reentered" | "renewed" | "released" | "expired" | "counter";
  holder: string;
  count: number;
  /** Client id behind it (0 for an expiry). */
  client: number;
  command: string;
}

/** The server's clock (`RLOCKD CLOCK INFO`). */
export interface ClockInfo {
  nowMs: number;
  /** How far it is from the system clock. */
  offsetMs: number;
  frozen: boolean;
}

/** Which commands a fault applies to; every condition given must hold. */
export interface CommandScope {
  /** Command name pattern (lower case; `client|setname` for subcommands). */
  command?: string;
  /** The command must name a key matching this pattern. */
  key?: string;
  /** Client name pattern (`CLIENT SETNAME`, ioredis `connectionName`). */
  client?: string;
  /** One client id. */
  id?: number;
  /** Remove the fault after that many matches (default: until cleared). */
  times?: number;
}

/** Which published messages a message fault applies to. */
export interface ChannelScope {
  /** Channel pattern. */
  channel?: string;
  /** Remove the fault after that many matches (default: until cleared). */
  times?: number;
}

/** A fault for {@link RlockdServer.addFault}: its kind, parameters and scope. */
export type FaultSpec =
  | ({ kind: "error"; /** e.g. `"READONLY You can't write against a read only replica."` */ message: string } & CommandScope)
  | ({ kind: "latency"; ms: number; jitterMs?: number } & CommandScope)
  | ({ kind: "close"; /** default `before`: the command is lost; `after`: it ran, unanswered */ when?: "before" | "after" } & CommandScope)
  | ({ kind: "freeze"; ms: number } & CommandScope)
  | ({ kind: "slowwrite"; bytes: number; ms: number } & CommandScope)
  | ({ kind: "cutwrite"; bytes: number } & CommandScope)
  | ({ kind: "dropmsg" } & ChannelScope)
  | ({ kind: "delaymsg"; ms: number } & ChannelScope);

/** A fault that is set (`RLOCKD FAULT LIST`). */
export interface FaultInfo {
  id: number;
  kind: FaultSpec["kind"];
  /** Its parameters as text (`"200 ms, jitter 0 ms"`). */
  params: string;
  command: string | null;
  key: string | null;
  client: string | null;
  clientId: number | null;
  channel: string | null;
  /** Matches left before it removes itself (null: until cleared). */
  timesLeft: number | null;
  hits: number;
}

/** One rlockd process; stopped by `stop()`, on process exit, and when this process dies. */
export declare class RlockdServer {
  static start(options?: RlockdOptions): Promise<RlockdServer>;
  /** `redis://[:password@]host:port` */
  readonly url: string;
  readonly port: number;
  readonly host: string;
  readonly password?: string;
  readonly pid: number | undefined;
  readonly running: boolean;
  /** Puts the server's log into test `t`'s report if it fails (node:test, Node 20.12+). */
  reportTo(t: TestLike): this;
  /** Everything the server printed so far (stdout and stderr). */
  logs(): string;
  /** Stops the server (SIGTERM, then SIGKILL after `timeoutMs`); safe to call twice. */
  stop(timeoutMs?: number): Promise<void>;
  /** Sends one command on a new connection; an error reply rejects. */
  command(...args: Array<string | number | Buffer>): Promise<RespReply>;
  ping(): Promise<boolean>;
  [Symbol.asyncDispose](): Promise<void>;

  // Test control (RLOCKD commands); an error reply rejects with an RlockdError.
  /** The server's time, unix ms. */
  clockMs(): Promise<number>;
  clockInfo(): Promise<ClockInfo>;
  /** Moves the server's time by `ms` (negative: back); keys now due expire before it resolves. Resolves with the new time. */
  advanceClock(ms: number): Promise<number>;
  /** Jumps to `unixMs`; resolves with the new time. */
  setClock(unixMs: number): Promise<number>;
  /** Stops the server's time (TTLs, TIME, blocking timeouts, scripts). */
  freezeClock(): Promise<void>;
  /** Lets the server's time run again as if it had never stopped (moves made while frozen stay; the time spent frozen is caught up). */
  resumeClock(): Promise<void>;
  /** Runs `ms` ahead of (negative: behind) the system clock; resolves with the new time. */
  skewClock(ms: number): Promise<number>;
  /** Every lock in the keyspace (keys matching the glob `pattern`). */
  locks(pattern?: string): Promise<LockInfo[]>;
  /** The same, readable: one line per lock, holder and waiter. */
  locksText(pattern?: string): Promise<string>;
  /** What happened to the locks (of `key`), after event id `since`. */
  lockEvents(options?: { key?: string; since?: number }): Promise<LockEvent[]>;
  /** Every safety violation the server saw (empty: nothing was unsafe). */
  checkLocks(): Promise<string[]>;
  /** Forgets the lock events and violations seen so far. */
  resetLockChecks(): Promise<void>;
  /** Rejects with a {@link LocksUnsafeError} listing the violations, if any. */
  assertLocksSafe(): Promise<void>;
  /** RLOCKD TIMELINE: the lock history as one self-contained HTML document (or JSON), also written to `file` when given. */
  timeline(
    file?: string | null,
    options?: { key?: string; fromMs?: number; toMs?: number; format?: "html" | "json" },
  ): Promise<string>;
  /** RLOCKD HISTORY: the lock history as Jepsen-style operations, a JSON array (or Jepsen's EDN), also written to `file` when given. */
  history(file?: string | null, options?: { key?: string; format?: "json" | "jepsen" }): Promise<string>;
  /** RLOCKD CLAIM ENTER: the application's code is inside the critical section of `lock` as `holder`. */
  claimEnter(lock: string, holder: string): Promise<void>;
  /** RLOCKD CLAIM LEAVE. */
  claimLeave(lock: string, holder: string): Promise<void>;
  /** Runs `fn` as a claimed critical section of `lock` held as `holder`; resolves with its result. */
  claim<R>(lock: string, holder: string, fn: () => R | Promise<R>): Promise<R>;
  /** Captures every database, TTLs included, under `name`. */
  snapshot(name: string): Promise<void>;
  /** Replaces every database with snapshot `name` (as after a failover). */
  restore(name: string): Promise<void>;
  snapshots(): Promise<string[]>;
  /** Sets a fault; resolves with its id. `addFault({ kind: "latency", ms: 200, client: "worker-*", times: 3 })` */
  addFault(spec: FaultSpec): Promise<number>;
  /** The faults set, with how often each applied. */
  faults(): Promise<FaultInfo[]>;
  /** Removes fault `id`, or all of them; resolves with how many went. */
  clearFaults(id?: number): Promise<number>;
  /** Closes the connections matching `client` (name pattern) and/or `id` now; resolves with how many. */
  killClients(options?: { client?: string; id?: number }): Promise<number>;
}

/** Options of {@link RlockdCluster.start}. */
export interface RlockdClusterOptions extends RlockdOptions {
  /** Primaries (default 3). */
  nodes?: number;
  /** Replicas per primary: `--cluster-replicas` (default 0; where the binary supports it). */
  replicas?: number;
}

/** Options of {@link RlockdReplicated.start}. */
export interface RlockdReplicatedOptions extends RlockdOptions {
  /** Replicas of the primary (default 1). */
  replicas?: number;
  /** Sentinels watching it as "mymaster" (default 3; 0: none). */
  sentinels?: number;
}

/** `{ host, port }`, as ioredis takes cluster seeds and sentinels. */
export interface HostPort {
  host: string;
  port: number;
}

/** One link of the current primary (`RLOCKD REPL STATUS`). */
export interface ReplicationLink {
  /** host:port */
  primary: string;
  replica: string;
  /** The replica's acknowledged offset. */
  acked: number;
  pendingWrites: number;
  pendingBytes: number;
  paused: boolean;
  lagMs: number;
  broken: boolean;
}

/**
 * The nodes of a topology and the clock and checks over all of them (`advanceClock`,
 * `setClock`, `freezeClock`, `resumeClock`, `skewClock`, `checkLocks`, `assertLocksSafe`,
 * `resetLockChecks` cover every node that is up). A node is an {@link RlockdServer} with its
 * own test control; the nodes share one process: stop the topology, not a node.
 */
export declare class RlockdTopology extends RlockdServer {
  /** Every node in start order (a replicated set: the primary, then its replicas). */
  readonly nodes: RlockdServer[];
  readonly urls: string[];
}

/** A Redis Cluster in one rlockd process (`rlockd --cluster N`), each node on a free port. */
export declare class RlockdCluster extends RlockdTopology {
  static start(options?: RlockdClusterOptions): Promise<RlockdCluster>;
  /** `new Redis.Cluster(c.startupNodes)` */
  readonly startupNodes: HostPort[];
  /** The key's hash slot (`CLUSTER KEYSLOT`). */
  keySlot(key: string): Promise<number>;
  /** The index in `nodes` of the node serving `slot` now (-1: none). */
  slotOwner(slot: number): Promise<number>;
  /** Moves `slot` with its keys to `node` (MOVED); with `keys`, only that many more (ASK). Resolves with how many keys moved. */
  moveSlot(slot: number, node: number | RlockdServer, options?: { keys?: number }): Promise<number>;
  /** Stops a node: its clients are cut, its port refuses, the others answer CLUSTERDOWN. */
  takeDown(node: number | RlockdServer): Promise<void>;
  /** Starts a node taken down again, on its port, with its keys. */
  bringUp(node: number | RlockdServer): Promise<void>;
  /** Promotes a replica (its index or node; a primary's index names its first replica) with what it has: it takes the slots. Resolves with the new primary. */
  failover(node: number | RlockdServer): Promise<RlockdServer>;
  /** Holds the stream to the replicas (of every primary; of `primary`; to `replica` only): writes pile up unacknowledged. Resolves with how many links. */
  pauseReplication(options?: ClusterReplicationTarget): Promise<number>;
  resumeReplication(options?: ClusterReplicationTarget): Promise<number>;
  /** Delivers each write `ms` after it was made (0: at once). */
  setReplicationLag(ms: number, options?: ClusterReplicationTarget): Promise<number>;
  /** Loses what the replicas have not received yet; resolves with how many writes. */
  dropReplication(options?: ClusterReplicationTarget): Promise<number>;
  /** Takes the links down (`master_link_status:down`). */
  breakReplication(options?: ClusterReplicationTarget): Promise<number>;
  /** Brings the links back; the replicas catch up. */
  restoreReplication(options?: ClusterReplicationTarget): Promise<number>;
  /** Every primary's links. */
  replicationStatus(): Promise<ReplicationLink[]>;
}

/** Which links of a cluster a replication control acts on (none: every primary's). */
export interface ClusterReplicationTarget {
  /** One replica's link (its index in `nodes`, or the node). */
  replica?: number | RlockdServer;
  /** One primary's links. */
  primary?: number | RlockdServer;
}

/** A primary with replicas and Sentinels (`rlockd --replicas N --sentinel 0,0,0`). */
export declare class RlockdReplicated extends RlockdTopology {
  static start(options?: RlockdReplicatedOptions): Promise<RlockdReplicated>;
  /** "mymaster" */
  readonly masterName: string;
  /** The primary as started (`currentPrimary()` after a failover). */
  readonly primary: RlockdServer;
  /** The replicas as started. */
  readonly replicas: RlockdServer[];
  readonly replicaUrls: string[];
  /** `new Redis({ sentinels: r.sentinels, name: r.masterName })` */
  readonly sentinels: HostPort[];
  /** The node that is the primary now (each node's ROLE). */
  currentPrimary(): Promise<RlockdServer>;
  /** Crashes a node (RLOCKD REPL CRASH): its port closes, unreplicated writes are lost; the Sentinels notice it. */
  takeDown(node: number | RlockdServer): Promise<void>;
  /** Starts a crashed node again on its port (RLOCKD REPL REVIVE). */
  bringUp(node: number | RlockdServer): Promise<void>;
  /** Where the Sentinels say the primary is. */
  sentinelPrimary(): Promise<HostPort>;
  /** Holds the stream to the replicas (to `replica` only): writes pile up unacknowledged. Resolves with how many links. */
  pauseReplication(options?: { replica?: number | RlockdServer }): Promise<number>;
  resumeReplication(options?: { replica?: number | RlockdServer }): Promise<number>;
  /** Delivers each write `ms` after it was made (0: at once). */
  setReplicationLag(ms: number, options?: { replica?: number | RlockdServer }): Promise<number>;
  /** Loses what the replicas have not received yet; resolves with how many writes. */
  dropReplication(options?: { replica?: number | RlockdServer }): Promise<number>;
  /** Takes the links down (`master_link_status:down`). */
  breakReplication(options?: { replica?: number | RlockdServer }): Promise<number>;
  /** Brings the links back; the replicas catch up. */
  restoreReplication(options?: { replica?: number | RlockdServer }): Promise<number>;
  replicationStatus(): Promise<ReplicationLink[]>;
  /** Promotes a replica with what it has received now; resolves with the new primary once the Sentinels name it. */
  failover(options?: { replica?: number | RlockdServer }): Promise<RlockdServer>;
}

/** Start failures (missing binary, port taken, early exit) and error replies. */
export declare class RlockdError extends Error {
  /** The server's log, when the server had been run. */
  readonly logs?: string;
}

/** Thrown by {@link RlockdServer.assertLocksSafe}: the server saw lock safety violations. */
export declare class LocksUnsafeError extends AssertionError {
  readonly violations: string[];
  constructor(violations: string[]);
}

/** Path of the rlockd executable that `start()` would run. */
export declare function binaryPath(explicit?: string): string;

/**
 * Wraps a test body: starts a server, passes it and the runner's arguments to `fn`,
 * stops it afterwards; when `fn` throws, the server's log is appended to the error, and its
 * timeline is written by {@link writeTimeline} (path in the error and, under node:test, the
 * test's diagnostic). With RLOCKD_RECORD=1 the server records every command (`RLOCKD RECORD
 * START`) and a failed test's recording is saved beside the timeline
 * (`<test>-<port>-recording.jsonl`, in the error as `rlockdRecording`), for `rlockd replay`.
 */
export declare function withServer<A extends unknown[], R>(
  fn: (server: RlockdServer, ...context: A) => R | Promise<R>,
  options?: RlockdOptions,
): (...context: A) => Promise<R>;

/**
 * Writes `server`'s timeline for a failed test under RLOCKD_ARTIFACTS (default:
 * rlockd-artifacts in the working directory); given node:test's context, reports the path
 * as its diagnostic. Resolves with the path (undefined if the server could not answer).
 */
export declare function writeTimeline(
  server: RlockdServer,
  context?: { name?: string; diagnostic?(message: string): void },
): Promise<string | undefined>;

declare const _default: {
  RlockdServer: typeof RlockdServer;
  RlockdCluster: typeof RlockdCluster;
  RlockdReplicated: typeof RlockdReplicated;
  RlockdTopology: typeof RlockdTopology;
  RlockdError: typeof RlockdError;
  LocksUnsafeError: typeof LocksUnsafeError;
  binaryPath: typeof binaryPath;
  withServer: typeof withServer;
  writeTimeline: typeof writeTimeline;
};
export default _default;
