// Spec: a ScriptCommand's bytes are ioredis' own, EVAL on a socket's first use and EVALSHA after.
import { Command } from 'ioredis';
import { ScriptCommand, type ScriptsSent } from './script-command';
import { lockScript } from '../lock-script';

const SCRIPT = lockScript('specScript', 'return KEYS[1]');
const OTHER = lockScript('specOther', 'return ARGV[1]');
const MULTIBYTE = lockScript('specMultibyte', '-- ключ, ü: bytes, not characters\nreturn 1');

/** Per-socket record of sent scripts, as IoredisLockClient keeps it. */
function scriptsSent(): ScriptsSent {
  const bySocket = new WeakMap<object, Set<string>>();
  return {
    on: (socket) => {
      let sent = bySocket.get(socket);
      if (!sent) bySocket.set(socket, (sent = new Set()));
      return sent;
    },
  };
}

/** The bytes ioredis' own Command writes for `name args…`: the reference ours must equal, byte for byte. */
function ioredisBytes(name: string, args: string[]): Buffer {
  const writable = new Command(name, args).toWritable({});
  return Buffer.isBuffer(writable) ? writable : Buffer.from(writable, 'utf8');
}

/** A socket that already has every script (EVALSHA is written to it). */
function warmSocket(sent: ScriptsSent, ...scripts: (typeof SCRIPT)[]): object {
  const socket = {};
  for (const script of scripts) sent.on(socket).add(script.sha);
  return socket;
}

/** What a command writes, as bytes (text the first time a call is written, its shared Buffer after). */
function bytesOf(writable: string | Buffer): Buffer {
  return Buffer.isBuffer(writable) ? writable : Buffer.from(writable, 'utf8');
}

function write(
  script: typeof SCRIPT,
  sent: ScriptsSent,
  socket: object,
  keys: string[],
  args: (string | number)[],
): Buffer {
  return bytesOf(new ScriptCommand(script, sent, keys, args, 1000).toWritable(socket));
}

function evalsha(script: typeof SCRIPT, keys: string[], args: (string | number)[]): Buffer {
  return ioredisBytes('evalsha', [script.sha, String(keys.length), ...keys, ...args.map(String)]);
}

describe('ScriptCommand', () => {
  it('writes the whole script the first time on a socket, then EVALSHA, with the bytes ioredis would write', () => {
    const sent = scriptsSent();
    const socket = {};
    const first = new ScriptCommand(SCRIPT, sent, ['lock:{k}', 'lock:{k}:fence'], ['tök-1', 30000], 1000);
    expect(
      bytesOf(first.toWritable(socket)).equals(
        ioredisBytes('eval', [SCRIPT.lua, '2', 'lock:{k}', 'lock:{k}:fence', 'tök-1', '30000']),
      ),
    ).toBe(true);
    expect(first.name).toBe('eval');
    // The arguments ioredis reports (in errors, logs) are the call's, whatever was written.
    expect(first.args).toEqual([SCRIPT.sha, '2', 'lock:{k}', 'lock:{k}:fence', 'tök-1', '30000']);

    // The same command written again on a socket that has the script (a resend): EVALSHA, and named so.
    const warm = warmSocket(sent, SCRIPT);
    expect(
      bytesOf(first.toWritable(warm)).equals(evalsha(SCRIPT, ['lock:{k}', 'lock:{k}:fence'], ['tök-1', 30000])),
    ).toBe(true);
    expect(first.name).toBe('evalsha');

    const second = new ScriptCommand(SCRIPT, sent, ['lock:{k}', 'lock:{k}:fence'], ['tök-2', 30000], 1000);
    expect(
      bytesOf(second.toWritable(socket)).equals(evalsha(SCRIPT, ['lock:{k}', 'lock:{k}:fence'], ['tök-2', 30000])),
    ).toBe(true);
    // Written again on a new socket (a reconnect): the script goes in full again.
    expect(bytesOf(second.toWritable({})).includes(SCRIPT.lua)).toBe(true);
  });

  it('gives the commands of one call to several nodes one encoding; a node without the script gets it whole', () => {
    const sent = scriptsSent();
    const nodes = [warmSocket(sent, SCRIPT), {}, warmSocket(sent, SCRIPT), warmSocket(sent, SCRIPT)];
    const keys = ['lock:{a}'];
    const args: (string | number)[] = ['token-a', 10000];
    const commands = nodes.map(() => new ScriptCommand(SCRIPT, sent, keys, args, 1000));
    const round = commands.map((command, i) => command.toWritable(nodes[i]));
    // Text for the first node, then one Buffer of the same bytes for every other node that has the script.
    expect(Buffer.isBuffer(round[2])).toBe(true);
    expect(round[3]).toBe(round[2]);
    for (const written of [round[0], round[2]]) expect(bytesOf(written).equals(evalsha(SCRIPT, keys, args))).toBe(true);
    expect(bytesOf(round[1]).equals(ioredisBytes('eval', [SCRIPT.lua, '1', 'lock:{a}', 'token-a', '10000']))).toBe(
      true,
    );
    expect(commands.map((command) => command.name)).toEqual(['evalsha', 'eval', 'evalsha', 'evalsha']);
    // The EVAL of node 1 left the call's arguments as they were, for it and for its siblings.
    for (const command of commands) expect(command.args).toEqual([SCRIPT.sha, '1', 'lock:{a}', 'token-a', '10000']);
  });

  it('never gives a call the bytes of the call before it when anything differs', () => {
    const sent = scriptsSent();
    const socket = warmSocket(sent, SCRIPT, OTHER);
    const keys = ['lock:{a}', 'lock:{a}:fence'];
    const args: (string | number)[] = ['token-a', 10000];
    const cases: [typeof SCRIPT, string[], (string | number)[]][] = [
      [SCRIPT, keys, args],
      // The caller's array changed in place since the last call.
      [SCRIPT, keys, (args.splice(0, 1, 'token-b'), args)],
      // Another ttl (a renewal of another length), another second key.
      [SCRIPT, keys, ['token-b', 60000]],
      [SCRIPT, ['lock:{a}', 'lock:{a}:other'], ['token-b', 60000]],
      // A shorter call whose strings begin the same; then a longer one.
      [SCRIPT, ['lock:{a}', 'lock:{a}:other'], ['token-b']],
      [SCRIPT, ['lock:{a}', 'lock:{a}:other'], ['token-b', 60000, 0]],
      // The same strings split otherwise between keys and arguments: another numkeys.
      [SCRIPT, ['lock:{a}'], ['lock:{a}:other', 'token-b', 60000, 0]],
      // The same keys and arguments for another script.
      [OTHER, ['lock:{a}'], ['lock:{a}:other', 'token-b', 60000, 0]],
    ];
    for (const [script, callKeys, callArgs] of cases) {
      expect(write(script, sent, socket, callKeys, callArgs).equals(evalsha(script, callKeys, callArgs))).toBe(true);
    }
  });

  it('keeps what a caller does to the arguments ioredis hands out away from the next call', () => {
    const sent = scriptsSent();
    const socket = warmSocket(sent, SCRIPT);
    const command = new ScriptCommand(SCRIPT, sent, ['lock:{x}'], ['token'], 1000);
    command.toWritable(socket);
    // As a log redactor might, on error.command.args of a failed command.
    command.args[2] = 'REDACTED';
    expect(write(SCRIPT, sent, socket, ['REDACTED'], ['token']).equals(evalsha(SCRIPT, ['REDACTED'], ['token']))).toBe(
      true,
    );
  });

  it('counts bytes, not characters, in every length: long values, many arguments, multi-byte text', () => {
    const sent = scriptsSent();
    const socket = warmSocket(sent, SCRIPT);
    const longKey = `lock:{${'k'.repeat(120)}}`;
    const many = Array.from({ length: 12 }, (_, i) => (i === 5 ? 'v'.repeat(1500) : `arg-${i}`));
    expect(write(SCRIPT, sent, socket, [longKey], many).equals(evalsha(SCRIPT, [longKey], many))).toBe(true);
    const multibyte = ['lock:{ключ}', 'lock:{ä}'];
    expect(write(SCRIPT, sent, socket, multibyte, ['ü', '😀'])).toEqual(evalsha(SCRIPT, multibyte, ['ü', '😀']));
    const fresh = {};
    const whole = bytesOf(new ScriptCommand(MULTIBYTE, sent, ['k'], [1], 1000).toWritable(fresh));
    expect(whole.equals(ioredisBytes('eval', [MULTIBYTE.lua, '1', 'k', '1']))).toBe(true);
  });
});
