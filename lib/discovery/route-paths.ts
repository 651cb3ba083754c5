// The paths Nest serves an HTTP route handler at, read from the metadata its router reads, joined as it joins them.
import { RequestMethod, VERSION_NEUTRAL, VersioningType, type VersioningOptions } from '@nestjs/common';
import { METHOD_METADATA, MODULE_PATH, PATH_METADATA, VERSION_METADATA } from '@nestjs/common/constants';

/**
 * The paths Nest serves an HTTP route handler at, read from the same metadata its router reads: global
 * prefix, URI version, RouterModule's module path, controller path(s), method path(s). Paths are joined as
 * Nest's RoutePathFactory joins them, so an error can quote the path a client calls.
 *
 * setGlobalPrefix's `exclude` is not applied: every route is given the prefix. The route check counts the
 * prefix's parameters for an excluded route too, which can only let a template pass, never refuse one.
 * A version is a literal segment (`/v1`), shown but never a parameter; header, media-type and custom
 * versioning leave the path as it is.
 */

/** What is read of Nest's ApplicationConfig: the prefix and versioning an application sets before app.init(). */
export interface RouteSettings {
  getGlobalPrefix(): string;
  getVersioning(): VersioningOptions | undefined;
}

export interface HttpRoute {
  /** `GET`, `POST`, ... (`ALL` for @All). */
  readonly method: string;
  /** Every path the handler is served at: one per combination of controller, method and version paths. */
  readonly paths: readonly string[];
}

/** True when `handler` is an HTTP route (@Get, @Post, ...), whose paths httpRouteOf reads. */
export function isHttpRoute(handler: Function): boolean {
  return Reflect.getMetadata(PATH_METADATA, handler) !== undefined;
}

/**
 * The route of `handler` (a method of `controller`), or undefined when it is not an HTTP route (no @Get, @Post, ...).
 */
export function httpRouteOf(
  controller: Function,
  handler: Function,
  modulePath: string | undefined,
  settings: RouteSettings,
): HttpRoute | undefined {
  const methodPaths = pathList(Reflect.getMetadata(PATH_METADATA, handler));
  if (methodPaths.length === 0) return undefined;
  const controllerPaths = pathList(Reflect.getMetadata(PATH_METADATA, controller));
  const requestMethod: unknown = Reflect.getMetadata(METHOD_METADATA, handler) ?? RequestMethod.GET;
  const method =
    typeof requestMethod === 'number' ? (RequestMethod[requestMethod] ?? String(requestMethod)) : String(requestMethod);
  const prefix = settings.getGlobalPrefix();
  const paths: string[] = [];
  for (const version of versionSegments(controller, handler, settings.getVersioning())) {
    for (const controllerPath of controllerPaths.length > 0 ? controllerPaths : ['/']) {
      for (const methodPath of methodPaths)
        paths.push(joinPath([prefix, version, modulePath, controllerPath, methodPath]));
    }
  }
  return { method, paths: [...new Set(paths)] };
}

/**
 * The path RouterModule.register gave a module: Nest records it per application (under MODULE_PATH and the
 * application's id, so two applications of one process may route one module differently), or, in older
 * versions, under MODULE_PATH alone.
 */
export function modulePathOf(moduleClass: Function | undefined, applicationId: string | undefined): string | undefined {
  if (!moduleClass) return undefined;
  const own: unknown =
    applicationId === undefined ? undefined : Reflect.getMetadata(MODULE_PATH + applicationId, moduleClass);
  const path: unknown = own ?? Reflect.getMetadata(MODULE_PATH, moduleClass);
  return typeof path === 'string' ? path : undefined;
}

function pathList(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === 'string');
  return [];
}

/**
 * `/v1`-style segments under URI versioning (the handler's version, else its controller's, else the default); `''`
 * otherwise.
 */
function versionSegments(controller: Function, handler: Function, versioning: VersioningOptions | undefined): string[] {
  if (versioning?.type !== VersioningType.URI) return [''];
  const version = (Reflect.getMetadata(VERSION_METADATA, handler) ||
    Reflect.getMetadata(VERSION_METADATA, controller) ||
    versioning.defaultVersion) as VersioningOptions['defaultVersion'];
  if (version === undefined) return [''];
  const prefix = versioning.prefix === false ? '' : (versioning.prefix ?? 'v');
  const versions = Array.isArray(version) ? version : [version];
  return versions.map((item) => (item === VERSION_NEUTRAL ? '' : `/${prefix}${String(item)}`));
}

/** Joins path fragments with one `/` between them, with a leading `/` and no trailing one (`/` alone for the root). */
function joinPath(fragments: readonly (string | undefined)[]): string {
  let path = '';
  for (const fragment of fragments) {
    if (!fragment) continue;
    // `{/...}` is path-to-regexp 8's optional group, which brings its own slash.
    const leading = fragment.startsWith('/') || fragment.startsWith('{/') ? fragment : `/${fragment}`;
    path = path.replace(/\/$/, '') + leading;
  }
  if (path === '' || path === '/') return '/';
  return path.replace(/\/$/, '');
}
