import { routeParamsOf } from './route-params';

const names = (path: string) => routeParamsOf(path).names;

describe('routeParamsOf', () => {
  it('reads :name parameters in path order, each once', () => {
    expect(names('/orders/:id')).toEqual(['id']);
    expect(names('/shops/:shopId/orders/:id')).toEqual(['shopId', 'id']);
    expect(names('/a/:id/b/:id')).toEqual(['id']);
    expect(routeParamsOf('/orders/:id').unnamed).toBe(false);
  });

  it('finds none in a path without parameters', () => {
    expect(routeParamsOf('/')).toEqual({ names: [], unnamed: false });
    expect(routeParamsOf('')).toEqual({ names: [], unnamed: false });
    expect(routeParamsOf('/orders/latest')).toEqual({ names: [], unnamed: false });
  });

  it('reads several parameters in one segment, split by - or .', () => {
    expect(names('/near/:lat-:lng/radius/:r')).toEqual(['lat', 'lng', 'r']);
    expect(names('/files/:name.:ext')).toEqual(['name', 'ext']);
    expect(names('/:from-:to')).toEqual(['from', 'to']);
  });

  it('reads optional and repeated parameters of path-to-regexp 0.1 and find-my-way', () => {
    expect(routeParamsOf('/items/:id?')).toEqual({ names: ['id'], unnamed: false });
    expect(routeParamsOf('/items/:ids+')).toEqual({ names: ['ids'], unnamed: false });
    expect(routeParamsOf('/items/:rest*')).toEqual({ names: ['rest'], unnamed: false });
  });

  it('reads parameters with a pattern, whose parentheses and escapes are not groups of their own', () => {
    expect(routeParamsOf('/items/:id(\\d+)')).toEqual({ names: ['id'], unnamed: false });
    expect(routeParamsOf('/items/:id(^\\d+).png')).toEqual({ names: ['id'], unnamed: false });
    expect(routeParamsOf('/items/:id((a|b)\\))/:next')).toEqual({ names: ['id', 'next'], unnamed: false });
  });

  it('reads path-to-regexp 8 forms: optional groups, named wildcards, quoted names', () => {
    expect(routeParamsOf('/users{/:id}')).toEqual({ names: ['id'], unnamed: false });
    expect(routeParamsOf('/files/*path')).toEqual({ names: ['path'], unnamed: false });
    expect(routeParamsOf('/files{/*path}')).toEqual({ names: ['path'], unnamed: false });
    expect(routeParamsOf('/:"user-id"/x')).toEqual({ names: ['user-id'], unnamed: false });
    expect(routeParamsOf('/:a*b')).toEqual({ names: ['a', 'b'], unnamed: false });
    expect(names('/:$id')).toEqual(['$id']);
  });

  it('marks unnamed wildcards and groups, whose names depend on the adapter', () => {
    expect(routeParamsOf('/files/*')).toEqual({ names: [], unnamed: true });
    expect(routeParamsOf('/files/(.*)')).toEqual({ names: [], unnamed: true });
    expect(routeParamsOf('/orders/:id/*')).toEqual({ names: ['id'], unnamed: true });
  });

  it('keeps both readings of a name the adapters read differently', () => {
    // path-to-regexp 0.1 reads `\w` (caf), the others identifier characters (café).
    expect(names('/:café')).toEqual(['café', 'caf']);
  });

  it("reads find-my-way's :: as a literal colon, and still counts a name after it", () => {
    expect(routeParamsOf('/time/10::minutes')).toEqual({ names: ['minutes'], unnamed: false });
    expect(routeParamsOf('/a:')).toEqual({ names: [], unnamed: false });
  });
});
