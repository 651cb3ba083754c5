/**
 * The harness's own commands (INFO / CONFIG probes, the MONITOR connection and its ECHO end marker) and
 * connection handshakes (ioredis' INFO ready check, CLIENT SETNAME / SETINFO, HELLO, SELECT), left out
 * of every count on both sides, Redis' and the clients'. No contestant sends any of them per acquisition.
 */
const HARNESS_COMMANDS = new Set(['info', 'config', 'monitor', 'echo', 'ping', 'hello', 'select', 'command', 'client']);

/** `name` is a lower-case command name, or a commandstats entry such as `config|resetstat`. */
export function isHarnessCommand(name: string): boolean {
  return HARNESS_COMMANDS.has(name.split('|')[0]);
}
