// Loads an optional peer dependency on first use: a package not installed turns its feature off, never an error.
import { Logger } from '@nestjs/common';
import { createRequire } from 'node:module';
import path from 'node:path';

/** What a look-up found: the package, or why there is none. */
export type OptionalPeer<T> =
  { readonly loaded: true; readonly module: T } | { readonly loaded: false; readonly reason: string };

const cache = new Map<string, OptionalPeer<unknown>>();
let requireFromHere: NodeRequire | undefined;

/**
 * Loads an optional peer dependency (`@opentelemetry/api`) when first asked for, and only then: a package the
 * application did not install is "not loaded" with a reason, never an error, so the feature that needs it
 * is simply off. Modelled on @nestjs/common's loadPackageSync, without its process.exit for a missing one.
 *
 * The require is made relative to this file, so the package resolves from the application's node_modules
 * as any dependency of this library would. `__filename` exists in the CommonJS build users load; where this
 * file runs as ESM without it (the tests' transform), the working directory stands in.
 */
export function loadOptionalPeer<T>(name: string): OptionalPeer<T> {
  const cached = cache.get(name);
  if (cached) return cached as OptionalPeer<T>;
  let found: OptionalPeer<T>;
  try {
    requireFromHere ??= createRequire(
      typeof __filename === 'string' ? __filename : path.join(process.cwd(), 'index.js'),
    );
    found = { loaded: true, module: requireFromHere(name) as T };
  } catch (error) {
    const missing =
      (error as { code?: unknown }).code === 'MODULE_NOT_FOUND' && String((error as Error).message).includes(name);
    found = {
      loaded: false,
      reason: missing ? `${name} is not installed` : `${name} failed to load: ${(error as Error).message}`,
    };
    // A package that is installed but broken deserves a word; a missing optional one does not.
    if (!missing) new Logger('LockModule').warn(`${found.reason}; the features that use it are off`);
  }
  cache.set(name, found);
  return found;
}
