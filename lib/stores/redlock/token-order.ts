// A Redlock node's order of each token's commands: no undo, release or withdrawal overtaken by the token's own writer's
// second script.
import { CommandTimeoutError } from '../../errors/command-timeout.error';
import { noop } from '../../util/noop';
import { type Expirable, expireAfter } from '../../util/with-timeout';

/** An attempt's first script on a Redlock node, until it answers (see TokenOrder.inOrder and mustTakeBack). */
export interface PlainAttempt {
  /** An undo, release or withdrawal of its token went out meanwhile: no second script is to follow. */
  superseded: boolean;
  /** That command was an undo or release: it deletes this attempt's grant, so no take-back is to follow either. */
  takenBack: boolean;
  /** Sent from the token's chain (see behind): the chain's end already covers its second script. */
  readonly inChain: boolean;
}

/** How long close() waits at most for a node's chains to run out, on top of what the node adds (see drain). */
const CLOSE_DRAIN_MS = 2_000;

/**
 * The store decides a Redlock attempt once a quorum answered, and sends its undo, release or withdrawal to
 * the nodes that have not answered yet, counting on each connection to run them after the attempt's first
 * script. A writer that met readers takes a second script (WRITE_ACQUIRE_SCRIPT), which would run after them:
 * granted after its own undo or release (the readers gone meanwhile), or its intent recorded after its
 * withdrawal, left on the node for a whole ttl and announced to nobody (readers refused by such leftovers on
 * N - quorum + 1 nodes would sleep until they expired). So, per token on one node: while the first script is
 * unanswered such a command goes out at once and the second script is not sent (the attempt is superseded);
 * while the second is in flight the command waits for it, in the token's chain, and so does the token's next
 * attempt (see behind). One TokenOrder per Redlock node; one Redis needs none.
 */
export class TokenOrder {
  /** The attempts whose first script has not answered yet, by token (see inOrder and mustTakeBack). */
  private readonly unanswered = new Map<string, PlainAttempt>();
  /** Per token, the end of a writer's second script and of the token's commands queued behind it. */
  private readonly chains = new Map<string, Promise<void>>();
  /** True while a command of a chain is being sent (see sendChained). */
  private sending = false;

  /** True while a command of a chain is being sent: the node lets it out even once closed. */
  get sendingChained(): boolean {
    return this.sending;
  }

  /**
   * A new attempt's first script, to track while it is unanswered (see whileUnanswered): sent `direct`ly, or
   * from the token's chain (`behind-chain`, see behind).
   */
  attempt(sent: 'direct' | 'behind-chain'): PlainAttempt {
    return { superseded: false, takenBack: false, inChain: sent === 'behind-chain' };
  }

  /** Whether a writer's second script of `token` (or a command chained behind it) is in flight. */
  inFlight(token: string): boolean {
    return this.chains.has(token);
  }

  /**
   * Keeps an attempt's first script among the token's unanswered attempts until `sent` settles, and hands its
   * reply to `answer` in the same callback: a second script is chained before any other command of the token
   * can look for the attempt.
   */
  whileUnanswered<R, T>(
    token: string,
    attempt: PlainAttempt,
    sent: Promise<R>,
    answer: (reply: R) => T | Promise<T>,
  ): Promise<T> {
    this.unanswered.set(token, attempt);
    const answered = (): void => {
      if (this.unanswered.get(token) === attempt) this.unanswered.delete(token);
    };
    return sent.then(
      (reply) => {
        answered();
        return answer(reply);
      },
      (error: unknown) => {
        answered();
        throw error;
      },
    );
  }

  /**
   * Runs the token's undo or release (a `take-back`), or withdrawal, in the token's order: behind its chain
   * when a second script is in flight; otherwise at once, superseding an attempt still unanswered.
   */
  inOrder<T>(token: string, kind: 'take-back' | 'withdrawal', command: () => Promise<T>): Promise<T> {
    if (this.chains.has(token)) return this.chained(token, command);
    const attempt = this.unanswered.get(token);
    if (attempt) {
      attempt.superseded = true;
      if (kind === 'take-back') attempt.takenBack = true;
    }
    return command();
  }

  /**
   * Runs `command` after the token's chain (if any) and makes it the chain's new end until it settles. It is
   * sent even once the node is closing: the chain's commands finish what was begun before (see drain).
   */
  chained<T>(token: string, command: () => Promise<T>): Promise<T> {
    const ahead = this.chains.get(token);
    const send = (): Promise<T> => this.sendChained(command);
    const result = ahead ? ahead.then(send) : send();
    const end = result.then(noop, noop);
    this.chains.set(token, end);
    void end.then(() => {
      if (this.chains.get(token) === end) this.chains.delete(token);
    });
    return result;
  }

  /**
   * Sends a command of a token's chain, past the node's refusal once closed. Every such command sends
   * synchronously (the node checks before its first await); one that must wait for something first sends
   * through here again once it has (see RedisLockNode.withdrawIfRecorded).
   */
  sendChained<T>(command: () => Promise<T>): Promise<T> {
    this.sending = true;
    try {
      return command();
    } finally {
      this.sending = false;
    }
  }

  /**
   * The token's next attempt, behind its chain. Its wait there is bounded from the call by `waitMs` (the
   * attempt's own timeout, with minReplicas plus a WAIT's): on a node that froze between a writer's two scripts
   * it would otherwise answer only after the second script's, the chained undo's and its own timeouts. Expired
   * while waiting, it is never sent, so nothing of it needs undoing and the chain keeps its order for what
   * follows; once sent (`send`), it runs as any attempt, and its real answer is the caller's (a timeout reported
   * for an attempt that then recorded an intent would leave that intent to nobody).
   */
  behind<R>(token: string, waitMs: number, send: () => Promise<R>): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      let waiting = true;
      const wait: Expirable = {
        timeoutMs: waitMs,
        deadlineSlot: undefined,
        reject: (error) => {
          waiting = false;
          reject(error);
        },
      };
      const deadline = expireAfter(wait);
      void this.chained(token, () => {
        if (!waiting) return Promise.reject(new CommandTimeoutError(wait.timeoutMs));
        waiting = false;
        deadline.cancel(wait);
        let sent: Promise<R>;
        try {
          sent = send();
        } catch (error) {
          // Settled whatever happens: a quorum round waits for this answer.
          sent = Promise.reject(error);
        }
        sent.then(resolve, reject);
        return sent;
      });
    });
  }

  /**
   * Whether a grant of `attempt` too few replicas acknowledged is still for the node to take back. Not when an
   * undo or release of the attempt followed it on the connection (unless the script itself was sent again after
   * NOSCRIPT, `resent`, and so ran behind that undo), nor once the token's next attempt has gone out: a take-back
   * sent now would run after that attempt and delete its grant, while whatever holds the token's keys is then
   * that attempt's, kept or undone with its outcome.
   */
  mustTakeBack(attempt: PlainAttempt, token: string, resent: boolean): boolean {
    if (this.unanswered.get(token) !== attempt) return false;
    return !attempt.takenBack || resent;
  }

  /**
   * Lets the chains run out when the node closes: an undo, release or withdrawal chained behind a second
   * script in flight goes out once that answers; refused, it would leave the second script's lease or intent
   * on the node for a ttl. Each chained command has its own timeout; CLOSE_DRAIN_MS plus `extraMs` bounds a
   * chain of several behind a node that stopped answering, and a node whose last command failed
   * (`nodeFailing`) is not waited for.
   */
  async drain(extraMs: number, nodeFailing: () => boolean): Promise<void> {
    const deadline = performance.now() + CLOSE_DRAIN_MS + extraMs;
    while (this.chains.size > 0 && !nodeFailing() && performance.now() < deadline) {
      await settledOrTimedOut(Promise.all(this.chains.values()), deadline - performance.now());
    }
  }
}

/** Resolves when `promise` settles or after `ms`, whichever comes first, leaving no timer behind. */
async function settledOrTimedOut(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const elapsed = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, ms))));
  try {
    await Promise.race([promise.then(noop, noop), elapsed]);
  } finally {
    clearTimeout(timer);
  }
}
