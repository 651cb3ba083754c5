import { LockKeyNamer } from '../../lib/keys';
import type { LockKeyNames, LockShape } from '../../lib/stores/lock-store.interface';
import { UNDO_SCRIPT } from '../../lib/stores/redis/scripts';
import type { LockScript } from '../../lib/stores/clients/lock-script';
import { RedisLockNode } from '../../lib/stores/redis/redis-lock-node';
import { TokenOrder } from '../../lib/stores/redlock/token-order';
import { ReplicasNotAcknowledgedError } from '../../lib/errors/replicas-not-acknowledged.error';
import { uniqueKey } from '../support/lock-app';
import { type MasterWithReplica, startMasterWithReplica } from '../support/redis-sentinel';

/**
 * A Redlock node with minReplicas: an attempt's script is followed by WAIT, which holds the connection for up
 * to minReplicas.timeout. The store's verdict does not wait for a slow node: it sends that node the attempt's
 * undo at once, and the token's next attempt may follow on the same connection. If the first attempt's grant
 * then comes back unacknowledged, a take-back (an undo) sent by the node when the reply arrives would run after
 * the store's undo and the next attempt, and delete the next attempt's grant, which the caller counts as held.
 * The store's undo already follows the grant on the connection; no second one may be sent.
 */
describe('Redlock node with minReplicas: an unacknowledged grant already undone is not taken back again', () => {
  let servers: MasterWithReplica;
  let node: RedisLockNode;
  const namer = new LockKeyNamer('lock:');
  /** Undo scripts the node sent, in order; `onUndo` hears of each. */
  let undoScripts = 0;
  let onUndo: (() => void) | undefined;
  /** WAIT's timeout: the first attempt's reply comes after it, its replica being frozen. */
  const ACK_TIMEOUT_MS = 2_500;

  beforeAll(async () => {
    servers = await startMasterWithReplica();
    node = new RedisLockNode(servers.master.url, {
      label: 'nodes[0]',
      minReplicas: { replicas: 1, timeout: ACK_TIMEOUT_MS },
      order: new TokenOrder(),
    });
    type RunScript = (script: LockScript, ...rest: unknown[]) => Promise<unknown>;
    const client = (node as unknown as { client: { runScript: RunScript } }).client;
    const runScript = client.runScript.bind(client);
    client.runScript = (script, ...rest) => {
      if (script.name === 'nestLockUndo' || script.name === 'nestLockPermitUndo') {
        undoScripts++;
        onUndo?.();
      }
      return runScript(script, ...rest);
    };
  });
  afterAll(async () => {
    servers?.replica.resume();
    await node?.close();
    await servers?.stop();
  });

  /**
   * The connection open and this shape's scripts sent once, with the replica acknowledging (a script's first
   * send on a connection carries it in full, so none of the calls below is answered NOSCRIPT).
   */
  async function warmUp(shape?: LockShape): Promise<void> {
    const key = namer.names(uniqueKey('warm-up'));
    expect(await node.acquire({ keys: [key], token: 'warm|up', ttl: 10_000, shape }, 10_000)).toMatchObject({
      acquired: true,
    });
    await node.undo([key], 'warm|up', 10_000, shape);
  }

  /** Holders of `key` on the master, with their remaining time. */
  async function holdersOf(key: LockKeyNames): Promise<{ value: string; ttlLeft: number }[]> {
    return (await node.inspect(key, 10_000))?.holders.map(({ value, ttlLeft }) => ({ value, ttlLeft })) ?? [];
  }

  /** Undo scripts the node has sent since `before`. */
  const undosSince = (before: number): number => undoScripts - before;

  /**
   * As the Redlock store does with a node still silent at a verdict taken elsewhere: the attempt, its undo,
   * then the token's next attempt (its grant a 30 s lease, the first's 60 s), with the replica frozen, so the
   * first is answered unacknowledged. The replica thaws once that answer is handled: either a take-back went
   * out (the second undo: it then runs after the next attempt, which the thawed replica acknowledges) or the
   * first attempt settled without one. Resolves once every command sent has run.
   */
  async function attemptUndoThenNext(
    key: LockKeyNames,
    token: string,
    shape?: LockShape,
  ): Promise<{ undos: number; next: unknown }> {
    servers.replica.pause();
    const before = undoScripts;
    const lateTakeBack = new Promise<void>((resolve) => {
      onUndo = () => {
        if (undosSince(before) >= 2) resolve();
      };
    });
    try {
      const first = node.acquire({ keys: [key], token, ttl: 60_000, shape }, 10_000);
      const undone = node.undo([key], token, 10_000, shape);
      const next = node.acquire({ keys: [key], token, ttl: 30_000, shape }, 10_000);
      await Promise.race([lateTakeBack, first.then(noop, noop)]);
      servers.replica.resume();
      await expect(first).rejects.toBeInstanceOf(ReplicasNotAcknowledgedError);
      await undone;
      const answer = await next;
      // Every command the node sent has run (the first attempt settles after a take-back's reply, if any).
      await node.exists(key, 10_000);
      return { undos: undosSince(before), next: answer };
    } finally {
      onUndo = undefined;
      servers.replica.resume();
    }
  }

  /** The next attempt's grant (ttl 30 s, not the first's 60 s) is on the master: nobody deleted it. */
  async function expectNextAttemptHolds(key: LockKeyNames, token: string): Promise<void> {
    const holders = await holdersOf(key);
    expect(holders.map((holder) => holder.value)).toEqual([token]);
    expect(holders[0].ttlLeft).toBeGreaterThan(0);
    expect(holders[0].ttlLeft).toBeLessThanOrEqual(30_000);
  }

  /**
   * The server forgets the acquire scripts, not the undo's: an attempt is answered NOSCRIPT and sent again in
   * full a round trip later, behind the commands made meanwhile (the undo finds nothing to delete).
   */
  async function flushAcquireScripts(): Promise<void> {
    await servers.master.command('SCRIPT', 'FLUSH');
    await servers.master.command('SCRIPT', 'LOAD', UNDO_SCRIPT);
  }

  const shapes = [
    { what: 'a mutex', shape: undefined },
    { what: "a semaphore's permit", shape: { kind: 'semaphore', limit: 3 } as const },
  ];
  it.each(shapes)(
    "$what: the token's next attempt, made behind the store's undo, keeps its grant",
    async ({ shape }) => {
      await warmUp(shape);
      const key = namer.names(uniqueKey('taken-back'));
      const { undos, next } = await attemptUndoThenNext(key, 'token|same', shape);
      expect(next).toMatchObject({ acquired: true });
      await expectNextAttemptHolds(key, 'token|same');
      expect(undos).toBe(1);
      expect(await node.release({ keys: [key], token: 'token|same', shape }, 10_000)).toBe(1);
    },
  );

  it('control: with no undo sent, an unacknowledged grant is taken back', async () => {
    await warmUp();
    const key = namer.names(uniqueKey('control'));
    servers.replica.pause();
    const before = undoScripts;
    try {
      await expect(node.acquire({ keys: [key], token: 'token|alone', ttl: 60_000 }, 10_000)).rejects.toBeInstanceOf(
        ReplicasNotAcknowledgedError,
      );
    } finally {
      servers.replica.resume();
    }
    expect(undosSince(before)).toBe(1);
    expect(await holdersOf(key)).toEqual([]);
  });

  it('after a SCRIPT FLUSH the attempt is sent again, behind the undo: its grant is still taken back', async () => {
    await warmUp();
    const key = namer.names(uniqueKey('resent'));
    await flushAcquireScripts();
    servers.replica.pause();
    const before = undoScripts;
    try {
      const attempt = node.acquire({ keys: [key], token: 'token|resent', ttl: 60_000 }, 10_000);
      const undone = node.undo([key], 'token|resent', 10_000);
      await expect(attempt).rejects.toBeInstanceOf(ReplicasNotAcknowledgedError);
      await undone;
    } finally {
      servers.replica.resume();
    }
    // Without the take-back the grant would stay for its 60 s; with it, the store's undo and the take-back ran.
    expect(await holdersOf(key)).toEqual([]);
    expect(undosSince(before)).toBe(2);
  });

  it("after a SCRIPT FLUSH, sent again behind the undo and the token's next attempt: that attempt's grant stays", async () => {
    await warmUp();
    const key = namer.names(uniqueKey('resent-next'));
    await flushAcquireScripts();
    // Both attempts are sent again in full, in their order, after the undo: the first grants, unacknowledged;
    // the next (the same token) renews that grant as its own. A take-back of the first would delete it.
    const { undos, next } = await attemptUndoThenNext(key, 'token|resent-next');
    expect(next).toMatchObject({ acquired: true });
    await expectNextAttemptHolds(key, 'token|resent-next');
    expect(undos).toBe(1);
    expect(await node.release({ keys: [key], token: 'token|resent-next' }, 10_000)).toBe(1);
  });

  it("a connection's first granting script goes in full: never answered NOSCRIPT and sent again behind later commands", async () => {
    const fresh = new RedisLockNode(servers.master.url, {
      label: 'nodes[fresh]',
      minReplicas: { replicas: 1, timeout: ACK_TIMEOUT_MS },
      order: new TokenOrder(),
    });
    try {
      await servers.master.command('SCRIPT', 'FLUSH');
      const before = await noScriptErrors();
      const key = namer.names(uniqueKey('fresh'));
      expect(await fresh.acquire({ keys: [key], token: 'token|fresh', ttl: 10_000 }, 10_000)).toMatchObject({
        acquired: true,
      });
      expect(await fresh.release({ keys: [key], token: 'token|fresh' }, 10_000)).toBe(1);
      expect(await noScriptErrors()).toBe(before);
    } finally {
      await fresh.close();
    }
  });

  /** How many commands the master has answered NOSCRIPT since it started (INFO errorstats). */
  async function noScriptErrors(): Promise<number> {
    const info = String(await servers.master.command('INFO', 'errorstats'));
    return Number(/errorstat_NOSCRIPT:count=(\d+)/.exec(info)?.[1] ?? 0);
  }
});

function noop(): void {}
