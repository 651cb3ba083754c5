// @Locked: runs a route handler or provider method holding a distributed lock on its key.
import { SetMetadata, UseInterceptors } from '@nestjs/common';
import { LockOptionsError } from '../errors';
import type { LockedKey } from '../keys/key-template';
import { LOCKED_METADATA } from '../lock.constants';
import { LockInterceptor } from '../interceptors/lock.interceptor';
import type { LockedOptions } from '../options/lock-options.interface';
import { createLockedMethod } from './locked-method';
import { type LockedMetadata, createLockedMetadata } from './locked-metadata';

/**
 * Runs the method holding a distributed lock on `key`.
 *
 * - Route handlers (HTTP, RPC, WebSocket, GraphQL): LockInterceptor locks before the handler and releases
 *   when its result settles; an Observable result holds the lock until it completes, errors or is
 *   unsubscribed. Templates read the request: `{params.id}`, `{query.x}`, `{body.a.b}`,
 *   `{headers.x-tenant}`, `{user.id}`, `{data.x}` (RPC / WebSocket payload, GraphQL args).
 * - Other provider methods (services, @Cron jobs, @OnEvent listeners): each call is locked until the
 *   returned promise settles; the method then always returns a Promise. Templates read the arguments:
 *   `{0}`, `{1.accountId}`.
 *
 * `key` may also be an array (all keys locked, all-or-none) or a function of the LockKeySource.
 * Templates are parsed here, once: a malformed one throws LockOptionsError while the class loads.
 * Every other metadata of the method (routes, guards, pipes, other interceptors, @Cron...) is kept, in
 * any decorator order.
 */
export function Locked(key: LockedKey, options?: LockedOptions): MethodDecorator {
  return (target: object, propertyKey: string | symbol, descriptor: PropertyDescriptor) => {
    const label = `${typeof target === 'function' ? target.name : target.constructor.name}.${String(propertyKey)}`;
    const metadata = parsedFor(label, key, options);
    if (typeof target === 'function') {
      throw new LockOptionsError('@Locked', label, 'an instance method of a provider (not a static method)');
    }
    const original: unknown = descriptor?.value;
    if (typeof original !== 'function') {
      throw new LockOptionsError('@Locked', label, 'a method (not a property or an accessor)');
    }
    if (Reflect.hasOwnMetadata(LOCKED_METADATA, original)) {
      throw new LockOptionsError('@Locked', label, 'one @Locked per method (pass an array to lock several keys)');
    }
    descriptor.value = createLockedMethod(original, metadata, label);
    SetMetadata(LOCKED_METADATA, metadata)(target, propertyKey, descriptor);
    UseInterceptors(LockInterceptor)(target, propertyKey, descriptor);
    return descriptor;
  };
}

/**
 * Parses @Locked's arguments as the decorator is applied (the class loads): a malformed template or option
 * names the method it is on, so it can be found in a large application without its stack.
 */
function parsedFor(label: string, key: LockedKey, options: LockedOptions | undefined): LockedMetadata {
  try {
    return createLockedMetadata(key, options);
  } catch (error) {
    if (!(error instanceof LockOptionsError)) throw error;
    throw new LockOptionsError(`${error.option} of ${label}`, error.value, error.expected);
  }
}
