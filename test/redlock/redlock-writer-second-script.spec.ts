import { setTimeout as sleep } from 'node:timers/promises';
import { LockKeyNamer } from '../../lib/keys';
import { RedisLockNode } from '../../lib/stores/redis/redis-lock-node';
import { TokenOrder } from '../../lib/stores/redlock/token-order';
import { CommandTimeoutError } from '../../lib/errors/command-timeout.error';
import { rejectionOf } from '../core/helpers/timing';
import type { LockScript } from '../../lib/stores/clients/lock-script';
import { type RedisProcess, startRedis } from '../support/redis-server';
import { uniqueKey } from '../support/lock-app';

/**
 * A writer's plain attempt on a node where readers hold the key takes two scripts (ACQUIRE_SCRIPT answers
 * -3, then WRITE_ACQUIRE_SCRIPT). The Redlock store fires the undo (or release, or withdrawal) of an attempt
 * at nodes that have not answered yet, counting on each connection to run it after the attempt: true of the
 * first script, not of the second, which then granted the writer after its own undo (the readers gone), or
 * recorded its intent after its withdrawal, left on the node for a whole ttl and announced to nobody (10 s in
 * semaphore.spec's Redlock row; readers asleep until such leftovers expired in the 3-process history run).
 * A Redlock node keeps a token's commands in order (TokenOrder). The second script is
 * held at a gate on the node's client until the commands under test have been made, so the order of sends
 * is fixed whatever the timing.
 */
describe('Redlock node: the commands of a token and its writer second script', () => {
  let server: RedisProcess;
  let node: RedisLockNode;
  const namer = new LockKeyNamer('lock:');
  const reader = { kind: 'read' } as const;
  /** Second scripts (WRITE_ACQUIRE) sent so far. */
  let secondScripts = 0;
  /** First scripts of plain attempts (ACQUIRE) sent so far. */
  let firstScripts = 0;
  /** When set, the answer of every first script reaches the node this much later (held in the client). */
  let firstScriptAnswerDelayMs = 0;
  /** Set by holdSecondScript(): the next second script waits for `open`, once it is `reached`. */
  let gate: { arrived: () => void; opened: Promise<void> } | undefined;

  /** A Redlock node on `server` whose second scripts stop at the gate (see holdSecondScript). */
  function gatedNode(label: string): RedisLockNode {
    const gated = new RedisLockNode(server.url, { label, order: new TokenOrder() });
    type RunScript = (script: LockScript, ...rest: unknown[]) => Promise<unknown>;
    const client = (gated as unknown as { client: { runScript: RunScript } }).client;
    const runScript = client.runScript.bind(client);
    client.runScript = (script, ...rest) => {
      if (script.name === 'nestLockAcquire') {
        firstScripts++;
        const delay = firstScriptAnswerDelayMs;
        if (delay > 0) return runScript(script, ...rest).then((answer) => sleep(delay).then(() => answer));
      }
      if (script.name !== 'nestLockWriteAcquire') return runScript(script, ...rest);
      secondScripts++;
      const held = gate;
      gate = undefined;
      if (!held) return runScript(script, ...rest);
      held.arrived();
      return held.opened.then(() => runScript(script, ...rest));
    };
    return gated;
  }

  beforeAll(async () => {
    server = await startRedis();
    node = gatedNode('nodes[0]');
  });
  afterAll(async () => {
    await node?.close();
    await server?.stop();
  });

  /** Holds the next second script back: `reached` once the attempt's first script answered -3. */
  function holdSecondScript(): { reached: Promise<void>; open: () => void } {
    let arrived!: () => void;
    let open!: () => void;
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    const opened = new Promise<void>((resolve) => (open = resolve));
    gate = { arrived, opened };
    return { reached, open };
  }

  /**
   * A key held by one reader, and a writer's attempt whose second script is held back (on `on`, with
   * `timeoutMs` for each of the attempt's scripts).
   */
  async function writerMeetingReader(
    label: string,
    { on = node, timeoutMs = 1_000 }: { on?: RedisLockNode; timeoutMs?: number } = {},
  ): Promise<{
    key: ReturnType<LockKeyNamer['names']>;
    attempt: ReturnType<RedisLockNode['acquire']>;
    open: () => void;
  }> {
    const key = namer.names(uniqueKey(label));
    await on.acquire({ keys: [key], token: 'reader|a', ttl: 10_000, shape: reader }, 1_000);
    const second = holdSecondScript();
    const attempt = on.acquire({ keys: [key], token: 'writer|b', ttl: 10_000 }, timeoutMs);
    await second.reached;
    return { key, attempt, open: second.open };
  }

  it('an undo made while the first script is unanswered goes out at once, and no second script follows', async () => {
    const key = namer.names(uniqueKey('superseded'));
    await node.acquire({ keys: [key], token: 'reader|a', ttl: 10_000, shape: reader }, 1_000);
    const before = secondScripts;
    // As the store does for a node still silent at its verdict: the attempt, the reader gone, then the undo.
    const attempt = node.acquire({ keys: [key], token: 'writer|b', ttl: 10_000 }, 1_000);
    const released = node.release({ keys: [key], token: 'reader|a', shape: reader }, 1_000);
    const undone = node.undo([key], 'writer|b', 1_000);
    await expect(attempt).resolves.toMatchObject({ acquired: false, holder: '' });
    await Promise.all([released, undone]);
    expect(secondScripts).toBe(before);
    // Before: the second script ran after the undo and granted the writer (the reader gone): EXISTS 1.
    expect(await server.command('EXISTS', key.lockKey)).toBe(0);
    expect(await server.command('EXISTS', key.writerKey)).toBe(0);
  });

  it('an undo made while the second script is in flight runs after it: no writer lease is left', async () => {
    const { key, attempt, open } = await writerMeetingReader('chained-undo');
    await node.release({ keys: [key], token: 'reader|a', shape: reader }, 1_000);
    const undone = node.undo([key], 'writer|b', 1_000);
    open();
    await expect(attempt).resolves.toMatchObject({ acquired: true });
    await undone;
    expect(await server.command('EXISTS', key.lockKey)).toBe(0);
  });

  it("the token's next attempt waits for the undo chained before it: its grant survives (else two holders)", async () => {
    const { key, attempt, open } = await writerMeetingReader('chained-next');
    await node.release({ keys: [key], token: 'reader|a', shape: reader }, 1_000);
    const undone = node.undo([key], 'writer|b', 1_000);
    const next = node.acquire({ keys: [key], token: 'writer|b', ttl: 10_000 }, 1_000);
    open();
    await Promise.all([attempt, undone]);
    await expect(next).resolves.toMatchObject({ acquired: true });
    expect(await server.command('GET', key.lockKey)).toBe('writer|b');
  });

  it('a withdrawal made while the second script is in flight runs after it: no intent is left', async () => {
    const { key, attempt, open } = await writerMeetingReader('chained-withdraw');
    const withdrawn = node.withdraw(key, 'writer|b', 1_000, { announce: true });
    open();
    await expect(attempt).resolves.toMatchObject({ acquired: false, queued: true });
    await withdrawn;
    expect(await server.command('EXISTS', key.writerKey)).toBe(0);
  });

  it("a late answer's conditional withdrawal, made before the next attempt, leaves that attempt's intent", async () => {
    const { key, attempt, open } = await writerMeetingReader('late-withdraw');
    // The store's busy verdict came from other nodes: undo, the withdrawal of what this late answer may record,
    // then the waiter's next attempt, in that order.
    const undone = node.undo([key], 'writer|b', 1_000);
    const withdrawn = node.withdrawIfRecorded(
      key,
      'writer|b',
      1_000,
      attempt.then((answer) => !answer.acquired && answer.queued === true),
      'writer|b|withdrawn|late',
    );
    const next = node.acquire({ keys: [key], token: 'writer|b', ttl: 10_000 }, 1_000);
    open();
    await expect(attempt).resolves.toMatchObject({ acquired: false, queued: true });
    await expect(next).resolves.toMatchObject({ acquired: false, queued: true });
    await Promise.all([undone, withdrawn]);
    expect(await server.command('EXISTS', key.writerKey)).toBe(1);
  });

  it.each(['before', 'after'])(
    'close(): an undo chained behind a second script in flight, made %s close() began, still goes out',
    async (when) => {
      const closing = gatedNode(`nodes[close-${when}]`);
      const { key, attempt, open } = await writerMeetingReader(`close-${when}`, { on: closing, timeoutMs: 5_000 });
      await closing.release({ keys: [key], token: 'reader|a', shape: reader }, 5_000);
      // The second script goes out to a frozen server, so it is still unanswered when close() is called.
      server.pause();
      let closed: Promise<void> | undefined;
      let undone: Promise<void> | undefined;
      try {
        if (when === 'before') undone = closing.undo([key], 'writer|b', 5_000);
        open();
        await sleep(50);
        closed = closing.close();
        if (when === 'after') undone = closing.undo([key], 'writer|b', 5_000);
        await sleep(50);
        server.resume();
        await expect(attempt).resolves.toMatchObject({ acquired: true });
        await undone;
        await closed;
      } finally {
        server.resume();
      }
      // Before: the undo, chained behind the second script, was refused once close() had begun: the writer's
      // lease stayed for its 10 s. New work is refused all along.
      expect(await server.command('EXISTS', key.lockKey)).toBe(0);
      expect(() => closing.acquire({ keys: [key], token: 'writer|c', ttl: 10_000 }, 5_000)).toThrow(/closed/);
    },
  );

  it("close(): a late answer's withdrawal, made after close() began, still goes out: no intent is left", async () => {
    const closing = gatedNode('nodes[close-withdraw]');
    const { key, attempt, open } = await writerMeetingReader('close-withdraw', { on: closing, timeoutMs: 5_000 });
    server.pause();
    let closed: Promise<void> | undefined;
    let withdrawn: Promise<void> | undefined;
    try {
      open();
      await sleep(50);
      closed = closing.close();
      // The reader still holds the key: the second script records the writer's intent, which the store's busy
      // verdict (taken elsewhere) withdraws once this late answer says it was recorded.
      const recorded = attempt.then((answer) => !answer.acquired && answer.queued === true);
      withdrawn = closing.withdrawIfRecorded(key, 'writer|b', 5_000, recorded, 'writer|b|withdrawn|late');
      await sleep(50);
      server.resume();
      await expect(attempt).resolves.toMatchObject({ acquired: false, queued: true });
      await withdrawn;
      await closed;
    } finally {
      server.resume();
    }
    expect(await server.command('EXISTS', key.writerKey)).toBe(0);
    await server.command('DEL', key.lockKey, key.permitsKey);
  });

  it("on a node frozen behind a second script, the token's next attempt times out on its own timeout, and is never sent", async () => {
    // The second script has 2.5 s to answer, the undo behind it 0.5 s, the next attempt 1 s.
    const { key, attempt, open } = await writerMeetingReader('frozen-next', { timeoutMs: 2_500 });
    await node.release({ keys: [key], token: 'reader|a', shape: reader }, 1_000);
    server.pause();
    try {
      open();
      await sleep(50);
      // The second script is out, unanswered; the store's undo and the token's next attempt queue behind it.
      const undone = node.undo([key], 'writer|b', 500);
      const before = firstScripts;
      const calledAt = performance.now();
      const next = node.acquire({ keys: [key], token: 'writer|b', ttl: 10_000 }, 1_000);
      const outcomes = Promise.all([attempt, undone].map((each) => rejectionOf(each)));
      // Before: the next attempt went out once the second script and the undo had timed out (3 s) and failed
      // after its own timeout (4 s in all). Now it fails on its own timeout, from the call.
      expect(await rejectionOf(next)).toBeInstanceOf(CommandTimeoutError);
      expect(performance.now() - calledAt).toBeLessThan(2_000);
      for (const error of await outcomes) expect(error).toBeInstanceOf(CommandTimeoutError);
      // The chain has reached it (the undo timed out): expired, it was not sent.
      await sleep(100);
      expect(firstScripts).toBe(before);
    } finally {
      server.resume();
    }
    // The frozen server then runs the second script (granted: the reader left) and the undo after it.
    await node.exists(key, 5_000);
    expect(await server.command('EXISTS', key.lockKey)).toBe(0);
  });

  it('a chained attempt sent before its deadline gives its real answer, even one that comes after that deadline', async () => {
    const { key, attempt, open } = await writerMeetingReader('late-real-answer');
    // Chained behind the second script, with 1 s to wait there; the chain clears at once, and the attempt's own
    // answer (readers still in: the intent renewed, queued) then reaches the node 1.5 s later.
    const next = node.acquire({ keys: [key], token: 'writer|b', ttl: 10_000 }, 1_000);
    firstScriptAnswerDelayMs = 1_500;
    try {
      open();
      await expect(attempt).resolves.toMatchObject({ acquired: false, queued: true });
      // Before (a deadline over the whole attempt): CommandTimeoutError at 1 s, and the store, told nothing was
      // recorded, would withdraw nothing: an intent left for a writer ttl.
      await expect(next).resolves.toMatchObject({ acquired: false, queued: true });
    } finally {
      firstScriptAnswerDelayMs = 0;
    }
    await node.withdraw(key, 'writer|b', 1_000, { announce: true });
    await node.release({ keys: [key], token: 'reader|a', shape: reader }, 1_000);
    expect(await server.command('EXISTS', key.writerKey)).toBe(0);
  });
});
