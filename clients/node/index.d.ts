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
 * stops it afterwards; when `fn` throws, the server's log is appended to the error.
 */
export declare function withServer<A extends unknown[], R>(
  fn: (server: RlockdServer, ...context: A) => R | Promise<R>,
  options?: RlockdOptions,
): (...context: A) => Promise<R>;

declare const _default: {
  RlockdServer: typeof RlockdServer;
  RlockdError: typeof RlockdError;
  LocksUnsafeError: typeof LocksUnsafeError;
  binaryPath: typeof binaryPath;
  withServer: typeof withServer;
};
export default _default;
