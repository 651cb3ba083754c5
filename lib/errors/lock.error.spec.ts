import { HttpException } from '@nestjs/common';
import { inspect } from 'node:util';
import { InvalidLockKeyError } from './invalid-lock-key.error';
import { LockLostError } from './lock-lost.error';
import { LockNotAcquiredError } from './lock-not-acquired.error';
import { LockOptionsError } from './lock-options.error';
import { LockUnavailableError } from './lock-unavailable.error';

describe('lock errors as HttpExceptions', () => {
  it('each supplies its status and the body a client is told (not the developer message)', () => {
    const busy = new LockNotAcquiredError(['order:7'], 1500, 12.34, { wait: 0 });
    expect(busy).toBeInstanceOf(HttpException);
    expect(busy.getStatus()).toBe(409);
    expect(busy.getResponse()).toEqual({
      statusCode: 409,
      error: 'Conflict',
      code: 'LOCK_BUSY',
      message: 'Lock on "order:7" not acquired: held by another owner. Retry later.',
      keys: ['order:7'],
      retryAfterMs: 1500,
    });
    expect(busy.message).toBe(
      `Lock on "order:7" not acquired: held by another owner. Retry later, or set the 'wait' option to queue for it.`,
    );

    const down = new LockUnavailableError(['order:7'], 'connect ECONNREFUSED 127.0.0.1:6399');
    expect([down.getStatus(), down.getResponse()]).toEqual([
      503,
      {
        statusCode: 503,
        error: 'Service Unavailable',
        code: 'LOCK_UNAVAILABLE',
        message: 'Lock store unavailable for "order:7"; try again later.',
      },
    ]);
    expect(down.message).toContain('ECONNREFUSED 127.0.0.1:6399');

    const badKey = new InvalidLockKeyError('', 'it is empty');
    expect([badKey.getStatus(), badKey.getResponse()]).toEqual([
      400,
      { statusCode: 400, error: 'Bad Request', code: 'LOCK_INVALID_KEY', message: 'Invalid lock key "": it is empty.' },
    ]);

    const lost = new LockLostError(['order:7'], 'the lease expired');
    expect([lost.getStatus(), lost.getResponse()]).toEqual([
      500,
      {
        statusCode: 500,
        error: 'Internal Server Error',
        code: 'LOCK_LOST',
        message: 'The lock on "order:7" was lost while the request ran.',
      },
    ]);

    // A programming error: the client gets what Nest answers for any unknown error, not the option's value.
    const options = new LockOptionsError('ttl', 'redis://:secret@host', 'a number');
    expect([options.getStatus(), options.getResponse()]).toEqual([
      500,
      { statusCode: 500, message: 'Internal server error' },
    ]);
  });

  it("prints as a plain error: its own fields and cause, not HttpException's response, status or options", () => {
    const cause = new Error('connect ECONNREFUSED');
    const down = new LockUnavailableError(['order:7'], 'connect ECONNREFUSED', { cause });
    expect(Object.keys(down)).toEqual(['name', 'keys']);
    expect(JSON.stringify(down)).toBe('{"name":"LockUnavailableError","keys":["order:7"]}');
    // A copy of the client's error, never the error itself (see safe-cause.ts).
    expect(down.cause).toMatchObject({ name: 'Error', message: 'connect ECONNREFUSED' });
    expect(down.cause).not.toBe(cause);
    const printed = inspect(down);
    expect(printed).toMatch(
      /^LockUnavailableError: Lock store unavailable for "order:7": connect ECONNREFUSED\. Check that Redis is reachable\.\n/,
    );
    expect(printed).toContain("keys: [ 'order:7' ]");
    expect(printed).toContain('[cause]: Error: connect ECONNREFUSED');
    expect(printed).not.toMatch(/response|status|options|errorCode|statusCode/);

    const busy = new LockNotAcquiredError(['order:7'], 1500, 12.34, { wait: 0 });
    expect(Object.keys(busy).sort()).toEqual([
      'details',
      'keys',
      'name',
      'retryAfterMs',
      'summary',
      'wait',
      'waitedMs',
    ]);
    expect('cause' in busy).toBe(false);
    expect(inspect(busy)).not.toMatch(/response|statusCode|options/);
  });
});
