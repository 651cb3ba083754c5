export * from './method-arity';
export * from './placeholder-checks';
export * from './route-params';
export * from './route-paths';
