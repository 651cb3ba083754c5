import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import {
  bindLockedInstance,
  registerBootstrappingBinder,
  unregisterBootstrappingBinder,
  type LockedCallRunner,
  type LockedInstanceBinder,
} from './decorators/locked-method';
import type { LockedMetadata } from './decorators/locked-metadata';
import { isRouteHandler } from './decorators/route-handler';
import { LockNotAcquiredError, LockOptionsError } from './errors';
import { LOCK_OPTIONS } from './lock.constants';
import { LockMetadataAccessor } from './lock-metadata.accessor';
import type { ResolvedLockOptions } from './lock-options.interface';
import { resolveCallSettings } from './lock-options.resolver';
import { LockService } from './lock.service';
import { RetryAfterEstimator } from './retry-after.estimator';

/**
 * Finds every @Locked method of the application at startup, checks it, and binds the provider instances
 * that own such methods to this application's LockService (see decorators/locked-method.ts for why the
 * method itself was already replaced by @Locked).
 *
 * Checked at bootstrap (a LockOptionsError fails it): route handlers use request placeholders
 * (`{params.id}`) and other methods argument placeholders (`{0}`); the options are valid; and no @Locked
 * provider method lives in a request-scoped provider (each request would build an instance this
 * explorer never sees; such a method would be refused at every call, so the bootstrap refuses it once).
 * Singleton providers are supported, and transient ones for the instances Nest creates at startup.
 */
@Injectable()
export class LockExplorer implements OnModuleInit, LockedInstanceBinder {
  private readonly logger = new Logger(LockExplorer.name);
  private readonly checkedPrototypes = new WeakSet<object>();
  private readonly runner: LockedCallRunner = {
    run: (metadata, args, invoke) => this.runLocked(metadata, args, invoke),
  };

  constructor(
    private readonly discoveryService: DiscoveryService,
    private readonly metadataScanner: MetadataScanner,
    private readonly metadataAccessor: LockMetadataAccessor,
    private readonly lockService: LockService,
    @Inject(LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
    private readonly estimator: RetryAfterEstimator,
  ) {
    registerBootstrappingBinder(this);
  }

  onModuleInit(): void {
    try {
      this.bindInstances();
    } finally {
      unregisterBootstrappingBinder(this);
    }
  }

  /** Idempotent: checks each class once and binds the instances not bound yet. */
  bindInstances(): void {
    for (const wrapper of [...this.discoveryService.getControllers(), ...this.discoveryService.getProviders()]) {
      const prototype = prototypeOf(wrapper);
      if (!prototype) continue;
      const providerMethods = this.checkLockedMethods(wrapper, prototype);
      if (providerMethods === 0) continue;
      for (const instance of instancesOf(wrapper)) bindLockedInstance(instance, this.runner);
    }
  }

  /**
   * Runs one call of a @Locked provider method: locked until the returned promise settles. Its hold is
   * timed for the Retry-After estimate, and a busy lock is reported with that estimate and the call's wait.
   */
  private async runLocked(metadata: LockedMetadata, args: readonly unknown[], invoke: () => unknown): Promise<unknown> {
    const keys = metadata.key.build({ args });
    let holdEnded: (() => void) | undefined;
    try {
      return await this.lockService.withLock(
        keys,
        (lock) => {
          holdEnded = this.estimator.holdStarted(lock.keys, metadata, metadata.acquireOptions.minHold ?? this.options.minHold);
          return invoke();
        },
        metadata.acquireOptions,
      );
    } catch (error) {
      // Only a busy lock is skipped or re-described: the same error thrown by the method itself passes through.
      if (holdEnded || !(error instanceof LockNotAcquiredError)) throw error;
      if (metadata.onBusy === 'skip') {
        // One instance per tick runs a scheduled job: the others skipping is normal, hence debug.
        this.logger.debug(`Skipped a run of a @Locked method: ${error.summary}`);
        return undefined;
      }
      throw this.estimator.busyError(error, { site: metadata, wait: metadata.acquireOptions.wait ?? this.options.wait });
    } finally {
      holdEnded?.();
    }
  }

  /** Checks the @Locked methods of one class; returns how many are provider (non-route) methods. */
  private checkLockedMethods(wrapper: InstanceWrapper, prototype: object): number {
    let providerMethods = 0;
    const firstVisit = !this.checkedPrototypes.has(prototype);
    this.checkedPrototypes.add(prototype);
    for (const name of this.metadataScanner.getAllMethodNames(prototype)) {
      const method = (prototype as Record<string, Function>)[name];
      const metadata = this.metadataAccessor.getLockedMetadata(method);
      if (!metadata) continue;
      const routeHandler = isRouteHandler(method);
      const label = `${prototype.constructor.name}.${name}`;
      if (firstVisit) {
        this.checkKeyKind(metadata, routeHandler, label);
        this.checkOptions(metadata, label);
      }
      if (routeHandler) continue;
      providerMethods++;
      if (!wrapper.isDependencyTreeStatic()) {
        throw new LockOptionsError(
          '@Locked',
          label,
          'a method of a singleton or transient provider: this provider is request-scoped (or depends on one), ' +
            'so its instances are built per request and cannot be locked; move the method to a singleton service',
        );
      }
    }
    return providerMethods;
  }

  private checkKeyKind(metadata: LockedMetadata, routeHandler: boolean, label: string): void {
    if (routeHandler && metadata.key.kind === 'argument') {
      throw new LockOptionsError(
        `@Locked key of ${label}`,
        givenKey(metadata.key.description),
        'request placeholders on a route handler ({params.id}, {query.x}, {body.x}, {headers.x}, {user.id}, {data.x}), ' +
          'not argument placeholders ({0}): the lock is taken before the handler arguments exist',
      );
    }
    if (!routeHandler && metadata.key.kind === 'route') {
      throw new LockOptionsError(
        `@Locked key of ${label}`,
        givenKey(metadata.key.description),
        'argument placeholders on a provider method ({0}, {1.accountId}); request placeholders only work on route handlers',
      );
    }
  }

  /**
   * Options that need the module's (ttl, maxHold) or each other to be judged: the error names the method, as
   * the decorator's own checks do (trial 6: 'minHold' alone, in an app of many @Locked methods).
   */
  private checkOptions(metadata: LockedMetadata, label: string): void {
    try {
      resolveCallSettings(this.options, metadata.acquireOptions);
    } catch (error) {
      if (!(error instanceof LockOptionsError)) throw error;
      throw new LockOptionsError(`${error.option} of ${label}`, error.value, error.expected);
    }
  }
}

/** The prototype holding the class's methods: from the instance, or from the class before it exists. */
function prototypeOf(wrapper: InstanceWrapper): object | undefined {
  const instance: unknown = wrapper.instance;
  if (typeof instance === 'object' && instance !== null) {
    return (Object.getPrototypeOf(instance) as object | null) ?? undefined;
  }
  if (!wrapper.isNotMetatype && typeof wrapper.metatype === 'function') return wrapper.metatype.prototype as object;
  return undefined;
}

/** The instances a call can reach: the singleton, or the transient instances built at startup. */
function instancesOf(wrapper: InstanceWrapper): object[] {
  const candidates: unknown[] = [wrapper.instance];
  if (wrapper.isTransient) {
    candidates.push(...wrapper.getStaticTransientInstances().map((item): unknown => item?.instance));
  }
  return candidates.filter((item): item is object => typeof item === 'object' && item !== null);
}

/** The key as @Locked was given it (its description is the template as JSON), so an error quotes it once. */
function givenKey(description: string): unknown {
  try {
    return JSON.parse(description);
  } catch {
    return description;
  }
}
