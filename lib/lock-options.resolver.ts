import { hostname } from 'node:os';
import { LockOptionsError } from './errors';
import { MIN_TTL_MS } from './lock.constants';
import { isClusterClient, isLendableClient, isNodeRedisClient } from './stores/clients/client-shape';
import type { LockShape } from './stores/lock-store.interface';
import type {
  AcquireOptions,
  LockModuleOptions,
  MinReplicas,
  RedlockNode,
  ResolvedLockOptions,
  StartupCheck,
} from './lock-options.interface';

/** The documented defaults (README, "Configuration"). */
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
    throw new LockOptionsError('options', options, 'an object of LockModuleOptions from the forRootAsync factory ({} for the defaults)');
  }
  const given: LockModuleOptions = options;
  if (typeof given !== 'object' || given === null) {
    throw new LockOptionsError('options', given, 'an object of LockModuleOptions');
  }
  for (const option of Object.keys(given)) {
    if (!KNOWN_OPTIONS.has(option)) {
      throw new LockOptionsError(option, (given as Record<string, unknown>)[option], `one of the options: ${[...KNOWN_OPTIONS].join(', ')}`);
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
      'no minReplicas with a node-redis Cluster (its WAIT may reach another node than the grant); lend an ioredis Cluster, or leave minReplicas off',
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
    throw new LockOptionsError('startupCheck', value, "'warn' (log a store that does not answer), 'fail' (fail the bootstrap) or 'off'");
  }
  return value as StartupCheck;
}

/** The settings one acquisition runs with: the call's options over the module's. */
export interface CallSettings {
  readonly ttl: number;
  readonly wait: number;
  readonly autoExtend: boolean;
  readonly maxHold: number;
  readonly minHold: number;
  readonly reentrant: boolean;
  readonly label?: string;
  readonly signal?: AbortSignal;
  /** What to hold (`limit`, `mode`); a mutex when absent. */
  readonly shape?: LockShape;
}

/** Largest `limit`: far beyond any real pool, small enough to stay an exact integer in every store. */
const MAX_LIMIT = 1_000_000;

/** Validates the options of one call (a LockOptionsError at the call) and merges the module's under them. */
export function resolveCallSettings(module: ResolvedLockOptions, call: AcquireOptions | undefined): CallSettings {
  if (call === undefined) return module;
  if (typeof call !== 'object' || call === null) {
    throw new LockOptionsError('options', call, 'an object of AcquireOptions');
  }
  checkAcquireOptionNames(call);
  const signal = call.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new LockOptionsError('signal', signal, 'an AbortSignal');
  }
  if (call.ttl !== undefined && module.minReplicas) {
    replicaBudget(module.minReplicas.timeout, leaseLength('ttl', call.ttl, false), 'ttl', call.ttl);
  }
  return {
    ttl: call.ttl === undefined ? module.ttl : leaseLength('ttl', call.ttl, false),
    wait: call.wait === undefined ? module.wait : nonNegative('wait', call.wait),
    autoExtend: call.autoExtend === undefined ? module.autoExtend : flag('autoExtend', call.autoExtend),
    ...holdBounds(
      call.maxHold === undefined ? module.maxHold : leaseLength('maxHold', call.maxHold, true),
      call.minHold === undefined ? module.minHold : holdTime('minHold', call.minHold),
    ),
    reentrant: call.reentrant === undefined ? module.reentrant : flag('reentrant', call.reentrant),
    label: call.label === undefined ? undefined : name('label', call.label, LABEL_MAX_LENGTH),
    signal,
    shape: shapeOf(call.limit, call.mode),
  };
}

/** What AcquireOptions may name: anything else is a typo that would otherwise be ignored (`tll`, `wiat`). */
const ACQUIRE_OPTIONS: ReadonlySet<string> = new Set<keyof AcquireOptions>([
  'ttl',
  'wait',
  'autoExtend',
  'maxHold',
  'minHold',
  'reentrant',
  'limit',
  'mode',
  'label',
  'signal',
]);

/**
 * LockOptionsError for an option AcquireOptions does not have, as the module's options are checked. TypeScript
 * catches it only in an object literal: options spread from a config object, or from JavaScript, are not.
 */
export function checkAcquireOptionNames(options: object): void {
  for (const option in options) {
    if (!ACQUIRE_OPTIONS.has(option)) {
      throw new LockOptionsError(option, (options as Record<string, unknown>)[option], `one of the options: ${[...ACQUIRE_OPTIONS].join(', ')}`);
    }
  }
}

/**
 * maxHold and minHold together: a lock is never held past maxHold, so a minHold beyond it could not be kept
 * (ShedLock's rule too: lockAtLeastFor ≤ lockAtMostFor). Checked on the merged settings, so a call's minHold
 * is held against the module's maxHold and the other way round.
 */
function holdBounds(maxHold: number, minHold: number): { maxHold: number; minHold: number } {
  if (minHold > maxHold) {
    throw new LockOptionsError('minHold', minHold, `at most maxHold (${maxHold} ms): a lock is never held longer than maxHold`);
  }
  return { maxHold, minHold };
}

/**
 * The longest finite time in ms an option may give: Redis takes PX / PEXPIRE as a 64-bit integer, and a
 * larger double would be written in exponent notation ("1e+300"), which Redis refuses.
 */
const LONGEST_MS = Number.MAX_SAFE_INTEGER;

/**
 * `limit` and `mode` as a LockShape: undefined (a mutex) without them and for `mode: 'write'`, which is
 * the plain lock. `limit: 1` is a semaphore of one, not a mutex: the key is then a semaphore, and a mutex
 * call on it is refused like any other mix.
 */
function shapeOf(limit: unknown, mode: unknown): LockShape | undefined {
  if (mode !== undefined && mode !== 'read' && mode !== 'write') {
    throw new LockOptionsError('mode', mode, "'read' or 'write'");
  }
  if (limit !== undefined) {
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
      throw new LockOptionsError('limit', limit, `an integer from 1 to ${MAX_LIMIT}: how many holders the key admits at once`);
    }
    if (mode !== undefined) {
      throw new LockOptionsError('limit', limit, "no 'mode' beside it: a key is a semaphore or a read-write lock, not both");
    }
    return { kind: 'semaphore', limit };
  }
  return mode === 'read' ? { kind: 'read' } : undefined;
}

function positive(option: string, value: unknown, infinityAllowed: boolean): number {
  if (typeof value !== 'number' || !(value > 0) || (!infinityAllowed && !Number.isFinite(value))) {
    throw new LockOptionsError(option, value, `a ${infinityAllowed ? '' : 'finite '}number of milliseconds above 0`);
  }
  return value;
}

/** A lease length (ttl, maxHold): at least MIN_TTL_MS, or no lease could ever be granted on Redis. */
export function leaseLength(option: string, value: unknown, infinityAllowed: boolean): number {
  if (
    typeof value !== 'number' ||
    !(value >= MIN_TTL_MS) ||
    (Number.isFinite(value) ? value > LONGEST_MS : !infinityAllowed)
  ) {
    throw new LockOptionsError(
      option,
      value,
      `a ${infinityAllowed ? '' : 'finite '}number of milliseconds from ${MIN_TTL_MS} to ${LONGEST_MS}: a lease is valid for ` +
        'its length minus the clock-drift allowance (ttl × driftFactor + 2 ms) and a round trip, so a shorter one ' +
        'could never be granted on Redis',
    );
  }
  return value;
}

function nonNegative(option: string, value: unknown): number {
  if (typeof value !== 'number' || !(value >= 0)) {
    throw new LockOptionsError(option, value, 'a number of milliseconds from 0 (one attempt) up to Infinity');
  }
  return value;
}

/** A finite number of ms from 0 (off): a hold-over must end, or the key would stay locked for nobody. */
function holdTime(option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > LONGEST_MS) {
    throw new LockOptionsError(option, value, `a number of milliseconds from 0 (off) to ${LONGEST_MS}`);
  }
  return value;
}

/** Longest `instance` and `label`: names for people and dashboards, not data. */
const INSTANCE_MAX_LENGTH = 256;
const LABEL_MAX_LENGTH = 256;

/** `<hostname>:<pid>` unless given: unique per process on a host, recognisable by an operator. */
function instanceName(value: unknown): string {
  return value === undefined ? `${hostname()}:${process.pid}` : givenInstanceName(value);
}

/** An instance name given by the caller (the `instance` option, a test's other instance): printable, bounded. */
export function givenInstanceName(value: unknown): string {
  return name('instance', value, INSTANCE_MAX_LENGTH);
}

/** A non-empty printable string: it is shown in logs and metrics, and stored in Redis with each lease. */
function name(option: string, value: unknown, maxLength: number): string {
  // Control characters would garble log lines and metric labels.
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  if (typeof value !== 'string' || value.length === 0 || value.length > maxLength || /[\u0000-\u001f\u007f]/.test(value)) {
    throw new LockOptionsError(option, value, `a non-empty string of at most ${maxLength} printable characters`);
  }
  return value;
}

function flag(option: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw new LockOptionsError(option, value, 'true or false');
  return value;
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
    throw new LockOptionsError('minReplicas.replicas', replicas, 'an integer from 1: how many replicas must acknowledge each grant');
  }
  if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 1) {
    throw new LockOptionsError('minReplicas.timeout', timeout, 'an integer number of milliseconds from 1 (WAIT 0 would block forever)');
  }
  replicaBudget(timeout, ttl, 'minReplicas.timeout', timeout);
  if (!onRedis) {
    throw new LockOptionsError('minReplicas', value, "'redis' or 'nodes' as well: the in-process store has no replicas");
  }
  return { replicas, timeout };
}

/**
 * A renewal under minReplicas may take the whole WAIT timeout before it counts, and it is sent about a third
 * of a ttl before the lease would end: a longer WAIT would let a lease lapse although every renewal was
 * acknowledged. So the timeout must fit in a third of every ttl it is used with (the module's and a call's).
 */
function replicaBudget(timeout: number, ttl: number, option: string, value: unknown): void {
  if (timeout > ttl / 3) {
    const expected = option === 'ttl' ? `at least 3 × minReplicas.timeout (${timeout} ms)` : `at most a third of the ttl (${ttl} ms)`;
    throw new LockOptionsError(option, value, `${expected}: a renewal is sent about ttl/3 before the lease ends, and may wait that long for replicas`);
  }
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
  if (options.port !== undefined && !(Number.isInteger(options.port) && Number(options.port) > 0 && Number(options.port) < 65536)) {
    throw new LockOptionsError(`${option}.port`, options.port, 'an integer port from 1 to 65535');
  }
  if (options.host !== undefined && typeof options.host !== 'string') {
    throw new LockOptionsError(`${option}.host`, options.host, 'a host name string');
  }
}
