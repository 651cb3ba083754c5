// LockTesting: puts a test's in-process locks in the conditions Redis produces: held elsewhere, lost, unavailable.
import { Inject, Injectable, type INestApplicationContext, type OnApplicationShutdown } from '@nestjs/common';
import { InvalidLockKeyError, LockOptionsError } from '../errors';
import { formatKeys } from '../errors/format-keys';
import { MADE_UNAVAILABLE } from '../errors/unavailable-details';
import { LockKeyNamer, normalizeKeys } from '../keys';
import { randomToken } from '../engine/lease/token';
import { LOCK_OPTIONS, LOCK_STORE } from '../lock.constants';
import type { ResolvedLockOptions } from '../options/lock-options.interface';
import { resolveCallSettings } from '../options/call-settings';
import { givenInstanceName } from '../options/module-options.resolver';
import { LockService } from '../lock.service';
import { leaseValue, parseLeaseValue } from '../observability/lease-owner';
import type { AcquireRequest, LockShape, LockStore } from '../stores/lock-store.interface';
import type { MemoryLockStore } from '../stores/memory/memory-lock.store';
import { ElsewhereHold } from './elsewhere-hold';
import { inProcessStore } from './in-process-only';
import type { HeldElsewhere, HoldElsewhereOptions } from './lock-testing.interface';

/** The holder holdElsewhere names when the test names none. */
const ANOTHER_INSTANCE = 'another-instance';

/** What holdElsewhere's options may name: anything else is a typo that would be ignored. */
const HOLD_OPTIONS: ReadonlySet<string> = new Set<keyof HoldElsewhereOptions>(['ttl', 'instance', 'limit', 'mode']);

/**
 * Puts an application's locks, on the in-process store, in the conditions a Redis deployment produces, for its
 * tests: a key held by another instance, a held lock lost, the store unreachable. It acts on the store and lets
 * the module's own machinery (waiting, wake-ups, renewals, loss, error mapping) answer, so the code under test
 * meets what it would meet on Redis. Refuses a module configured with `redis` or `nodes`.
 *
 * ```ts
 * const testing = LockTesting.from(app); // or moduleRef.get(LockTesting)
 * const held = await testing.holdElsewhere('account:42');
 * await request(app.getHttpServer()).post('/transfers').send(…).expect(409);
 * await held.release();
 * ```
 */
@Injectable()
export class LockTesting implements OnApplicationShutdown {
  private readonly namer: LockKeyNamer;
  private readonly holds = new Set<ElsewhereHold>();

  constructor(
    @Inject(LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
    @Inject(LOCK_STORE) private readonly store: LockStore,
    private readonly locks: LockService,
  ) {
    this.namer = new LockKeyNamer(options.keyPrefix);
  }

  /**
   * The LockTesting of an application or testing module; a LockOptionsError at once when its LockModule is
   * configured with Redis, or when it has none.
   */
  static from(app: INestApplicationContext): LockTesting {
    let testing: LockTesting;
    try {
      testing = app.get(LockTesting, { strict: false });
    } catch {
      throw new LockOptionsError(
        'LockTesting.from',
        'an application without LockModule',
        'an application or testing module that imports LockModule.forRoot() (without redis or nodes)',
      );
    }
    testing.inProcess('LockTesting.from');
    return testing;
  }

  /**
   * Makes the keys busy as if another instance held them: the application's acquire() waits and then throws
   * LockNotAcquiredError, tryAcquire() answers null, `@Locked` answers 409 or skips, and `inspect()` names
   * that instance. Held until `release()` (a waiter of the application is woken then), or for `ttl` ms.
   * All-or-none over several keys. A LockOptionsError when a key is already held.
   */
  async holdElsewhere(key: string | readonly string[], options: HoldElsewhereOptions = {}): Promise<HeldElsewhere> {
    const store = this.inProcess('holdElsewhere');
    const keys = normalizeKeys(key);
    const { instance, ttl, shape } = this.holdSettings(keys, options);
    const request: AcquireRequest = {
      keys: keys.map((name) => this.namer.names(name)),
      token: leaseValue(randomToken(), instance),
      ttl: ttl ?? this.options.ttl,
      shape,
      // One attempt: a writer that meets readers records no intent to wait.
      final: true,
    };
    const outcome = await store.acquire(request);
    if (!outcome.acquired) {
      throw new LockOptionsError(
        'key',
        key,
        `keys free when holdElsewhere is called: ${formatKeys(keys)} is held now (by the application, or by an ` +
          'earlier holdElsewhere not yet released); release it first',
      );
    }
    const hold = new ElsewhereHold(store, request, instance, outcome, ttl === undefined, (ended) =>
      this.holds.delete(ended),
    );
    this.holds.add(hold);
    return hold;
  }

  /**
   * Makes the application's locks on `key` lost, as when their lease is gone from Redis (expired while the
   * holder was paused, evicted, taken over): the lease is deleted from the store (the deletion is announced, so
   * callers waiting for the key get in) and the holder's renewal is sent now, which finds it gone. Resolves
   * once the holders know: `lock.signal` aborted with a LockLostError, `extend()` throws it, the `lost` event
   * was emitted, `release()` answers false. A LockOptionsError when the application holds no lock on `key`, or
   * while the store is unavailable (held locks are then lost when their validity ends, as with Redis down).
   */
  async loseHeld(key: string): Promise<void> {
    const store = this.inProcess('loseHeld');
    if (typeof key !== 'string') throw new InvalidLockKeyError(key, 'loseHeld takes one key, a string');
    const [name] = normalizeKeys(key);
    if (store.cutOff) {
      throw new LockOptionsError(
        'loseHeld',
        key,
        'a call while the store is available: with the store unavailable, held locks are lost when their validity ' +
          'ends, as with Redis down (wait for their ttl, or call makeAvailable() first)',
      );
    }
    const leases = this.locks.leasesOn(name);
    if (leases.length === 0) {
      throw new LockOptionsError(
        'key',
        key,
        'a key the application holds a lock on when loseHeld is called (call it while the code under test holds ' +
          'the lock, e.g. once it reached a point the test waits for)',
      );
    }
    const names = this.namer.names(name);
    for (const lease of leases) await store.release([names], lease.terms.value, 0, lease.terms.shape);
    await Promise.all(leases.map((lease) => lease.renewNow()));
  }

  /**
   * Makes the store unreachable for the application, as Redis down: every call rejects with
   * LockUnavailableError (`@Locked` routes answer 503, the health indicator reports it down), renewals fail,
   * and held locks are lost when their validity ends (their ttl after the last renewal). Leases keep expiring
   * meanwhile. Keys held with holdElsewhere stand for other instances, whose connection is not cut.
   */
  makeUnavailable(): void {
    const own = this.options.instance;
    this.inProcess('makeUnavailable').setOutage({
      detail: MADE_UNAVAILABLE,
      reaches: (value) => parseLeaseValue(value).instance !== own,
    });
  }

  /** Makes the store answer the application again (see makeUnavailable). */
  makeAvailable(): void {
    this.inProcess('makeAvailable').setOutage(undefined);
  }

  /** Renewals of keys held elsewhere stop: the store is closing with the application. */
  onApplicationShutdown(): void {
    for (const hold of [...this.holds]) hold.end();
  }

  private inProcess(call: string): MemoryLockStore {
    return inProcessStore(this.store, this.options, call);
  }

  /** The options of holdElsewhere, checked as AcquireOptions are. */
  private holdSettings(
    keys: readonly string[],
    options: HoldElsewhereOptions,
  ): { instance: string; ttl: number | undefined; shape: LockShape | undefined } {
    if (typeof options !== 'object' || options === null || Array.isArray(options)) {
      throw new LockOptionsError('options', options, 'an object of HoldElsewhereOptions');
    }
    for (const option of Object.keys(options)) {
      if (!HOLD_OPTIONS.has(option)) {
        throw new LockOptionsError(
          option,
          (options as Record<string, unknown>)[option],
          `one of the options: ${[...HOLD_OPTIONS].join(', ')}`,
        );
      }
    }
    const settings = resolveCallSettings(this.options, { ttl: options.ttl, limit: options.limit, mode: options.mode });
    if (settings.shape && keys.length > 1) {
      const [option, value] = settings.shape.kind === 'semaphore' ? ['limit', settings.shape.limit] : ['mode', 'read'];
      throw new LockOptionsError(option, value, 'one key per call: `limit` and `mode` apply to a single key');
    }
    return {
      instance: this.holderName(options.instance),
      ttl: options.ttl === undefined ? undefined : settings.ttl,
      shape: settings.shape,
    };
  }

  private holderName(instance: unknown): string {
    if (instance === undefined) return ANOTHER_INSTANCE;
    const name = givenInstanceName(instance);
    if (name === this.options.instance) {
      throw new LockOptionsError(
        'instance',
        name,
        "another instance's name than the application's own (the module's `instance`)",
      );
    }
    return name;
  }
}
