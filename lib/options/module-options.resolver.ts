/**
 * Resolves LockModule's options once, at bootstrap: the documented defaults merged in, every value validated,
 * and the connection options (a URL, ioredis options, a lent client, Redlock nodes) checked before any is opened.
 */
import { hostname } from 'node:os';
import { LockOptionsError } from '../errors';
import { isClusterClient, isLendableClient, isNodeRedisClient } from './client-shape';
import type {
  LockModuleOptions,
  MinReplicas,
  RedlockNode,
  ResolvedLockOptions,
  StartupCheck,
} from './lock-options.interface';
import { flag, holdBounds, holdTime, leaseLength, nonNegative, printableName, replicaBudget } from './validators';

/** The documented defaults (docs/configuration.md). */
export const LOCK_DEFAULTS = {
  keyPrefix: 'lock:',
  ttl: 10_000,
  wait: 10_000,
  autoExtend: true,
  maxHold: Infinity,
  minHold: 0,
  driftFactor: 0.01,
  reentrant: true,
  startupCheck: 'warn',
  errorMapping: true,
} as const;

/** Every option LockModule knows: anything else is a typo that would silently fall back to a default. */
const KNOWN_OPTIONS: ReadonlySet<string> = new Set<keyof LockModuleOptions>([
  'redis',
  'nodes',
  'keyPrefix',
  'ttl',
  'wait',
  'autoExtend',
  'maxHold',
  'minHold',
  'driftFactor',
  'reentrant',
  'commandTimeout',
  'instance',
  'minReplicas',
  'startupCheck',
  'errorMapping',
]);

/** Merges the defaults into the module's options and validates every value, once, at bootstrap. */
export function resolveLockOptions(options: LockModuleOptions | undefined): ResolvedLockOptions {
  // forRoot() always passes an object ({} by default): undefined comes from a forRootAsync factory that returned
  // nothing, or from one that threw under `abortOnError: false`, where Nest goes on building the module. Taking
  // it for "no Redis" would run an in-process store (and warn about it) in place of the Redis the app configures.
  if (options === undefined) {
    throw new LockOptionsError(
      'options',
      options,
      'an object of LockModuleOptions from the forRootAsync factory ({} for the defaults)',
    );
  }
  const given: LockModuleOptions = options;
  if (typeof given !== 'object' || given === null) {
    throw new LockOptionsError('options', given, 'an object of LockModuleOptions');
  }
  for (const option of Object.keys(given)) {
    if (!KNOWN_OPTIONS.has(option)) {
      // Its value is not shown: an option put at the wrong level is often a credential (password, username).
      const value = (given as Record<string, unknown>)[option];
      throw new LockOptionsError(
        option,
        value,
        `one of the options: ${[...KNOWN_OPTIONS].join(', ')}`,
        `a value of type ${typeof value}`,
      );
    }
  }
  if (given.redis !== undefined && given.nodes !== undefined) {
    throw new LockOptionsError('nodes', given.nodes, "no 'nodes' when 'redis' is given: they are exclusive");
  }
  if (given.redis !== undefined) checkConnection('redis', given.redis, true);
  if (given.nodes !== undefined) {
    if (!Array.isArray(given.nodes) || given.nodes.length === 0) {
      throw new LockOptionsError('nodes', given.nodes, 'a non-empty array of Redis URLs, options or clients');
    }
    given.nodes.forEach((node: RedlockNode, index: number) => checkConnection(`nodes[${index}]`, node, false));
    checkDistinctNodes(given.nodes);
  }
  const keyPrefix = given.keyPrefix ?? LOCK_DEFAULTS.keyPrefix;
  if (typeof keyPrefix !== 'string') throw new LockOptionsError('keyPrefix', keyPrefix, 'a string');
  const tagStart = keyPrefix.indexOf('{');
  if (tagStart >= 0 && keyPrefix[tagStart + 1] === '}') {
    // An empty hash tag makes Redis Cluster hash each name whole: a lock and its fence in different slots.
    throw new LockOptionsError('keyPrefix', keyPrefix, "a prefix without an empty hash tag '{}'");
  }
  const ttl = leaseLength('ttl', given.ttl ?? LOCK_DEFAULTS.ttl, false);
  const driftFactor = given.driftFactor ?? LOCK_DEFAULTS.driftFactor;
  if (typeof driftFactor !== 'number' || !(driftFactor >= 0 && driftFactor < 0.5)) {
    throw new LockOptionsError('driftFactor', driftFactor, 'a number from 0 up to (not including) 0.5');
  }
  const commandTimeout =
    given.commandTimeout === undefined ? undefined : positive('commandTimeout', given.commandTimeout, false);
  const minReplicas =
    given.minReplicas === undefined
      ? undefined
      : checkMinReplicas(given.minReplicas, ttl, given.redis !== undefined || given.nodes !== undefined);
  if (minReplicas && isNodeRedisClient(given.redis) && isClusterClient(given.redis)) {
    // node-redis routes the script and WAIT separately: a script redirected (MOVED/ASK) during a failover
    // or resharding runs on the new master while WAIT counts the old one's replicas, and the grant would
    // count as replicated without being so. The ioredis adapter sends both as one pipeline to one node.
    throw new LockOptionsError(
      'minReplicas',
      given.minReplicas,
      'no minReplicas with a node-redis Cluster (its WAIT may reach another ' +
        'node than the grant); lend an ioredis Cluster, or leave minReplicas off',
    );
  }
  return {
    redis: given.redis,
    nodes: given.nodes,
    keyPrefix,
    ttl,
    wait: nonNegative('wait', given.wait ?? LOCK_DEFAULTS.wait),
    autoExtend: flag('autoExtend', given.autoExtend ?? LOCK_DEFAULTS.autoExtend),
    ...holdBounds(
      leaseLength('maxHold', given.maxHold ?? LOCK_DEFAULTS.maxHold, true),
      holdTime('minHold', given.minHold ?? LOCK_DEFAULTS.minHold),
    ),
    driftFactor,
    reentrant: flag('reentrant', given.reentrant ?? LOCK_DEFAULTS.reentrant),
    commandTimeout,
    instance: instanceName(given.instance),
    minReplicas,
    startupCheck: startupCheck(given.startupCheck ?? LOCK_DEFAULTS.startupCheck),
    errorMapping: flag('errorMapping', given.errorMapping ?? LOCK_DEFAULTS.errorMapping),
  };
}

const STARTUP_CHECKS: readonly StartupCheck[] = ['warn', 'fail', 'off'];

function startupCheck(value: unknown): StartupCheck {
  if (!STARTUP_CHECKS.includes(value as StartupCheck)) {
    throw new LockOptionsError(
      'startupCheck',
      value,
      "'warn' (log a store that does not answer), 'fail' (fail the bootstrap) or 'off'",
    );
  }
  return value as StartupCheck;
}

function positive(option: string, value: unknown, infinityAllowed: boolean): number {
  if (typeof value !== 'number' || !(value > 0) || (!infinityAllowed && !Number.isFinite(value))) {
    throw new LockOptionsError(option, value, `a ${infinityAllowed ? '' : 'finite '}number of milliseconds above 0`);
  }
  return value;
}

/** Longest `instance`: a name for people and dashboards, not data. */
const INSTANCE_MAX_LENGTH = 256;

/** `<hostname>:<pid>` unless given: unique per process on a host, recognisable by an operator. */
function instanceName(value: unknown): string {
  return value === undefined ? `${hostname()}:${process.pid}` : givenInstanceName(value);
}

/** An instance name given by the caller (the `instance` option, a test's other instance): printable, bounded. */
export function givenInstanceName(value: unknown): string {
  return printableName('instance', value, INSTANCE_MAX_LENGTH);
}

/**
 * `{ replicas, timeout }`: integers from 1 (WAIT with timeout 0 blocks forever), the wait shorter than the
 * lease (a grant must keep some validity after it), and only with Redis (in-process there is no replica).
 */
function checkMinReplicas(value: unknown, ttl: number, onRedis: boolean): MinReplicas {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new LockOptionsError('minReplicas', value, 'an object { replicas, timeout }');
  }
  const { replicas, timeout, ...others } = value as Record<string, unknown>;
  const other = Object.keys(others)[0];
  if (other !== undefined) {
    throw new LockOptionsError(`minReplicas.${other}`, others[other], "no field but 'replicas' and 'timeout'");
  }
  if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 1) {
    throw new LockOptionsError(
      'minReplicas.replicas',
      replicas,
      'an integer from 1: how many replicas must acknowledge each grant',
    );
  }
  if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 1) {
    throw new LockOptionsError(
      'minReplicas.timeout',
      timeout,
      'an integer number of milliseconds from 1 (WAIT 0 would block forever)',
    );
  }
  replicaBudget(timeout, ttl, 'minReplicas.timeout', timeout);
  if (!onRedis) {
    throw new LockOptionsError(
      'minReplicas',
      value,
      "'redis' or 'nodes' as well: the in-process store has no replicas",
    );
  }
  return { replicas, timeout };
}

/**
 * Redlock counts each node's vote: the same server listed twice (or one client lent twice) would count one
 * server's grant twice, and a lock could be granted to two callers at once. Told apart by what the options say
 * (host and port, or socket path, whatever the database number: two databases of one server are not
 * independent); two different clients, or two names for one host, cannot be told apart here.
 */
function checkDistinctNodes(nodes: readonly RedlockNode[]): void {
  const seen = new Map<unknown, number>();
  nodes.forEach((node, index) => {
    const identity = serverOf(node);
    const first = seen.get(identity);
    if (first !== undefined) {
      throw new LockOptionsError(
        `nodes[${index}]`,
        node,
        `a Redis server that no other node names (nodes[${first}] is the same one): Redlock needs independent masters`,
      );
    }
    seen.set(identity, index);
  });
}

/** The server a node names: `host:port` or the socket path for a URL or options, else the client itself. */
function serverOf(node: RedlockNode): unknown {
  if (typeof node === 'string') {
    if (node.startsWith('/') || !URL.canParse(node)) return node;
    const url = new URL(node);
    return `${url.hostname.toLowerCase()}:${url.port || '6379'}`;
  }
  const options = node as { host?: unknown; port?: unknown; path?: unknown; sentinels?: unknown };
  if (Object.getPrototypeOf(node) === Object.prototype || Object.getPrototypeOf(node) === null) {
    if (typeof options.path === 'string') return options.path;
    if (options.sentinels !== undefined) return node;
    return `${String(options.host ?? 'localhost').toLowerCase()}:${String(options.port ?? 6379)}`;
  }
  return node;
}

function checkConnection(option: string, value: unknown, clusterAllowed: boolean): void {
  if (typeof value === 'string') {
    if (!/^(rediss?:\/\/|\/)/.test(value)) {
      throw new LockOptionsError(option, value, 'a redis:// or rediss:// URL, or a unix socket path');
    }
    // ioredis would throw a bare TypeError for it, with the whole URL (password included) in its `input`.
    if (!value.startsWith('/') && !URL.canParse(value)) {
      throw new LockOptionsError(
        option,
        value,
        "a URL that parses: in a password, '#', '/' and '?' are percent-encoded (encodeURIComponent), " +
          'and a port is at most 65535',
      );
    }
    return;
  }
  if (isLendableClient(value)) {
    if (!clusterAllowed && isClusterClient(value)) {
      throw new LockOptionsError(option, value, 'an independent master: a Cluster is not a Redlock node');
    }
    return;
  }
  const isPlainObject =
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    [Object.prototype, null].includes(Object.getPrototypeOf(value) as object | null);
  const options = value as Record<string, unknown>;
  if (!isPlainObject || !['host', 'port', 'path', 'sentinels'].some((field) => options[field] !== undefined)) {
    throw new LockOptionsError(
      option,
      value,
      'a Redis URL, ioredis options with host/port, path or sentinels, or a client: ioredis or iovalkey Redis' +
        (clusterAllowed ? ' or Cluster' : '') +
        ', node-redis createClient()' +
        (clusterAllowed ? ' or createCluster()' : ''),
    );
  }
  if (
    options.port !== undefined &&
    !(Number.isInteger(options.port) && Number(options.port) > 0 && Number(options.port) < 65536)
  ) {
    throw new LockOptionsError(`${option}.port`, options.port, 'an integer port from 1 to 65535');
  }
  if (options.host !== undefined && typeof options.host !== 'string') {
    throw new LockOptionsError(`${option}.host`, options.host, 'a host name string');
  }
}
