// Finds @Locked key placeholders that can never be filled, from what the method declares (route paths, parameters).
import type { KeyPlaceholder } from '../keys/key-template';
import { routeParamsOf } from './route-params';
import type { HttpRoute } from './route-paths';

/**
 * Placeholders that can never be filled, found at startup from what the method declares. Each function
 * returns what a valid key is, in words (the end of the LockOptionsError's message), or undefined when
 * nothing is wrong. Only what the declaration decides is checked: `{body.x}`, `{query.x}`, `{headers.x}`,
 * `{user.x}` and `{data.x}` depend on each call, and a key function is not read at all.
 */

/** `{params.x}` on an HTTP route: `x` must be a parameter of each path the route is served at. */
export function routeParamsProblem(placeholders: readonly KeyPlaceholder[], route: HttpRoute): string | undefined {
  const expected =
    `{params.*} placeholders that name a parameter of the ` +
    `route${route.paths.length > 1 ? ' in each of its paths' : ''}`;
  for (const placeholder of placeholders) {
    if (placeholder.root !== 'params') continue;
    const [name] = placeholder.path;
    if (name === undefined) {
      // The whole params object, which no key can be made of.
      return (
        `${expected}: {params} names none of ` +
        `${route.paths.map((path) => describePath(route.method, path)).join(', nor ')}`
      );
    }
    const lacking = route.paths.filter((path) => {
      const params = routeParamsOf(path);
      return !params.unnamed && !params.names.includes(name);
    });
    if (lacking.length > 0) {
      return (
        `${expected}: ${placeholder.text} is not a parameter of ` +
        `${lacking.map((path) => describePath(route.method, path)).join(', nor of ')}`
      );
    }
  }
  return undefined;
}

/**
 * `{params.x}` on a route handler that is not an HTTP route (microservice, WebSocket, GraphQL): it has no
 * route parameters, so the placeholder would be undefined at every call.
 */
export function paramsWithoutRouteProblem(placeholders: readonly KeyPlaceholder[]): string | undefined {
  const params = placeholders.find((placeholder) => placeholder.root === 'params');
  if (!params) return undefined;
  return (
    `placeholders this handler's calls provide: ${params.text} reads route parameters, which only HTTP routes have; ` +
    'a microservice or WebSocket handler reads its payload as {data.x}, a GraphQL resolver its arguments as {data.x}'
  );
}

/** `{N}` on a provider method: N must be below the number of parameters it declares (undefined when unknown). */
export function argumentIndexProblem(
  placeholders: readonly KeyPlaceholder[],
  label: string,
  arity: number | undefined,
): string | undefined {
  if (arity === undefined) return undefined;
  const beyond = placeholders.find(
    (placeholder) => placeholder.kind === 'argument' && Number(placeholder.root) >= arity,
  );
  if (!beyond) return undefined;
  const declared =
    arity === 0 ? 'no parameters' : arity === 1 ? '1 parameter ({0})' : `${arity} parameters ({0} to {${arity - 1}})`;
  // A caller may pass more than the method names (a framework calling handle(job) on `handle()`): the
  // parameter then has to be declared, even unused, for the key to read it.
  return (
    `argument placeholders within the method's parameters: ${label} declares ${declared}, so ${beyond.text} reads ` +
    'an argument it does not declare (declare it, even unused, if its callers pass it)'
  );
}

/** `POST /orders/:id (its parameters: :id)`. */
function describePath(method: string, path: string): string {
  const { names } = routeParamsOf(path);
  const params = names.length > 0 ? `its parameters: ${names.map((name) => `:${name}`).join(', ')}` : 'no parameters';
  return `${method} ${path} (${params})`;
}
