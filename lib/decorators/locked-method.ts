// The wrapper @Locked puts in place of a provider method, and its binding to the LockService of its application.
import { LockOptionsError } from '../errors';
import { LOCKED_WRAPPED } from '../lock.constants';
import type { LockedMetadata } from './locked-metadata';
import { isRouteHandler } from './route-handler';

/**
 * Provider methods under @Locked (services, @Cron jobs, @OnEvent listeners...).
 *
 * Why the method is replaced when the decorator is applied, and not later by the explorer: other
 * explorers keep a reference to the method at their own onModuleInit (ScheduleModule, which is global
 * and so initialised before a non-global LockModule, stores `instance[method]` for @Cron). A method
 * swapped afterwards would never be called by them. So @Locked installs this wrapper on the prototype
 * right away, and the wrapper finds its LockService at call time: LockExplorer binds every provider
 * instance of its application to a runner (instances, not classes, so two applications in one process
 * each use their own LockService).
 */

/** Runs one call of a provider's @Locked method under the lock (LockExplorer's implementation). */
export interface LockedCallRunner {
  run(metadata: LockedMetadata, args: readonly unknown[], invoke: () => unknown): Promise<unknown>;
}

/** An explorer whose application is still bootstrapping: can bind its instances on demand. */
export interface LockedInstanceBinder {
  bindInstances(): void;
}

const runners = new WeakMap<object, LockedCallRunner>();
const bootstrapping = new Set<LockedInstanceBinder>();

/** Binds a provider instance to the runner of its application (the first binding wins). */
export function bindLockedInstance(instance: object, runner: LockedCallRunner): void {
  if (!runners.has(instance)) runners.set(instance, runner);
}

/**
 * Lets a @Locked method called during bootstrap, before LockExplorer's onModuleInit (e.g. from another
 * module's onModuleInit: the order of modules is not under our control), bind its instance on demand.
 */
export function registerBootstrappingBinder(binder: LockedInstanceBinder): void {
  bootstrapping.add(binder);
}

export function unregisterBootstrappingBinder(binder: LockedInstanceBinder): void {
  bootstrapping.delete(binder);
}

/**
 * The function @Locked puts in place of `original`. Route handlers pass straight through (LockInterceptor
 * locks them, so each call is locked exactly once); other calls run through the instance's runner. The
 * wrapper returns a Promise (acquisition is asynchronous), also when `original` is synchronous.
 */
export function createLockedMethod(original: Function, metadata: LockedMetadata, label: string): Function {
  let routeHandler: boolean | undefined;
  const lockedMethod = function (this: unknown, ...args: unknown[]): unknown {
    // Decided at the first call: decorators above @Locked (e.g. @Get) are applied after it.
    routeHandler ??= isRouteHandler(lockedMethod);
    if (routeHandler) return original.apply(this, args);
    try {
      const runner = runnerFor(this);
      if (!runner) {
        throw new LockOptionsError(
          '@Locked',
          label,
          'a method of a provider instance created by Nest in an application that imports LockModule ' +
            '(instances made with `new` or ModuleRef.create are not locked, and are refused rather than run unlocked)',
        );
      }
      return runner.run(metadata, args, () => original.apply(this, args));
    } catch (error) {
      return Promise.reject(error);
    }
  };
  Object.defineProperty(lockedMethod, 'name', { value: original.name, configurable: true });
  Object.defineProperty(lockedMethod, 'length', { value: original.length, configurable: true });
  // Decorators below @Locked already stored their metadata (routes, guards, @Cron...) on `original`.
  for (const key of Reflect.getOwnMetadataKeys(original)) {
    Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, original), lockedMethod);
  }
  Reflect.defineMetadata(LOCKED_WRAPPED, original, lockedMethod);
  return lockedMethod;
}

function runnerFor(instance: unknown): LockedCallRunner | undefined {
  if ((typeof instance !== 'object' && typeof instance !== 'function') || instance === null) return undefined;
  let runner = runners.get(instance);
  if (!runner && bootstrapping.size > 0) {
    for (const binder of [...bootstrapping]) binder.bindInstances();
    runner = runners.get(instance);
  }
  return runner;
}
