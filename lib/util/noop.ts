/** Does nothing: a handler for a promise whose outcome nobody needs, without a closure per use. */
export function noop(): void {}
