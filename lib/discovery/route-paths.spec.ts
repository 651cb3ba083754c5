import {
  Controller,
  Get,
  Post,
  Sse,
  Version,
  VERSION_NEUTRAL,
  VersioningType,
  type VersioningOptions,
} from '@nestjs/common';
import { Module } from '@nestjs/common';
import { MODULE_PATH } from '@nestjs/common/constants';
import { httpRouteOf, isHttpRoute, modulePathOf, type RouteSettings } from './route-paths';

function settings(prefix = '', versioning?: VersioningOptions): RouteSettings {
  return { getGlobalPrefix: () => prefix, getVersioning: () => versioning };
}

@Controller('orders')
class OrdersController {
  @Post(':id')
  pay() {}

  @Get()
  list() {}

  @Get(['latest', '/by-id/:id/'])
  find() {}

  @Sse(':id/events')
  events() {}

  @Version(['2', VERSION_NEUTRAL])
  @Get(':id/v')
  versioned() {}

  notARoute() {}
}

@Controller(['shops/:shopId', 'stores/:shopId'])
class ShopsController {
  @Get('items/:itemId')
  item() {}
}

@Controller()
class RootController {
  @Get()
  root() {}
}

@Controller({ path: 'members', version: '1' })
class MembersController {
  @Post(':id')
  add() {}
}

const route = (controller: Function, name: string, modulePath?: string, routeSettings = settings()) =>
  httpRouteOf(controller, (controller.prototype as Record<string, Function>)[name], modulePath, routeSettings);

describe('httpRouteOf', () => {
  it('joins the controller and method paths, with the request method', () => {
    expect(route(OrdersController, 'pay')).toEqual({ method: 'POST', paths: ['/orders/:id'] });
    expect(route(OrdersController, 'list')).toEqual({ method: 'GET', paths: ['/orders'] });
    expect(route(OrdersController, 'events')).toEqual({ method: 'GET', paths: ['/orders/:id/events'] });
    expect(route(RootController, 'root')).toEqual({ method: 'GET', paths: ['/'] });
  });

  it('gives one path per controller path and method path', () => {
    expect(route(OrdersController, 'find')?.paths).toEqual(['/orders/latest', '/orders/by-id/:id']);
    expect(route(ShopsController, 'item')?.paths).toEqual([
      '/shops/:shopId/items/:itemId',
      '/stores/:shopId/items/:itemId',
    ]);
  });

  it('puts the global prefix, then the module path, before the controller path', () => {
    expect(route(OrdersController, 'pay', 'orgs/:orgId', settings('api/'))?.paths).toEqual([
      '/api/orgs/:orgId/orders/:id',
    ]);
    expect(route(OrdersController, 'pay', '/orgs/:orgId/', settings('/tenants/:tenant'))?.paths).toEqual([
      '/tenants/:tenant/orgs/:orgId/orders/:id',
    ]);
  });

  it(
    'shows URI versions after the global prefix (the method ' +
      'version first, then the controller one, then the default)',
    () => {
      const uri = { type: VersioningType.URI } as const;
      expect(route(MembersController, 'add', undefined, settings('api', uri))?.paths).toEqual(['/api/v1/members/:id']);
      expect(route(OrdersController, 'versioned', undefined, settings('', uri))?.paths).toEqual([
        '/v2/orders/:id/v',
        '/orders/:id/v',
      ]);
      expect(
        route(OrdersController, 'pay', undefined, settings('', { ...uri, defaultVersion: '3', prefix: 'version-' }))
          ?.paths,
      ).toEqual(['/version-3/orders/:id']);
      expect(route(MembersController, 'add', undefined, settings('', { ...uri, prefix: false }))?.paths).toEqual([
        '/1/members/:id',
      ]);
    },
  );

  it('leaves the path as it is under header versioning', () => {
    expect(
      route(MembersController, 'add', undefined, settings('', { type: VersioningType.HEADER, header: 'x-version' }))
        ?.paths,
    ).toEqual(['/members/:id']);
  });

  it('is undefined for a method that is not an HTTP route', () => {
    expect(route(OrdersController, 'notARoute')).toBeUndefined();
    expect(isHttpRoute(OrdersController.prototype.notARoute)).toBe(false);
    expect(isHttpRoute(OrdersController.prototype.pay)).toBe(true);
  });
});

describe('modulePathOf', () => {
  it("reads RouterModule's path for this application, else the one recorded without an application id", () => {
    @Module({})
    class RoutedModule {}
    expect(modulePathOf(RoutedModule, 'app-1')).toBeUndefined();
    Reflect.defineMetadata(MODULE_PATH, '/legacy', RoutedModule);
    expect(modulePathOf(RoutedModule, 'app-1')).toBe('/legacy');
    Reflect.defineMetadata(MODULE_PATH + 'app-1', '/orgs/:orgId', RoutedModule);
    expect(modulePathOf(RoutedModule, 'app-1')).toBe('/orgs/:orgId');
    expect(modulePathOf(RoutedModule, 'app-2')).toBe('/legacy');
    expect(modulePathOf(undefined, 'app-1')).toBeUndefined();
  });
});
