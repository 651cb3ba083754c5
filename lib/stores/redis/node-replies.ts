// What a node's scripts answer: the reply types the stores read, and the parsers that make them of the raw replies.
import type { LockKeyNames, LockShape } from '../lock-store.interface';
import { kindConflict, shapeFromRecord } from '../shared/lock-shapes';
import { foreignData } from './node-errors';

/** What one node holds at a lock's key (inspect): each holder. */
export interface NodeLockState {
  /** What the key is held as on this node (a read-write lock's readers are 'read'). */
  readonly shape: LockShape;
  readonly holders: readonly NodeHolder[];
}

/** One holder of a lock's key on a node. */
export interface NodeHolder {
  /** The lease's value, `<token>|<instance>`. */
  readonly value: string;
  /** PTTL: ms until it expires. */
  readonly ttlLeft: number;
  /** A mutex: the key's fence counter on this node; a permit or reader: its own fence recorded on this node. */
  readonly fence: number;
}

/** One node's answer to a hand-over (see HANDOVER_SCRIPT). */
export type NodeHandoverReply =
  | {
      readonly handedOver: true;
      readonly fence: number;
      /** Connections subscribed to the key's release channel on this server (PUBSUB NUMSUB). */
      readonly subscribers: number;
    }
  | {
      readonly handedOver: false;
      /** Whether the releasing token still held the key (and was released, announced as usual). */
      readonly released: boolean;
    };

/** One node's answer to an acquire attempt. */
export type NodeAcquireReply =
  | {
      readonly acquired: true;
      readonly fences: number[];
      /**
       * Per key, the fence counter on this node after the grant, when it is above the fence given (a Redlock
       * permit's or reader's, counted by stride: see PERMIT_ACQUIRE_SCRIPT); otherwise it is the fence.
       */
      readonly reaches?: number[];
      /** A permit or reader granted with room left for another holder. */
      readonly vacant?: boolean;
    }
  | {
      readonly acquired: false;
      readonly retryAfter: number;
      /** Token of the grant holding the key ('' when unknown, or when permits fill it). */
      readonly holder: string;
      /** A writer blocked by readers whose intent is recorded on this node. */
      readonly queued?: boolean;
      /**
       * A writer refused by readers: their values when few (a Redlock node asks for them), UNNAMED_READERS when
       * too many to name or not asked for (see WRITE_ACQUIRE_SCRIPT); undefined when no readers refused it.
       */
      readonly readers?: readonly string[];
    };

/** NodeAcquireReply.readers of a node that holds too many readers to name them: the store then names none. */
export const UNNAMED_READERS: readonly string[] = Object.freeze([]);

/**
 * What ACQUIRE_SCRIPT answers: a single key's fence when granted, else a status array (see the script). The
 * client adapters pass integers as numbers.
 */
export type AcquireScriptReply = number | readonly unknown[];

/** Whether a granting script's answer is a grant (see ACQUIRE_SCRIPT: a bare fence for one key, else status 1). */
export function isGrant(answer: unknown): boolean {
  return Array.isArray(answer) ? Number(answer[0]) === 1 : typeof answer === 'number';
}

/** Whether ACQUIRE_SCRIPT found permits at a key (readers: the writer's way on; a semaphore: a mix, refused). */
export function permitsHoldKey(reply: AcquireScriptReply): reply is readonly unknown[] {
  return typeof reply !== 'number' && Array.isArray(reply) && Number(reply[0]) === -3;
}

/** ACQUIRE_SCRIPT's answer, permits at a key aside (see permitsHoldKey): granted, or busy. */
export function mutexReply(reply: AcquireScriptReply, keys: readonly LockKeyNames[]): NodeAcquireReply {
  // One key granted: its fence alone (see ACQUIRE_SCRIPT).
  if (typeof reply === 'number') return { acquired: true, fences: [reply] };
  if (!Array.isArray(reply)) throw new Error(`unexpected answer to the acquire script: ${String(reply)}`);
  const status = Number(reply[0]);
  if (status === 1) return { acquired: true, fences: reply.slice(1).map(Number) };
  if (status === 0) return { acquired: false, retryAfter: Number(reply[1]), holder: String(reply[2] ?? '') };
  throw foreignData(keys[Number(reply[1]) - 1], status === -1 ? 'lock' : 'fence');
}

/** A refusal by the permits ACQUIRE_SCRIPT found at a key (see permitsHoldKey), when no writer's script follows. */
export function refusedByPermits(reply: readonly unknown[]): NodeAcquireReply {
  return { acquired: false, retryAfter: Number(reply[2]), holder: '' };
}

/** WRITE_ACQUIRE_SCRIPT's answer: granted, or busy (with the readers that refused it, when it names them). */
export function writerReply(reply: readonly unknown[], key: LockKeyNames): NodeAcquireReply {
  const status = Number(reply[0]);
  if (status === 1) return { acquired: true, fences: [Number(reply[1])] };
  if (status === 0) {
    const refused = {
      acquired: false,
      retryAfter: Number(reply[1]),
      holder: String(reply[2] ?? ''),
      queued: Number(reply[3]) === 1,
    } as const;
    if (reply[5] === undefined || reply[5] === null) return refused;
    // Refused by readers: named when asked for (a Redlock node) and at most 32 of them (see WRITE_ACQUIRE_SCRIPT),
    // else only counted.
    const named = Array.isArray(reply[4]) && reply[4].length > 0;
    return named
      ? { ...refused, readers: (reply[4] as unknown[]).map(String) }
      : { ...refused, readers: UNNAMED_READERS };
  }
  if (status === -3) throw kindConflict(key.name, shapeFromRecord(String(reply[1])) ?? { kind: 'mutex' }, undefined);
  throw foreignData(key, status === -1 ? 'lock' : 'fence');
}

/** PERMIT_ACQUIRE_SCRIPT's answer: granted (with how far the node's counter went), or busy. */
export function permitReply(reply: readonly unknown[], key: LockKeyNames, shape: LockShape): NodeAcquireReply {
  const status = Number(reply[0]);
  if (status === 1) {
    const fence = Number(reply[1]);
    const reach = Number(reply[3]);
    const vacant = Number(reply[2]) === 1;
    return reach === fence
      ? { acquired: true, fences: [fence], vacant }
      : { acquired: true, fences: [fence], vacant, reaches: [reach] };
  }
  if (status === 0) return { acquired: false, retryAfter: Number(reply[1]), holder: '' };
  if (status === -3) {
    const found = String(reply[1]);
    throw kindConflict(
      key.name,
      found === 'mutex' ? { kind: 'mutex' } : (shapeFromRecord(found) ?? { kind: 'mutex' }),
      shape,
    );
  }
  throw foreignData(key, status === -1 ? 'lock' : 'fence');
}

/** HANDOVER_SCRIPT's answer. */
export function handoverReply(reply: readonly unknown[]): NodeHandoverReply {
  const status = Number(reply[0]);
  if (status === 1) return { handedOver: true, fence: Number(reply[1]), subscribers: Number(reply[2]) };
  return { handedOver: false, released: status === -2 };
}

/** INSPECT_SCRIPT's answer: what holds the key, or null when nothing does. */
export function inspectReply(reply: readonly unknown[]): NodeLockState | null {
  const status = Number(reply[0]);
  if (status === 1) {
    return {
      shape: { kind: 'mutex' },
      holders: [{ value: String(reply[1]), ttlLeft: Number(reply[2]), fence: Number(reply[3]) }],
    };
  }
  if (status !== 2) return null;
  const holders: NodeHolder[] = [];
  for (let i = 2; i + 2 < reply.length; i += 3) {
    holders.push({ value: String(reply[i]), ttlLeft: Number(reply[i + 1]), fence: Number(reply[i + 2]) });
  }
  const shape = shapeFromRecord(String(reply[1]));
  return shape ? { shape, holders } : null;
}

/** FORCE_RELEASE_SCRIPT's answer: the values evicted. */
export function forceReleaseReply(reply: unknown): string[] {
  if (typeof reply === 'string') return [reply];
  return Array.isArray(reply) ? reply.map(String) : [];
}
