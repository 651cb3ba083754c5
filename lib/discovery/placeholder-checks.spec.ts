import { compileLockKey } from '../keys/key-template';
import { argumentIndexProblem, paramsWithoutRouteProblem, routeParamsProblem } from './placeholder-checks';

const placeholders = (key: string | string[]) => compileLockKey(key).placeholders;

describe('routeParamsProblem', () => {
  const route = { method: 'POST', paths: ['/orders/:id'] };

  it('accepts parameters the route declares, and placeholders that are not {params.*}', () => {
    expect(routeParamsProblem(placeholders('order:{params.id}'), route)).toBeUndefined();
    expect(routeParamsProblem(placeholders('order:{params.id.part}'), route)).toBeUndefined();
    expect(routeParamsProblem(placeholders(['b:{body.x}', 'q:{query.y}', 'h:{headers.z}']), route)).toBeUndefined();
  });

  it('names the placeholder, the route and its parameters', () => {
    expect(routeParamsProblem(placeholders('order:{params.orderId}'), route)).toBe(
      '{params.*} placeholders that name a parameter of the route: ' +
        '{params.orderId} is not a parameter of POST /orders/:id (its parameters: :id)',
    );
    expect(routeParamsProblem(placeholders('order:{params.id}'), { method: 'GET', paths: ['/orders'] })).toBe(
      '{params.*} placeholders that name a parameter of the route: ' +
        '{params.id} is not a parameter of GET /orders (no parameters)',
    );
  });

  it('with several paths, names each that lacks the parameter', () => {
    const several = { method: 'GET', paths: ['/a/:id', '/b', '/c/:other'] };
    expect(routeParamsProblem(placeholders('x:{params.id}'), several)).toBe(
      '{params.*} placeholders that name a parameter of the route ' +
        'in each of its paths: {params.id} is not a parameter of ' +
        'GET /b (no parameters), nor of GET /c/:other (its parameters: :other)',
    );
  });

  it('lets any name pass for a path with an unnamed wildcard', () => {
    expect(routeParamsProblem(placeholders('x:{params.path}'), { method: 'GET', paths: ['/files/*'] })).toBeUndefined();
  });

  it('refuses {params} alone, the whole object', () => {
    expect(routeParamsProblem(placeholders('x:{params}'), route)).toBe(
      '{params.*} placeholders that name a parameter of the route: ' +
        '{params} names none of POST /orders/:id (its parameters: :id)',
    );
  });
});

describe('paramsWithoutRouteProblem', () => {
  it('refuses {params.*} only', () => {
    expect(paramsWithoutRouteProblem(placeholders('x:{data.id}'))).toBeUndefined();
    expect(paramsWithoutRouteProblem(placeholders(['x:{data.id}', 'y:{params.id}']))).toContain(
      '{params.id} reads route parameters',
    );
  });
});

describe('argumentIndexProblem', () => {
  it('accepts indexes below the arity, and anything when the arity is unknown', () => {
    expect(argumentIndexProblem(placeholders('x:{0}:{1.id}'), 'S.run', 2)).toBeUndefined();
    expect(argumentIndexProblem(placeholders('x:{9}'), 'S.run', undefined)).toBeUndefined();
  });

  it('names the method, what it declares and the first placeholder beyond it', () => {
    expect(argumentIndexProblem(placeholders(['x:{0}', 'y:{2.id}', 'z:{3}']), 'S.run', 2)).toBe(
      "argument placeholders within the method's parameters: " +
        'S.run declares 2 parameters ({0} to {1}), so {2.id} reads ' +
        'an argument it does not declare (declare it, even unused, if its callers pass it)',
    );
    expect(argumentIndexProblem(placeholders('x:{1}'), 'S.one', 1)).toContain(
      'S.one declares 1 parameter ({0}), so {1}',
    );
    expect(argumentIndexProblem(placeholders('x:{0}'), 'S.none', 0)).toContain('S.none declares no parameters, so {0}');
  });
});
