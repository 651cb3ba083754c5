// FencedWriteRejectedError: a fenced write refused, its token not newer than the last that wrote the resource.
import { LockError } from '../errors/lock.error';

/**
 * A fenced write was refused: the writer's fencing token is not newer than the last one that wrote the
 * resource (older, or the same token from another grant), so its lock was lost and a newer holder has written
 * since. The writer must stop, not retry with the same lock.
 */
export class FencedWriteRejectedError extends LockError {
  constructor(
    /** The resource's Redis key. */
    readonly key: string,
    /** The refused writer's fencing token. */
    readonly fence: number,
    /** The token of the last write the resource accepted. */
    readonly lastFence: number,
  ) {
    super(
      fence < lastFence
        ? `Write to ${JSON.stringify(key)} refused: fencing token ${fence} ` +
            `is older than ${lastFence}, the last one that wrote it. ` +
            `The lock was lost and a newer holder has written since; stop this work.`
        : `Write to ${JSON.stringify(key)} refused: fencing token ` +
            `${fence} wrote it already, under a grant this writer is not ` +
            `known to be. Another grant carried the same token, ` +
            `so stop this work; to write again under one grant, pass ` +
            `the Lock rather than its fence.`,
    );
  }
}
