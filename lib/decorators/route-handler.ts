// Tells route handlers (HTTP, RPC, WebSocket, GraphQL), which LockInterceptor locks, from other provider methods.
import { PATH_METADATA } from '@nestjs/common/constants';

/**
 * Method metadata that marks a method Nest calls through its interceptor pipeline, so LockInterceptor
 * (not the provider-method wrapper) locks it. Written as strings so the optional transports need not be
 * installed: @Get/@Post/@Sse..., @MessagePattern/@EventPattern, @SubscribeMessage, and GraphQL's
 * @Query/@Mutation/@Subscription and @ResolveField (field resolvers only run interceptors when the
 * GraphQL module enables `fieldResolverEnhancers: ['interceptors']`).
 */
const ROUTE_HANDLER_METADATA = [
  PATH_METADATA,
  'microservices:pattern',
  'websockets:message_mapping',
  'graphql:resolver_type',
  'graphql:resolve_property',
];

/** True when `method` is a route handler (HTTP route, RPC pattern, WebSocket message, GraphQL resolver). */
export function isRouteHandler(method: Function): boolean {
  return ROUTE_HANDLER_METADATA.some((key) => Reflect.getMetadata(key, method) !== undefined);
}
