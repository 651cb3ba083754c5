// The error of a lease write fewer replicas acknowledged than minReplicas asks; internal to the Redis stores.
import type { MinReplicas } from '../options/lock-options.interface';

/**
 * A write of a lease that fewer replicas acknowledged than minReplicas asks for, within its timeout: a
 * failover now could lose it. Internal to the Redis stores, which report it as LockUnavailableError (this
 * error as its cause): a grant is undone, a renewal does not count. Not exported from the errors' index.
 */
export class ReplicasNotAcknowledgedError extends Error {
  constructor(
    readonly write: 'grant' | 'renewal' | 'fence',
    readonly acknowledged: number,
    readonly minReplicas: MinReplicas,
    /** The script ran on a second send (see ReplicatedReply.resent): after commands made meanwhile. */
    readonly resent = false,
  ) {
    super(
      `only ${acknowledged} of ${minReplicas.replicas} replica${minReplicas.replicas === 1 ? '' : 's'} ` +
        `acknowledged the ${write === 'fence' ? 'fence write-back' : write} ` +
        `within ${minReplicas.timeout} ms (minReplicas)` +
        (write === 'grant' ? '; the grant is undone' : write === 'renewal' ? '; the renewal does not count' : ''),
    );
    this.name = 'ReplicasNotAcknowledgedError';
  }
}
