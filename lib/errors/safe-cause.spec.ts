import { inspect } from 'node:util';
import { LockOptionsError } from './lock-options.error';
import { LockUnavailableError } from './lock-unavailable.error';
import { redactedText, safeCause, safeMessage } from './safe-cause';

const SECRET = 's3cr3t-pw';

function replyError(): Error {
  const error = new Error('WRONGPASS invalid username-password pair or user is disabled.');
  error.name = 'ReplyError';
  Object.assign(error, { command: { name: 'hello', args: ['3', 'AUTH', 'default', SECRET] }, code: 'WRONGPASS' });
  return error;
}

describe('safeCause', () => {
  it("keeps a client error's name, message, code and frames, and drops the command it sent", () => {
    const copy = safeCause(replyError()) as Error & { code?: string };
    expect(copy.name).toBe('ReplyError');
    expect(copy.message).toBe('WRONGPASS invalid username-password pair or user is disabled.');
    expect(copy.code).toBe('WRONGPASS');
    expect(copy.stack).toMatch(/^ReplyError: WRONGPASS[^\n]*\n\s+at /);
    expect(inspect(copy, { depth: Infinity })).not.toContain(SECRET);
  });

  it('copies a whole cause chain and the errors of an aggregate', () => {
    const inner = new AggregateError(
      [replyError(), new Error(`connect to redis://u:${SECRET}@h:1 failed`)],
      'all failed',
    );
    const outer = new Error('outer', { cause: inner });
    Object.assign(outer, { options: { password: SECRET } });
    const printed = inspect(safeCause(outer), { depth: Infinity });
    expect(printed).toContain('all failed');
    expect(printed).toContain('WRONGPASS');
    expect(printed).toContain('redis://u:***@h:1');
    expect(printed).not.toContain(SECRET);
  });

  it("keeps this library's own errors as they are", () => {
    const own = new LockUnavailableError(['k'], 'down');
    expect(safeCause(own)).toBe(own);
  });

  it('replaces a thrown object by a description of its type, and redacts a thrown string', () => {
    expect(safeCause({ password: SECRET })).toBe('a non-error value (object)');
    expect(safeCause(`AUTH default ${SECRET}`)).toBe('AUTH ***');
  });

  it('a lock error built over a client error shows no secret at any depth', () => {
    const error = new LockUnavailableError(['k'], 'acquire failed', { cause: replyError() });
    expect(inspect(error, { depth: Infinity })).not.toContain(SECRET);
    expect(JSON.stringify(error)).not.toContain(SECRET);
    expect(error.message).toContain('authentication failed');
  });
});

describe('redactedText', () => {
  it.each([
    [`redis://user:${SECRET}@host:6379/0`, 'redis://user:***@host:6379/0'],
    [`could not reach rediss://:${SECRET}@host:6380 in time`, 'could not reach rediss://:***@host:6380 in time'],
    [`HELLO 3 AUTH default ${SECRET}`, 'HELLO 3 AUTH ***'],
    [
      `ERR unknown command 'HELLO', with args beginning with: '3' 'AUTH' 'default' '${SECRET}'`,
      "ERR unknown command 'HELLO', with args beginning with: …",
    ],
    ['NOAUTH Authentication required.', 'NOAUTH Authentication required.'],
  ])('%s', (text, shown) => {
    expect(redactedText(text)).toBe(shown);
  });
});

describe('safeMessage', () => {
  it("says a command failed on a connection that is down without ioredis' advice about its own option", () => {
    const error = new Error(
      'Reached the max retries per request limit (which is 2). Refer to "maxRetriesPerRequest" option for details.',
    );
    expect(safeMessage(error)).toBe('not sent: the connection is down');
  });
});

describe('what lock errors show of what they are given', () => {
  it("a lock key that reads like a command's word is shown as given", () => {
    const busy = new LockUnavailableError(['auth', 'user auth flow', 'files:/srv/a@b'], 'acquire failed');
    expect(busy.message).toContain('"auth", "user auth flow", "files:/srv/a@b"');
  });

  it.each([
    ['default:s3cr3t-pw@host:6379', 'default:***@host:6379'],
    [':s3cr3t-pw@h:6379', ':***@h:6379'],
    ['redis//:s3cr3t-pw@host', 'redis//:***@host'],
  ])('an option value without a scheme, %s, is shown without its password', (given, shown) => {
    const error = new LockOptionsError('redis', given, 'a Redis URL');
    expect(error.message).toContain(JSON.stringify(shown));
    expect(inspect(error, { depth: Infinity, showHidden: true })).not.toContain(SECRET);
    expect(error.value).toBe(given);
  });
});
