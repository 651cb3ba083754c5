// Finds and checks every @Locked method at startup, and runs provider-method calls under this application's locks.
import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { ApplicationConfig, DiscoveryService, MetadataScanner, ModulesContainer } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import {
  bindLockedInstance,
  registerBootstrappingBinder,
  unregisterBootstrappingBinder,
  type LockedCallRunner,
  type LockedInstanceBinder,
} from '../decorators/locked-method';
import type { LockedMetadata } from '../decorators/locked-metadata';
import { isRouteHandler } from '../decorators/route-handler';
import {
  argumentIndexProblem,
  declaredArity,
  httpRouteOf,
  isHttpRoute,
  modulePathOf,
  paramsWithoutRouteProblem,
  routeParamsProblem,
} from '.';
import { LockNotAcquiredError, LockOptionsError } from '../errors';
import { LOCK_OPTIONS, LOCKED_WRAPPED } from '../lock.constants';
import { LockMetadataAccessor } from '../decorators/lock-metadata.accessor';
import type { ResolvedLockOptions } from '../options/lock-options.interface';
import { resolveCallSettings } from '../options/call-settings';
import { LockService } from '../lock.service';
import { RetryAfterEstimator } from '../interceptors/retry-after.estimator';

/**
 * Finds every @Locked method of the application at startup, checks it, and binds the provider instances
 * that own such methods to this application's LockService (see decorators/locked-method.ts for why the
 * method itself was already replaced by @Locked).
 *
 * Checked at bootstrap (a LockOptionsError fails it): route handlers use request placeholders
 * (`{params.id}`) and other methods argument placeholders (`{0}`); a placeholder can be filled by what
 * the method declares (`{params.x}` names a parameter of each path of its HTTP route, and is not used on
 * a microservice, WebSocket or GraphQL handler, which has none; `{N}` is below the provider method's
 * parameter count, where that count is known; see discovery/placeholder-checks.ts); the options are
 * valid; and no @Locked provider method lives in a request-scoped provider (each request would build an
 * instance this explorer never sees; such a method would be refused at every call, so the bootstrap
 * refuses it once). Singleton providers are supported, and transient ones for the instances Nest creates
 * at startup.
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
    private readonly applicationConfig: ApplicationConfig,
    private readonly modulesContainer: ModulesContainer,
  ) {
    registerBootstrappingBinder(this);
  }

  onModuleInit(): void {
    try {
      this.bindInstances();
    } finally {
      unregisterBootstrappingBinder(this);
    }
    this.checkRouteParams();
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
          holdEnded = this.estimator.holdStarted(
            lock.keys,
            metadata,
            metadata.acquireOptions.minHold ?? this.options.minHold,
          );
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
      throw this.estimator.busyError(error, {
        site: metadata,
        wait: metadata.acquireOptions.wait ?? this.options.wait,
      });
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
        if (routeHandler && !isHttpRoute(method))
          this.refuse(metadata, label, paramsWithoutRouteProblem(metadata.key.placeholders));
        if (!routeHandler) this.checkArguments(metadata, prototype, name, label);
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
        'request placeholders on a route handler ({params.id}, ' +
          '{query.x}, {body.x}, {headers.x}, {user.id}, {data.x}), ' +
          'not argument placeholders ({0}): the lock is taken before the handler arguments exist',
      );
    }
    if (!routeHandler && metadata.key.kind === 'route') {
      throw new LockOptionsError(
        `@Locked key of ${label}`,
        givenKey(metadata.key.description),
        'argument placeholders on a provider method ({0}, ' +
          '{1.accountId}); request placeholders only work on route handlers',
      );
    }
  }

  /** `{N}` beyond the parameters the method declares (the method as written, under @Locked's wrapper). */
  private checkArguments(metadata: LockedMetadata, prototype: object, name: string, label: string): void {
    const method = (prototype as Record<string, Function>)[name];
    const original: unknown = Reflect.getMetadata(LOCKED_WRAPPED, method);
    const written = typeof original === 'function' ? original : method;
    const arity = declaredArity(written, Reflect.getMetadata('design:paramtypes', prototype, name));
    this.refuse(metadata, label, argumentIndexProblem(metadata.key.placeholders, label, arity));
  }

  /**
   * `{params.x}` of HTTP routes against their paths. At onModuleInit and not when a provider method called
   * during bootstrap binds instances early: the global prefix and versioning are set on the application
   * after the providers are built, and before app.init() runs this hook.
   */
  private checkRouteParams(): void {
    for (const wrapper of this.discoveryService.getControllers()) {
      const prototype = prototypeOf(wrapper);
      if (!prototype) continue;
      const modulePath = modulePathOf(wrapper.host?.metatype, this.modulesContainer.applicationId);
      for (const name of this.metadataScanner.getAllMethodNames(prototype)) {
        const method = (prototype as Record<string, Function>)[name];
        const metadata = this.metadataAccessor.getLockedMetadata(method);
        if (!metadata) continue;
        const route = httpRouteOf(prototype.constructor, method, modulePath, this.applicationConfig);
        if (route)
          this.refuse(
            metadata,
            `${prototype.constructor.name}.${name}`,
            routeParamsProblem(metadata.key.placeholders, route),
          );
      }
    }
  }

  /** Fails the bootstrap when a check found a problem (what a valid key is, in words). */
  private refuse(metadata: LockedMetadata, label: string, problem: string | undefined): void {
    if (problem !== undefined)
      throw new LockOptionsError(`@Locked key of ${label}`, givenKey(metadata.key.description), problem);
  }

  /**
   * Options that need the module's (ttl, maxHold) or each other to be judged: the error names the method, as
   * the decorator's own checks do ('minHold' alone says nothing in an app of many @Locked methods).
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
