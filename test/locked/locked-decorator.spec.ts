import {
  Header,
  HttpCode,
  Injectable,
  Post,
  SetMetadata,
  UseGuards,
  UseInterceptors,
  UsePipes,
  type CallHandler,
  type CanActivate,
  type ExecutionContext,
  type NestInterceptor,
  type PipeTransform,
} from '@nestjs/common';
import {
  GUARDS_METADATA,
  HEADERS_METADATA,
  HTTP_CODE_METADATA,
  INTERCEPTORS_METADATA,
  METHOD_METADATA,
  PATH_METADATA,
  PIPES_METADATA,
} from '@nestjs/common/constants';
import { LOCKED_METADATA, LOCKED_WRAPPED, LockOptionsError } from '../../lib';
import { Locked } from '../../lib/decorators';
import type { LockedMetadata } from '../../lib/decorators/locked-metadata';
import { LockInterceptor } from '../../lib/interceptors/lock.interceptor';

@Injectable()
class SomeGuard implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

@Injectable()
class SomePipe implements PipeTransform {
  transform(value: unknown): unknown {
    return value;
  }
}

@Injectable()
class SomeInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler) {
    return next.handle();
  }
}

/** Stands for decorators of other libraries (@OnEvent, @Cron...) that record metadata on the method. */
const Listens = (event: string) => SetMetadata('test:event', event);

class Orders {
  @Post('above')
  @HttpCode(202)
  @Header('x-kind', 'above')
  @UseGuards(SomeGuard)
  @UsePipes(SomePipe)
  @UseInterceptors(SomeInterceptor)
  @Listens('order.paid')
  @Locked('order:{params.id}')
  lockedBelowEverything(id: string, note: string) {
    return `${id} ${note}`;
  }

  @Locked('order:{params.id}')
  @Post('below')
  @HttpCode(202)
  @Header('x-kind', 'below')
  @UseGuards(SomeGuard)
  @UsePipes(SomePipe)
  @UseInterceptors(SomeInterceptor)
  @Listens('order.paid')
  lockedAboveEverything(id: string, note: string) {
    return `${id} ${note}`;
  }
}

describe('@Locked keeps the other metadata of the method, in any decorator order', () => {
  it.each(['lockedBelowEverything', 'lockedAboveEverything'] as const)('%s', (name) => {
    const method = Orders.prototype[name];
    const read = (key: string): unknown => Reflect.getMetadata(key, method);

    expect(read(PATH_METADATA)).toBe(name === 'lockedBelowEverything' ? 'above' : 'below');
    expect(read(METHOD_METADATA)).toBeDefined();
    expect(read(HTTP_CODE_METADATA)).toBe(202);
    expect(read(HEADERS_METADATA)).toEqual([
      { name: 'x-kind', value: name === 'lockedBelowEverything' ? 'above' : 'below' },
    ]);
    expect(read(GUARDS_METADATA)).toEqual([SomeGuard]);
    expect(read(PIPES_METADATA)).toEqual([SomePipe]);
    expect(read(INTERCEPTORS_METADATA)).toEqual(expect.arrayContaining([SomeInterceptor, LockInterceptor]));
    expect(read('test:event')).toBe('order.paid');
    expect((read(LOCKED_METADATA) as LockedMetadata).key.description).toBe('"order:{params.id}"');
    expect(read(LOCKED_WRAPPED)).toBeDefined();
    // The wrapper looks like the method to code that inspects it.
    expect(method.name).toBe(name);
    expect(method.length).toBe(2);
  });
});

describe('@Locked refuses, when the class is defined, what cannot work', () => {
  const define = (decorator: () => MethodDecorator) => () => {
    class Target {
      run() {
        return 'ran';
      }
    }
    const descriptor = Object.getOwnPropertyDescriptor(Target.prototype, 'run')!;
    decorator()(Target.prototype, 'run', descriptor);
  };

  it.each([
    ['an unclosed brace', () => Locked('order:{params.id'), /never closed/],
    ['an empty placeholder', () => Locked('order:{}'), /empty placeholder/],
    ['an unknown root', () => Locked('order:{request.id}'), /starts with "request"/],
    ['an empty key array', () => Locked([]), /at least one key template/],
    ['an unknown onBusy', () => Locked('job', { onBusy: 'later' as 'skip' }), /'onBusy of Target\.run': "later"/],
    // Spread from a config object, a typo slips past TypeScript: it must not be ignored.
    [
      'a misspelt option',
      () => Locked('job', { ...({ wiat: 0 } as object) }),
      /'wiat of Target\.run': 0.*one of the options: ttl, wait/,
    ],
  ])('%s', (_what, decorator, message) => {
    expect(define(decorator)).toThrow(LockOptionsError);
    expect(define(decorator)).toThrow(message);
    // It names the method it is on (before: only "'@Locked key'", found by its stack alone).
    expect(define(decorator)).toThrow(/^Invalid lock option '[^']* of Target\.run'/);
  });

  it('two @Locked on one method', () => {
    expect(() => {
      class Twice {
        @Locked('a')
        @Locked('b')
        run() {
          return 'ran';
        }
      }
      return Twice;
    }).toThrow(/one @Locked per method/);
  });

  it('a static method', () => {
    expect(() => {
      class Static {
        @Locked('a')
        static run() {
          return 'ran';
        }
      }
      return Static;
    }).toThrow(/not a static method/);
  });
});
