// Recognises the client objects users lend the module, by shape only.
import type { IoredisLikeClient, NodeRedisLikeClient } from './lock-options.interface';

/**
 * Recognises the client objects users lend the module, by shape only: never `instanceof` (a second copy
 * of a library in node_modules would fail it) and never by loading the library (node-redis and iovalkey
 * are optional: the module only ever receives their objects).
 */

/** ioredis 5/6 or iovalkey `Redis` / `Cluster`: the only clients with defineCommand. */
export function isIoredisClient(value: unknown): value is IoredisLikeClient & Record<string, unknown> {
  return (
    isObject(value) &&
    typeof value.defineCommand === 'function' &&
    typeof value.duplicate === 'function' &&
    typeof value.pipeline === 'function'
  );
}

/**
 * A node-redis (v4 or v5) client or cluster: connect() and an isOpen flag, sendCommand and duplicate.
 * node-redis' Sentinel and pool objects have no duplicate() and are not recognised.
 */
export function isNodeRedisClient(value: unknown): value is NodeRedisLikeClient & Record<string, unknown> {
  return (
    isObject(value) &&
    typeof value.defineCommand !== 'function' &&
    typeof value.sendCommand === 'function' &&
    typeof value.duplicate === 'function' &&
    typeof value.connect === 'function' &&
    'isOpen' in value
  );
}

/** Any client the module can borrow. */
export function isLendableClient(value: unknown): value is IoredisLikeClient | NodeRedisLikeClient {
  return isIoredisClient(value) || isNodeRedisClient(value);
}

/** A Redis Cluster client of either family (a Cluster is one deployment, never a Redlock node). */
export function isClusterClient(value: unknown): boolean {
  if (isIoredisClient(value)) return value.isCluster === true;
  if (isNodeRedisClient(value))
    return 'masters' in value && typeof (value as { nodeClient?: unknown }).nodeClient === 'function';
  return false;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
