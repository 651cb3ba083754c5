/** @Leader: a provider method run while this instance leads a named leadership. */
import { LockOptionsError } from '../errors';
import type { LeaderOptions } from '../options/leader-options';
import { createLeaderMetadata, LEADER_METADATA } from './leader-metadata';

/**
 * Runs the method while this instance leads leadership `name`, from application bootstrap to shutdown, as
 * `LockService.lead(name, fn, options)` does: the method receives the LeaderTerm, should return once
 * `term.signal` aborts, and when it returns or throws (logged) the instance resigns and campaigns again.
 *
 * The method must belong to a singleton provider, and a name may be led by one method per application: both
 * are checked at bootstrap (LockOptionsError). A malformed name or option fails as the class loads.
 */
export function Leader(name: string, options?: LeaderOptions): MethodDecorator {
  return (target: object, propertyKey: string | symbol, descriptor: PropertyDescriptor) => {
    const label = `${typeof target === 'function' ? target.name : target.constructor.name}.${String(propertyKey)}`;
    const metadata = createLeaderMetadata(name, options, label);
    if (typeof target === 'function') {
      throw new LockOptionsError('@Leader', label, 'an instance method of a provider (not a static method)');
    }
    const method: unknown = descriptor?.value;
    if (typeof method !== 'function') {
      throw new LockOptionsError('@Leader', label, 'a method (not a property or an accessor)');
    }
    if (Reflect.hasOwnMetadata(LEADER_METADATA, method)) {
      throw new LockOptionsError('@Leader', label, 'one @Leader per method');
    }
    Reflect.defineMetadata(LEADER_METADATA, metadata, method);
    return descriptor;
  };
}
