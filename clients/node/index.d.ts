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
}

/** A decoded RESP2 reply of {@link RlockdServer.command}. */
export type RespReply = string | number | Buffer | null | RespReply[];

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
  /** Everything the server printed so far (stdout and stderr). */
  logs(): string;
  /** Stops the server (SIGTERM, then SIGKILL after `timeoutMs`); safe to call twice. */
  stop(timeoutMs?: number): Promise<void>;
  /** Sends one command on a new connection; an error reply rejects. */
  command(...args: Array<string | number | Buffer>): Promise<RespReply>;
  ping(): Promise<boolean>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Start failures (missing binary, port taken, early exit) and error replies. */
export declare class RlockdError extends Error {
  /** The server's log, when the server had been run. */
  readonly logs?: string;
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
  binaryPath: typeof binaryPath;
  withServer: typeof withServer;
};
export default _default;
