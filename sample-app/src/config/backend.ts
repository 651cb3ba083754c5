import { Logger } from '@nestjs/common';
import type { LockModuleOptions } from '../../../lib';
import type { AppConfig } from './app-config';
import { EmbeddedRedisServer, RedisServerNotFoundError } from './embedded-redis-server';

/** Injection token of the Backend. */
export const BACKEND = 'BANK:BACKEND';

/**
 * Where the locks and the accounts actually live, once the configured StoreSetting was resolved (an
 * embedded redis-server started, or the fallback to in-process chosen).
 */
export type Backend =
  | { readonly kind: 'redis'; readonly url: string; readonly embedded?: EmbeddedRedisServer }
  | { readonly kind: 'redlock'; readonly nodes: readonly string[] }
  | { readonly kind: 'memory' };

const logger = new Logger('Backend');

/** Starts the embedded redis-server if the configuration asks for the default, and logs the choice. */
export async function resolveBackend(config: AppConfig, redisServerBinary?: string): Promise<Backend> {
  const { store } = config;
  switch (store.kind) {
    case 'redis':
      logger.log(`Locks and accounts on Redis at ${store.url} (REDIS_URL)`);
      return { kind: 'redis', url: store.url };
    case 'redlock':
      logger.log(`Locks on Redlock over ${store.nodes.length} nodes (REDIS_NODES); accounts on ${store.nodes[0]}`);
      return { kind: 'redlock', nodes: store.nodes };
    case 'memory':
      logger.warn('LOCK_STORE=memory: locks and accounts in this process only');
      return { kind: 'memory' };
    case 'embedded':
      try {
        const server = await EmbeddedRedisServer.start(redisServerBinary);
        logger.log(
          `No REDIS_URL or REDIS_NODES: started a private redis-server at ${server.url} (pid ${server.pid}); ` +
            'it stops with this process',
        );
        return { kind: 'redis', url: server.url, embedded: server };
      } catch (error) {
        if (!(error instanceof RedisServerNotFoundError)) throw error;
        logger.warn(
          `No REDIS_URL or REDIS_NODES, and ${error.message}: locks and accounts in this process only ` +
            '(install Redis or set REDIS_URL to share them between instances)',
        );
        return { kind: 'memory' };
      }
  }
}

/** The Redis URL the accounts and report cache use, or undefined for the in-process store. */
export function dataRedisUrl(backend: Backend): string | undefined {
  if (backend.kind === 'redis') return backend.url;
  if (backend.kind === 'redlock') return backend.nodes[0];
  return undefined;
}

/** The LockModule options for a backend: what LockModule.forRootAsync's factory returns. */
export function lockModuleOptions(backend: Backend): LockModuleOptions {
  const common: LockModuleOptions = { keyPrefix: 'bank:lock:', ttl: 10_000, wait: 5_000 };
  if (backend.kind === 'redis') return { ...common, redis: backend.url };
  if (backend.kind === 'redlock') return { ...common, nodes: backend.nodes };
  // Neither `redis` nor `nodes`: the library's in-process store.
  return common;
}
