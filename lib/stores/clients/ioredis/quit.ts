// Closes an ioredis connection gracefully (QUIT), or drops it when the server does not answer in time.
import { withTimeout } from '../../../util/with-timeout';

/** How long a graceful QUIT may take before the connection is dropped. */
const QUIT_TIMEOUT_MS = 1_000;

/**
 * Closes a connection gracefully (QUIT: replies to commands already sent still arrive), or drops it when
 * the server does not answer in time (paused, unreachable) or the graceful close fails.
 */
export async function quitOrDisconnect(quit: () => Promise<unknown>, disconnect: () => unknown): Promise<void> {
  try {
    await withTimeout(quit(), QUIT_TIMEOUT_MS);
  } catch {
    try {
      await disconnect();
    } catch {
      // Already closed.
    }
  }
}
