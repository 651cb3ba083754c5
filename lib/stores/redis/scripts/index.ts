// The Lua scripts of the Redis stores, one per file. Each runs atomically on one Redis, in one round trip, and
// every key it touches shares the lock's hash tag (see LockKeyNamer), so they run unchanged on Redis Cluster;
// commands that could fail on foreign data use pcall, so a failed script never leaves a half-made grant.
// The order below is the order lockScript() registers them in: a batch of calls names each by that place.
export * from './acquire.script';
export * from './extend.script';
export * from './release.script';
export * from './raise-fences.script';
export * from './undo.script';
export * from './handover.script';
export * from './inspect.script';
export * from './force-release.script';
export * from './permit-acquire.script';
export * from './permit-extend.script';
export * from './permit-release.script';
export * from './permit-undo.script';
export * from './permit-raise-fence.script';
export * from './write-acquire.script';
export * from './withdraw.script';
export * from './server-id.script';
export * from './mark-awaited.lua';
export * from './next-fence.lua';
export * from './permit-helpers.lua';
