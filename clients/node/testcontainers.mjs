// ESM entry of rlockd/testcontainers: the implementation is testcontainers.cjs.
import cjs from "./testcontainers.cjs";

export const RedisContainer = cjs.RedisContainer;
export const StartedRedisContainer = cjs.StartedRedisContainer;
export default cjs;
