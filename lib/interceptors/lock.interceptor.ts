// Takes a @Locked route handler's lock before it runs and releases it when its result settles, on every transport.
import {
  Injectable,
  Logger,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
  type OnModuleInit,
} from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { Observable, catchError, throwError, type Subscription } from 'rxjs';
import type { LockedMetadata } from '../decorators/locked-metadata';
import { LockNotAcquiredError, LockOptionsError } from '../errors';
import { ClientClosedRequestException, watchHttpClientGone } from './http-client-gone';
import { LOCK_OPTIONS } from '../lock.constants';
import type { Lock, LockKeySource } from '../lock.interface';
import { LockMetadataAccessor } from '../decorators/lock-metadata.accessor';
import type { ResolvedLockOptions } from '../options/lock-options.interface';
import { LockService } from '../lock.service';
import { answerSkippedAcknowledgement, logLockError, toTransportError } from './lock-transport-errors';
import { RetryAfterEstimator } from './retry-after.estimator';

interface Dependencies {
  readonly lockService: LockService;
  readonly metadataAccessor: LockMetadataAccessor;
  readonly estimator: RetryAfterEstimator;
  readonly options: ResolvedLockOptions;
}

/**
 * Locks a route handler marked with @Locked (HTTP, RPC, WebSocket or GraphQL) for as long as its result
 * is pending: the lock is taken before the handler runs, the handler runs with it as
 * LockService.current(), and it is released when the result completes or errors, or when the subscriber
 * goes away (an SSE client that disconnects). The handler's own values and errors pass through, except
 * the lock errors, which reach the client in its transport's shape (see lock-transport-errors.ts).
 */
@Injectable()
export class LockInterceptor implements NestInterceptor, OnModuleInit {
  private readonly logger = new Logger(LockInterceptor.name);
  private resolved: Dependencies | undefined;

  /**
   * Nest instantiates an interceptor named by @UseInterceptors in the module of each class that uses it,
   * so its dependencies are looked up across the application (LockModule imported anywhere) rather than
   * injected: a feature module using @Locked does not have to import LockModule itself.
   */
  constructor(private readonly moduleRef: ModuleRef) {}

  private get lockService(): LockService {
    return this.dependencies().lockService;
  }

  /**
   * Looks the dependencies up at bootstrap: an application with @Locked methods that never imported LockModule
   * fails to start with a LockOptionsError that says so, instead of answering every such request with a bare
   * 500 (Nest's UnknownElementException).
   */
  onModuleInit(): void {
    this.dependencies();
  }

  private dependencies(): Dependencies {
    if (this.resolved) return this.resolved;
    try {
      this.resolved = {
        lockService: this.moduleRef.get(LockService, { strict: false }),
        metadataAccessor: this.moduleRef.get(LockMetadataAccessor, { strict: false }),
        estimator: this.moduleRef.get(RetryAfterEstimator, { strict: false }),
        options: this.moduleRef.get<string, ResolvedLockOptions>(LOCK_OPTIONS, { strict: false }),
      };
    } catch {
      // Nest builds this interceptor for every class with a @Locked method (it is recorded on each such method,
      // routes and provider methods alike), so the message cannot name a route: it names what is missing.
      throw new LockOptionsError(
        '@Locked',
        'used in an application without LockModule',
        'an application that imports LockModule (LockModule.forRoot() ' +
          'or forRootAsync(), once, e.g. in the root module)',
      );
    }
    return this.resolved;
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const metadata = this.dependencies().metadataAccessor.getLockedMetadata(context.getHandler());
    if (!metadata) return next.handle();
    return this.lockedCall(metadata, context, next).pipe(
      catchError((error: unknown) => {
        logLockError(this.logger, error);
        return throwError(() => toTransportError(error, context));
      }),
    );
  }

  /**
   * Acquires when subscribed (not when intercept() is called), so that a subscriber that leaves while the
   * lock is awaited (an SSE client that disconnects) cancels the wait, and a lock obtained for nobody is
   * released at once instead of being renewed forever. An HTTP client that disconnects while its request
   * waits cancels the wait too (see http-client-gone.ts): Nest itself would run the request on.
   */
  private lockedCall(metadata: LockedMetadata, context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return new Observable<unknown>((subscriber) => {
      const subscriberGone = new AbortController();
      let clientLeft: ClientClosedRequestException | undefined;
      const stopWatching = watchHttpClientGone(context, () =>
        subscriberGone.abort((clientLeft = new ClientClosedRequestException())),
      );
      let inner: Subscription | undefined;
      this.acquire(metadata, lockKeySourceOf(context), subscriberGone.signal).then(
        (lock) => {
          // Once the handler may run it runs to its end, as Nest runs a request whose client left.
          stopWatching();
          if (!lock) {
            // onBusy 'skip': the handler is not run, the call resolves undefined (a WebSocket client gets its
            // acknowledgement answered with nothing, not left waiting).
            answerSkippedAcknowledgement(context);
            subscriber.next(undefined);
            subscriber.complete();
            return;
          }
          if (subscriber.closed) {
            void this.lockService.releaseQuietly(lock);
            return;
          }
          const { estimator, options } = this.dependencies();
          const holdEnded = estimator.holdStarted(
            lock.keys,
            metadata,
            metadata.acquireOptions.minHold ?? options.minHold,
          );
          const release = () => {
            holdEnded();
            return this.lockService.releaseQuietly(lock);
          };
          // Called and subscribed inside the lock's async context, so the handler, all it awaits, and the
          // callbacks of an Observable it returns (timers included) see `lock` as LockService.current().
          inner = this.lockService.runWithLock(lock, () =>
            holdUntilSettled(next.handle(), release).subscribe(subscriber),
          );
        },
        (error: unknown) => {
          stopWatching();
          if (clientLeft !== undefined && error === clientLeft) {
            // An HttpException: Nest's filters answer it (to nobody) without logging it as a failure, and
            // interceptors outside this one see the call fail (499), not succeed with an empty result.
            this.logger.debug(`Stopped waiting for ${metadata.key.description}: ${clientLeft.message}`);
          }
          subscriber.error(error);
        },
      );
      return () => {
        stopWatching();
        subscriberGone.abort();
        inner?.unsubscribe();
      };
    });
  }

  /** The lock, or undefined when the key is busy and `onBusy` is 'skip'. */
  private async acquire(
    metadata: LockedMetadata,
    source: LockKeySource,
    cancel: AbortSignal,
  ): Promise<Lock | undefined> {
    const keys = metadata.key.build(source);
    const own = metadata.acquireOptions.signal;
    const signal = own ? AbortSignal.any([own, cancel]) : cancel;
    try {
      return await this.lockService.acquire(keys, { ...metadata.acquireOptions, signal });
    } catch (error) {
      if (!(error instanceof LockNotAcquiredError)) throw error;
      if (metadata.onBusy === 'skip') {
        this.logger.debug(`Skipped: ${error.summary}`);
        return undefined;
      }
      const { estimator, options } = this.dependencies();
      throw estimator.busyError(error, { site: metadata, wait: metadata.acquireOptions.wait ?? options.wait });
    }
  }
}

/**
 * Mirrors `source` and calls `release` exactly once: on completion or error it waits for the release
 * before passing the outcome on (so the HTTP response is sent after the lock is free, and a client's next
 * request cannot find its own lock still held); on an early unsubscribe it releases in the background.
 */
function holdUntilSettled<T>(source: Observable<T>, release: () => Promise<void>): Observable<T> {
  return new Observable<T>((subscriber) => {
    let released: Promise<void> | undefined;
    const releaseOnce = (): Promise<void> => (released ??= release());
    const subscription = source.subscribe({
      next: (value) => subscriber.next(value),
      error: (error: unknown) => void releaseOnce().then(() => subscriber.error(error)),
      complete: () => void releaseOnce().then(() => subscriber.complete()),
    });
    return () => {
      subscription.unsubscribe();
      void releaseOnce();
    };
  });
}

interface RequestLike {
  params?: Record<string, unknown>;
  query?: Record<string, unknown>;
  body?: unknown;
  headers?: Record<string, unknown>;
  user?: unknown;
}

/**
 * What a route handler's key template reads, per transport (`getType()` is compared as a string so that
 * @nestjs/graphql need not be installed):
 * - http: the request's params, query, body, headers and user (`request.user`, set by auth guards);
 * - rpc: the message payload as `data`; ws: the message body as `data`;
 * - graphql: the field's arguments as `data`, and headers and user from the context's `req`.
 * `args` is always Nest's raw handler arguments (`context.getArgs()`).
 */
function lockKeySourceOf(context: ExecutionContext): LockKeySource {
  const args = context.getArgs();
  const type: string = context.getType();
  switch (type) {
    case 'http': {
      const request = context.switchToHttp().getRequest<RequestLike>();
      const { params, query, body, headers, user } = request;
      return { args, params, query, body, headers, user, context };
    }
    case 'rpc':
      return { args, data: context.switchToRpc().getData(), context };
    case 'ws':
      return { args, data: context.switchToWs().getData(), context };
    case 'graphql': {
      const graphqlContext = args[2] as { req?: RequestLike } | undefined;
      const request = graphqlContext?.req;
      return { args, data: args[1], headers: request?.headers, user: request?.user, context };
    }
    default:
      return { args, context };
  }
}
