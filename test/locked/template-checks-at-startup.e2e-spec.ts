import {
  Body,
  Controller,
  Get,
  Injectable,
  Module,
  Post,
  VersioningType,
  type INestApplication,
  type ModuleMetadata,
  type Type,
} from '@nestjs/common';
import { RouterModule } from '@nestjs/core';
import { MessagePattern } from '@nestjs/microservices';
import { Query, Resolver } from '@nestjs/graphql';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import request from 'supertest';
import { Locked, LockModule, LockOptionsError, LockService } from '../../lib';

/**
 * A key template that can never be filled (a route parameter the route does not declare, an argument the
 * method does not take) fails app.init() with a LockOptionsError naming the method, instead of booting and
 * answering every call with InvalidLockKeyError. Real Nest applications on Express and Fastify, with the
 * in-process store.
 */

type Platform = 'express' | 'fastify';

/** Compiles `scenario` with a global in-process LockModule, applies `configure`, and runs app.init(). */
async function boot(
  platform: Platform,
  scenario: ModuleMetadata,
  configure?: (app: INestApplication) => void,
): Promise<INestApplication> {
  const module = await Test.createTestingModule({
    ...scenario,
    imports: [...(scenario.imports ?? []), LockModule.forRoot({ isGlobal: true })],
  })
    .setLogger({ log() {}, error() {}, warn() {}, debug() {}, verbose() {}, fatal() {} })
    .compile();
  const app =
    platform === 'fastify'
      ? module.createNestApplication(new FastifyAdapter(), { logger: false })
      : module.createNestApplication({ logger: false });
  configure?.(app);
  try {
    await app.init();
  } catch (error) {
    // A failed init leaves app.close() a no-op: stop the store's timers directly.
    await module
      .get(LockService)
      .onApplicationShutdown()
      .catch(() => undefined);
    throw error;
  }
  return app;
}

/** The error app.init() failed with (the test fails when it boots). */
async function bootFailure(
  platform: Platform,
  scenario: ModuleMetadata,
  configure?: (app: INestApplication) => void,
): Promise<Error> {
  let app: INestApplication | undefined;
  try {
    app = await boot(platform, scenario, configure);
  } catch (error) {
    return error as Error;
  }
  await app.close();
  throw new Error('expected app.init() to fail, it booted');
}

async function bootsAndCloses(
  platform: Platform,
  scenario: ModuleMetadata,
  configure?: (app: INestApplication) => void,
): Promise<void> {
  const app = await boot(platform, scenario, configure);
  await app.close();
}

/**
 * Boots, then POSTs `path` and expects the handler's answer: the placeholders the startup check accepted
 * are filled at run time (a missing one would be a 400).
 */
async function bootsAndServes(
  platform: Platform,
  scenario: ModuleMetadata,
  path: string,
  configure?: (app: INestApplication) => void,
): Promise<void> {
  const app = await boot(platform, scenario, configure);
  try {
    if (platform === 'fastify') await (app.getHttpAdapter().getInstance() as { ready(): Promise<unknown> }).ready();
    const response = await request(app.getHttpServer()).post(path);
    expect({ status: response.status, text: response.text }).toEqual({ status: 201, text: 'added' });
  } finally {
    await app.close();
  }
}

describe.each<Platform>(['express', 'fastify'])('@Locked route templates checked at startup (%s)', (platform) => {
  it('fails app.init() on a {params.*} placeholder the route does not declare, naming the method, placeholder and parameters', async () => {
    @Controller()
    class OrdersController {
      @Post('orders/:id')
      @Locked('order:{params.orderId}')
      create(): string {
        return 'created';
      }
    }
    const error = await bootFailure(platform, { controllers: [OrdersController] });
    expect(error).toBeInstanceOf(LockOptionsError);
    expect(error.message).toBe(
      'Invalid lock option \'@Locked key of OrdersController.create\': "order:{params.orderId}". Expected {params.*} ' +
        'placeholders that name a parameter of the route: {params.orderId} is not a parameter of POST /orders/:id (its parameters: :id).',
    );
  });

  it('boots when the placeholder names a declared parameter', async () => {
    @Controller()
    class OrdersController {
      @Post('orders/:id')
      @Locked('order:{params.id}')
      create(): string {
        return 'created';
      }
    }
    await bootsAndCloses(platform, { controllers: [OrdersController] });
  });

  it('reads the parameters of the controller path', async () => {
    @Controller('shops/:shopId')
    class ShopOrdersController {
      @Post('orders/:id')
      @Locked(['shop:{params.shopId}', 'order:{params.id}'])
      create(): string {
        return 'created';
      }
    }
    await bootsAndCloses(platform, { controllers: [ShopOrdersController] });
  });

  it('fails on a parameter of the controller path spelt differently', async () => {
    @Controller('shops/:shopId')
    class ShopOrdersController {
      @Post('orders/:id')
      @Locked('shop:{params.shopid}')
      create(): string {
        return 'created';
      }
    }
    const error = await bootFailure(platform, { controllers: [ShopOrdersController] });
    expect(error).toBeInstanceOf(LockOptionsError);
    expect(error.message).toContain("'@Locked key of ShopOrdersController.create'");
    expect(error.message).toContain(
      '{params.shopid} is not a parameter of POST /shops/:shopId/orders/:id (its parameters: :shopId, :id)',
    );
  });

  it('with several method paths, requires the parameter in each and names the path that lacks it', async () => {
    @Controller()
    class BothController {
      @Get(['orders/:id', 'legacy/orders/:id'])
      @Locked('order:{params.id}')
      read(): string {
        return 'read';
      }
    }
    await bootsAndCloses(platform, { controllers: [BothController] });

    @Controller()
    class OneLacksController {
      @Get(['orders/:id', 'orders/latest'])
      @Locked('order:{params.id}')
      read(): string {
        return 'read';
      }
    }
    const error = await bootFailure(platform, { controllers: [OneLacksController] });
    expect(error).toBeInstanceOf(LockOptionsError);
    expect(error.message).toContain("'@Locked key of OneLacksController.read'");
    expect(error.message).toContain('{params.id} is not a parameter of GET /orders/latest (no parameters)');
    expect(error.message).not.toContain('GET /orders/:id (');
  });

  it('with setGlobalPrefix, boots on {params.orgId} and fails on {params.orgid}', async () => {
    const configure = (app: INestApplication) => app.setGlobalPrefix('api');
    await bootsAndServes(
      platform,
      { controllers: [orgController('{params.orgId}')] },
      '/api/orgs/o1/members/m1',
      configure,
    );
    const error = await bootFailure(platform, { controllers: [orgController('{params.orgid}')] }, configure);
    expect(error).toBeInstanceOf(LockOptionsError);
    expect(error.message).toContain(
      '{params.orgid} is not a parameter of POST /api/orgs/:orgId/members/:id (its parameters: :orgId, :id)',
    );
  });

  it('reads the parameters of the global prefix itself', async () => {
    const configure = (app: INestApplication) => app.setGlobalPrefix('orgs/:orgId');
    @Controller('members')
    class MembersController {
      @Post(':id')
      @Locked('member:{params.orgId}:{params.id}')
      add(): string {
        return 'added';
      }
    }
    await bootsAndServes(platform, { controllers: [MembersController] }, '/orgs/o1/members/m1', configure);
  });

  it('with URI versioning, boots on {params.orgId} and fails on {params.orgid}', async () => {
    const configure = (app: INestApplication) => app.enableVersioning({ type: VersioningType.URI });
    await bootsAndServes(
      platform,
      { controllers: [orgController('{params.orgId}', '1')] },
      '/v1/orgs/o1/members/m1',
      configure,
    );
    const error = await bootFailure(platform, { controllers: [orgController('{params.orgid}', '1')] }, configure);
    expect(error).toBeInstanceOf(LockOptionsError);
    expect(error.message).toContain(
      '{params.orgid} is not a parameter of POST /v1/orgs/:orgId/members/:id (its parameters: :orgId, :id)',
    );
  });

  it("under RouterModule.register's module path, boots on {params.orgId} and fails on {params.orgid}", async () => {
    const routed = (placeholder: string): ModuleMetadata => {
      @Controller('members')
      class MembersController {
        @Post(':id')
        @Locked(`member:${placeholder}:{params.id}`)
        add(): string {
          return 'added';
        }
      }
      @Module({ controllers: [MembersController] })
      class OrgsModule {}
      return { imports: [OrgsModule, RouterModule.register([{ path: 'orgs/:orgId', module: OrgsModule }])] };
    };
    await bootsAndServes(platform, routed('{params.orgId}'), '/orgs/o1/members/m1');
    const error = await bootFailure(platform, routed('{params.orgid}'), (app) => app.setGlobalPrefix('api'));
    expect(error).toBeInstanceOf(LockOptionsError);
    expect(error.message).toContain("'@Locked key of MembersController.add'");
    expect(error.message).toContain(
      '{params.orgid} is not a parameter of POST /api/orgs/:orgId/members/:id (its parameters: :orgId, :id)',
    );
  });

  it('cannot check key functions nor body, query, headers, user or data placeholders: they boot', async () => {
    @Controller()
    class UncheckedController {
      @Post('orders')
      @Locked((source) => `order:${String((source.params as Record<string, unknown> | undefined)?.nothing)}`)
      byFunction(): string {
        return 'ok';
      }

      @Post('orders/by-body')
      @Locked(['order:{body.id}', 'page:{query.page}', 'tenant:{headers.x-tenant}', 'user:{user.id}', 'data:{data.x}'])
      byRequest(@Body() body: unknown): unknown {
        return body;
      }
    }
    await bootsAndCloses(platform, { controllers: [UncheckedController] });
  });

  it('fails on {params.*} on a microservice handler, a gateway or a GraphQL resolver, which have no route parameters', async () => {
    @Controller()
    class RpcController {
      @MessagePattern('orders.pay')
      @Locked('order:{params.id}')
      pay(): string {
        return 'paid';
      }
    }
    const rpc = await bootFailure(platform, { controllers: [RpcController] });
    expect(rpc).toBeInstanceOf(LockOptionsError);
    expect(rpc.message).toContain("'@Locked key of RpcController.pay'");
    expect(rpc.message).toContain('{data.x}');

    @WebSocketGateway()
    class OrdersGateway {
      @SubscribeMessage('pay')
      @Locked('order:{params.id}')
      pay(): string {
        return 'paid';
      }
    }
    const ws = await bootFailure(platform, { providers: [OrdersGateway] });
    expect(ws).toBeInstanceOf(LockOptionsError);
    expect(ws.message).toContain("'@Locked key of OrdersGateway.pay'");

    @Resolver()
    class OrdersResolver {
      @Query(() => String)
      @Locked('order:{params.id}')
      order(): string {
        return 'order';
      }
    }
    const graphql = await bootFailure(platform, { providers: [OrdersResolver] });
    expect(graphql).toBeInstanceOf(LockOptionsError);
    expect(graphql.message).toBe(
      'Invalid lock option \'@Locked key of OrdersResolver.order\': "order:{params.id}". Expected placeholders this ' +
        "handler's calls provide: {params.id} reads route parameters, which only HTTP routes have; a microservice or " +
        'WebSocket handler reads its payload as {data.x}, a GraphQL resolver its arguments as {data.x}.',
    );
  });
});

/** `POST orgs/:orgId/members/:id` locked on `member:<placeholder>`, optionally under a URI version. */
function orgController(placeholder: string, version?: string): Type {
  @Controller({ path: 'orgs/:orgId', version })
  class OrgMembersController {
    @Post('members/:id')
    @Locked(`member:${placeholder}:{params.id}`)
    add(): string {
      return 'added';
    }
  }
  return OrgMembersController;
}

describe('@Locked argument templates on provider methods checked at startup', () => {
  it('fails app.init() on {2} of a method that takes two arguments, naming the method', async () => {
    @Injectable()
    class JobsService {
      @Locked('job:{2}')
      async run(tenant: string, id: string): Promise<string> {
        return `${tenant} ${id}`;
      }
    }
    const error = await bootFailure('express', { providers: [JobsService] });
    expect(error).toBeInstanceOf(LockOptionsError);
    expect(error.message).toBe(
      'Invalid lock option \'@Locked key of JobsService.run\': "job:{2}". Expected argument placeholders within ' +
        "the method's parameters: JobsService.run declares 2 parameters ({0} to {1}), so {2} reads an argument it does not declare " +
        '(declare it, even unused, if its callers pass it).',
    );
  });

  it('boots on {1} of the same method', async () => {
    @Injectable()
    class JobsService {
      @Locked('job:{0}:{1.id}')
      async run(tenant: string, job: { id: string }): Promise<string> {
        return `${tenant} ${job.id}`;
      }
    }
    await bootsAndCloses('express', { providers: [JobsService] });
  });

  it('boots on {3} of a method with a rest parameter, and on {1} of one whose second parameter has a default', async () => {
    @Injectable()
    class JobsService {
      @Locked('job:{3}')
      async many(first: string, ...rest: string[]): Promise<string> {
        return [first, ...rest].join();
      }

      // Function.length is 1 here: it stops counting at the first default.
      @Locked('job:{0}:{1}')
      async withDefault(first: string, second = 'b'): Promise<string> {
        return first + second;
      }
    }
    await bootsAndCloses('express', { providers: [JobsService] });
  });

  it('fails on {0} of a method that takes no argument', async () => {
    @Injectable()
    class JobsService {
      @Locked('job:{0}')
      async nightly(): Promise<string> {
        return 'ran';
      }
    }
    const error = await bootFailure('express', { providers: [JobsService] });
    expect(error).toBeInstanceOf(LockOptionsError);
    expect(error.message).toContain("'@Locked key of JobsService.nightly'");
    expect(error.message).toContain('JobsService.nightly declares no parameters');
  });
});
