// rlockd/testcontainers: the shape of @testcontainers/redis, without Docker.
import { RlockdServer } from "./index";

export declare class RedisContainer {
  /** The image name is recorded and not run: an rlockd process answers in its place. */
  constructor(image?: string);
  readonly image: string;
  withPassword(password: string): this;
  /** Throws: data across restart() needs a disk, which the server does not write. */
  withPersistence(sourcePath: string): this;
  withInitialData(importScriptFile: string): this;
  withExposedPorts(...ports: Array<number | string>): this;
  withStartupTimeout(ms: number): this;
  withName(name: string): this;
  withReuse(): this;
  start(): Promise<StartedRedisContainer>;
}

export declare class StartedRedisContainer {
  readonly image: string;
  /** The rlockd server in the container's place, with its test control. */
  readonly server: RlockdServer;
  getHost(): string;
  getPort(): number;
  getFirstMappedPort(): number;
  getMappedPort(port: number | string): number;
  getPassword(): string;
  getConnectionUrl(): string;
  getId(): string;
  getName(): string;
  executeCliCmd(cmd: string, additionalFlags?: string[]): Promise<string>;
  restart(): Promise<this>;
  stop(): Promise<this>;
}
