/**
 * The sample app's settings, read from the environment in one place (the role @nestjs/config plays in a
 * larger app). Every other file receives them through the APP_CONFIG provider.
 */

/** Injection token of the AppConfig. */
export const APP_CONFIG = 'BANK:APP_CONFIG';

/** Where locks and accounts live, as configured (before an embedded redis-server is started). */
export type StoreSetting =
  /** REDIS_URL: one Redis deployment. */
  | { readonly kind: 'redis'; readonly url: string }
  /** REDIS_NODES: Redlock over independent masters; the accounts live on the first node. */
  | { readonly kind: 'redlock'; readonly nodes: readonly string[] }
  /** Neither: a private redis-server when the binary is on the PATH, otherwise in-process. */
  | { readonly kind: 'embedded' }
  /** LOCK_STORE=memory: in-process, even when redis-server is installed. */
  | { readonly kind: 'memory' };

export interface AppConfig {
  /** PORT, default 3000. The app listens on 127.0.0.1 only. */
  readonly port: number;
  readonly store: StoreSetting;
  /**
   * LOCKS=off turns the lock of POST /transfers into a no-op, for the race demo only (to show what the
   * lock prevents). The library itself has no such switch.
   */
  readonly locks: boolean;
  /** INTEREST_RATE: fraction of the balance credited by each run of the interest job, default 0.01. */
  readonly interestRate: number;
  /** Names this instance in the logs (which instance ran the scheduled job). */
  readonly instance: string;
}

/** Thrown at startup for a bad environment variable, naming it. */
export class ConfigError extends Error {
  constructor(variable: string, value: string, expected: string) {
    super(`${variable}=${JSON.stringify(value)} is not valid: expected ${expected}`);
  }
}

export function readAppConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const port = readPort(env.PORT);
  return {
    port,
    store: readStoreSetting(env),
    locks: readLocksFlag(env.LOCKS),
    interestRate: readInterestRate(env.INTEREST_RATE),
    instance: `port ${port}, pid ${process.pid}`,
  };
}

function readPort(value: string | undefined): number {
  if (value === undefined || value === '') return 3000;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError('PORT', value, 'an integer port from 0 to 65535');
  }
  return port;
}

function readStoreSetting(env: NodeJS.ProcessEnv): StoreSetting {
  const url = nonEmpty(env.REDIS_URL);
  const nodes = nonEmpty(env.REDIS_NODES);
  const forced = nonEmpty(env.LOCK_STORE);
  if (url !== undefined && nodes !== undefined) {
    throw new ConfigError('REDIS_NODES', nodes, 'to be unset when REDIS_URL is set (one Redis, or Redlock over nodes)');
  }
  if (forced !== undefined) {
    if (forced !== 'memory') throw new ConfigError('LOCK_STORE', forced, '"memory" (or unset)');
    if (url !== undefined || nodes !== undefined) {
      throw new ConfigError('LOCK_STORE', forced, 'to be unset when REDIS_URL or REDIS_NODES is set');
    }
    return { kind: 'memory' };
  }
  if (url !== undefined) return { kind: 'redis', url: redisUrl('REDIS_URL', url) };
  if (nodes !== undefined) {
    const list = nodes
      .split(',')
      .map((node) => node.trim())
      .filter((node) => node !== '');
    if (list.length === 0) throw new ConfigError('REDIS_NODES', nodes, 'comma-separated redis:// URLs');
    return { kind: 'redlock', nodes: list.map((node) => redisUrl('REDIS_NODES', node)) };
  }
  return { kind: 'embedded' };
}

function readLocksFlag(value: string | undefined): boolean {
  if (value === undefined || value === '' || value === 'on') return true;
  if (value === 'off') return false;
  throw new ConfigError('LOCKS', value, '"on" (default) or "off"');
}

function readInterestRate(value: string | undefined): number {
  if (value === undefined || value === '') return 0.01;
  const rate = Number(value);
  if (!Number.isFinite(rate) || rate < 0 || rate > 1) {
    throw new ConfigError('INTEREST_RATE', value, 'a fraction from 0 to 1, e.g. 0.01');
  }
  return rate;
}

function redisUrl(variable: string, value: string): string {
  if (!/^rediss?:\/\/./.test(value)) throw new ConfigError(variable, value, 'a redis:// or rediss:// URL');
  return value;
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === '' ? undefined : trimmed;
}
