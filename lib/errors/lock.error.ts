/** Base class of every error this library throws, so callers can catch the family at once. */
export abstract class LockError extends Error {
  protected constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}
