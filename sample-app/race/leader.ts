/**
 * `npm run sample:leader`: the ledger auditor (a @Leader job, src/ledger/ledger-auditor.ts) on 4 instances
 * sharing one Redis. One instance audits at a time; the demo takes the leader away three ways and shows who
 * takes over, and when:
 * - a graceful stop (SIGTERM: the app resigns at shutdown): the next leader within a round trip or so;
 * - a crash (SIGKILL): nobody releases, so the next leader after the lease runs out (about its ttl, 2 s);
 * - a freeze (SIGSTOP) past the lease: replaced the same way; thawed (SIGCONT), the old leader finds its
 *   term's signal aborted and stops without auditing again.
 * Times are taken from the instances' log lines as they arrive. Exits 1 when a hand-over does not happen, or
 * when a deposed leader audits after its successor was elected.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { EmbeddedRedisServer, findFreePort, RedisServerNotFoundError } from '../src/config/embedded-redis-server';
import { AppInstance } from './app-instance';

const INSTANCES = 4;
const AUDIT_EVERY_MS = 250;
/** How long a hand-over may take before the demo calls it failed (the lease is 2 s). */
const HANDOVER_LIMIT_MS = 15_000;

const ELECTED = /Ledger auditor is instance (.+) \(term (\d+)\)/;
const AUDIT = /Ledger audit \(term (\d+)\)/;

interface Election {
  readonly instance: AppInstance;
  readonly term: number;
  readonly at: number;
}

function elections(instances: readonly AppInstance[]): Election[] {
  const found: Election[] = [];
  for (const instance of instances) {
    for (const line of instance.lines) {
      const match = ELECTED.exec(line.text);
      if (match) found.push({ instance, term: Number(match[2]), at: line.at });
    }
  }
  return found.sort((one, two) => one.term - two.term);
}

async function nextElection(instances: readonly AppInstance[], after: number): Promise<Election> {
  const deadline = Date.now() + HANDOVER_LIMIT_MS;
  for (;;) {
    const next = elections(instances).find((election) => election.term > after);
    if (next) return next;
    if (Date.now() > deadline) throw new Error(`no instance took over within ${HANDOVER_LIMIT_MS} ms`);
    await sleep(10);
  }
}

/** Audit lines of `term` received after `since`. */
function auditsOf(instance: AppInstance, term: number, since: number): number {
  return instance.lines.filter((line) => line.at > since && Number(AUDIT.exec(line.text)?.[1]) === term).length;
}

async function main(): Promise<number> {
  let redis: EmbeddedRedisServer;
  try {
    redis = await EmbeddedRedisServer.start();
  } catch (error) {
    if (error instanceof RedisServerNotFoundError) {
      console.error(`The leader demo needs a real Redis shared by its instances: ${error.message}.`);
      return 1;
    }
    throw error;
  }
  const instances: AppInstance[] = [];
  try {
    console.log(
      `redis-server on ${redis.url}; starting ${INSTANCES} instances of the bank (ledger audit every ${AUDIT_EVERY_MS} ms)`,
    );
    for (let index = 0; index < INSTANCES; index++) {
      instances.push(
        await AppInstance.start({
          port: await findFreePort(),
          redisUrl: redis.url,
          locks: true,
          env: { LEDGER_AUDIT_MS: String(AUDIT_EVERY_MS) },
        }),
      );
    }
    let leader = await nextElection(instances, 0);
    const portOf = (election: Election): string => `:${election.instance.port}`;
    console.log(`leader: instance ${portOf(leader)} (term ${leader.term})`);
    const rows: string[] = [];
    let ok = true;

    await sleep(1_000);
    const stoppedAt = Date.now();
    await leader.instance.stop();
    let next = await nextElection(instances, leader.term);
    rows.push(
      `graceful stop (SIGTERM) of ${portOf(leader)}: ${portOf(next)} leads (term ${next.term}) ${next.at - stoppedAt} ms later`,
    );
    leader = next;

    await sleep(1_000);
    const killedAt = Date.now();
    leader.instance.signal('SIGKILL');
    next = await nextElection(instances, leader.term);
    rows.push(
      `crash (SIGKILL) of ${portOf(leader)}: ${portOf(next)} leads (term ${next.term}) ${next.at - killedAt} ms later`,
    );
    leader = next;

    await sleep(1_000);
    const frozenAt = Date.now();
    leader.instance.signal('SIGSTOP');
    next = await nextElection(instances, leader.term);
    rows.push(
      `freeze (SIGSTOP) of ${portOf(leader)}: ${portOf(next)} leads (term ${next.term}) ${next.at - frozenAt} ms later`,
    );
    await sleep(500);
    const thawedAt = Date.now();
    leader.instance.signal('SIGCONT');
    await sleep(1_000);
    const lateAudits = auditsOf(leader.instance, leader.term, thawedAt);
    const stopped = leader.instance.lines.some(
      (line) => line.at >= thawedAt && line.text.includes(`stops (term ${leader.term})`),
    );
    rows.push(
      `thawed (SIGCONT) ${portOf(leader)}: ${lateAudits} audits of its old term afterwards; ` +
        (stopped ? 'it read its term over and stopped' : 'it did not say it stopped'),
    );
    if (lateAudits > 0 || !stopped) ok = false;
    for (const row of rows) console.log(`  ${row}`);
    const terms = elections(instances).map((election) => `${election.term} ${portOf(election)}`);
    console.log(`terms: ${terms.join(', ')}`);
    if (!ok) {
      console.error('FAIL: a deposed leader went on auditing');
      return 1;
    }
    console.log('OK: one auditor at a time, and each loss of the leader was taken over.');
    return 0;
  } finally {
    await Promise.all(instances.map((instance) => instance.stop()));
    await redis.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
