import { ApolloServer, HeaderMap, type BaseContext } from '@apollo/server';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Injectable } from '@nestjs/common';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';

type ExpressRequest = IncomingMessage & { body?: unknown; originalUrl?: string };
type NextFunction = (error?: unknown) => void;
type ContextFunction = (request: { req: ExpressRequest; res: ServerResponse }) => Promise<BaseContext>;

/**
 * @nestjs/apollo's own ApolloDriver, serving Apollo Server 5 on Express through Apollo's public
 * `executeHTTPGraphQLRequest` instead of `@as-integrations/express5`, which @nestjs/apollo loads for
 * Express but which is not among this repository's dev dependencies. Everything else — schema, resolvers,
 * Nest's context and error formatting, Apollo's execution — is the real driver's; only those ~30 lines of
 * HTTP glue are replaced. Once the integration package is installed this class can go.
 */
@Injectable()
export class ApolloExpressDriver extends ApolloDriver {
  protected override async registerExpress(options: ApolloDriverConfig): Promise<void> {
    const httpAdapter = this.httpAdapterHost.httpAdapter;
    const { path = '/graphql', typeDefs, resolvers, schema } = options;
    const server = new ApolloServer<BaseContext>({
      typeDefs,
      resolvers,
      schema,
      ...options,
      plugins: [...(options.plugins ?? []), ApolloServerPluginDrainHttpServer({ httpServer: httpAdapter.getHttpServer() })],
    } as ConstructorParameters<typeof ApolloServer<BaseContext>>[0]);
    await server.start();
    const context = options.context as ContextFunction;
    httpAdapter.use(path, (req: ExpressRequest, res: ServerResponse, next: NextFunction) => {
      void (async () => {
        const answer = await server.executeHTTPGraphQLRequest({
          httpGraphQLRequest: {
            method: (req.method ?? 'GET').toUpperCase(),
            headers: headerMapOf(req.headers),
            search: new URL(req.originalUrl ?? req.url ?? '/', 'http://localhost').search,
            body: req.body ?? {},
          },
          context: () => context({ req, res }),
        });
        for (const [name, value] of answer.headers) res.setHeader(name, value);
        res.statusCode = answer.status ?? 200;
        if (answer.body.kind === 'complete') {
          res.end(answer.body.string);
          return;
        }
        for await (const chunk of answer.body.asyncIterator) res.write(chunk);
        res.end();
      })().catch(next);
    });
    this.apolloServer = server;
  }
}

function headerMapOf(headers: IncomingHttpHeaders): HeaderMap {
  const map = new HeaderMap();
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) map.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return map;
}
