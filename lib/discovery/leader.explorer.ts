/**
 * Finds every @Leader method of the application, checks them at startup, and starts their campaigns once the
 * application has bootstrapped. LockService ends them at shutdown, with every other leadership it runs.
 */
import { Injectable, type OnApplicationBootstrap, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, ModulesContainer } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import { type LeaderMetadata, leaderMetadataOf } from '../decorators/leader-metadata';
import { LockOptionsError } from '../errors';
import { LockService } from '../lock.service';

/** One @Leader method of a provider instance, checked. */
interface LeaderMethod {
  readonly metadata: LeaderMetadata;
  readonly instance: object;
  readonly method: Function;
}

/**
 * Checked at onModuleInit, so a mistake fails the bootstrap (LockOptionsError) before anything campaigns:
 * the method belongs to a singleton provider (a request-scoped one is built per request, a transient one once
 * per consumer: neither is one candidate of this application), and no two methods of the application lead the
 * same name (they would compete with each other inside one instance). Started at onApplicationBootstrap, once
 * every module's onModuleInit has run, so a leader's work finds the application initialised.
 *
 * Each LockModule import has its own explorer, and each scans the whole application: a method is claimed, once
 * per application, by the first explorer that checks it, and only that explorer starts it (two would run one
 * method twice at once in one process, competing with itself).
 */
@Injectable()
export class LeaderExplorer implements OnModuleInit, OnApplicationBootstrap {
  private methods: LeaderMethod[] = [];

  constructor(
    private readonly discoveryService: DiscoveryService,
    private readonly metadataScanner: MetadataScanner,
    private readonly lockService: LockService,
    private readonly modulesContainer: ModulesContainer,
  ) {}

  onModuleInit(): void {
    const byName = new Map<string, LeaderMethod>();
    for (const wrapper of [...this.discoveryService.getProviders(), ...this.discoveryService.getControllers()]) {
      for (const found of this.leaderMethodsOf(wrapper)) {
        const first = byName.get(found.metadata.name);
        if (first) {
          throw new LockOptionsError(
            `@Leader name of ${found.metadata.label}`,
            found.metadata.name,
            `a name no other @Leader method of the application leads: ${first.metadata.label} already leads it ` +
              '(one method per leadership; two would compete with each other inside one instance)',
          );
        }
        byName.set(found.metadata.name, found);
      }
    }
    this.methods = [...byName.values()].filter(({ instance, method }) =>
      claim(this.modulesContainer, instance, method),
    );
  }

  onApplicationBootstrap(): void {
    for (const { metadata, instance, method } of this.methods) {
      this.lockService.lead(metadata.name, (term) => method.call(instance, term) as unknown, metadata.options);
    }
  }

  private leaderMethodsOf(wrapper: InstanceWrapper): LeaderMethod[] {
    const prototype = prototypeOf(wrapper);
    if (!prototype) return [];
    const found: LeaderMethod[] = [];
    for (const name of this.metadataScanner.getAllMethodNames(prototype)) {
      const method = (prototype as Record<string, unknown>)[name];
      const metadata = leaderMetadataOf(method);
      if (!metadata) continue;
      if (!wrapper.isDependencyTreeStatic() || wrapper.isTransient) {
        throw new LockOptionsError(
          '@Leader',
          metadata.label,
          'a method of a singleton provider: this provider is request-scoped or transient (or depends on a ' +
            'request-scoped one), so it is no single candidate of ' +
            'the application; move the method to a singleton service',
        );
      }
      const instance: unknown = wrapper.instance;
      if (typeof instance !== 'object' || instance === null) continue;
      found.push({ metadata, instance, method: method as Function });
    }
    return found;
  }
}

/** The methods claimed in each application (its container), by instance. */
const claims = new WeakMap<ModulesContainer, WeakMap<object, Set<Function>>>();

/** Claims `method` of `instance` for the caller's explorer: false when another explorer of the application has. */
function claim(application: ModulesContainer, instance: object, method: Function): boolean {
  let byInstance = claims.get(application);
  if (!byInstance) claims.set(application, (byInstance = new WeakMap()));
  let methods = byInstance.get(instance);
  if (!methods) byInstance.set(instance, (methods = new Set()));
  if (methods.has(method)) return false;
  methods.add(method);
  return true;
}

/** The prototype holding the class's methods: from the instance, or from the class before it exists. */
function prototypeOf(wrapper: InstanceWrapper): object | undefined {
  const instance: unknown = wrapper.instance;
  if (typeof instance === 'object' && instance !== null) {
    return (Object.getPrototypeOf(instance) as object | null) ?? undefined;
  }
  if (!wrapper.isNotMetatype && typeof wrapper.metatype === 'function') return wrapper.metatype.prototype as object;
  return undefined;
}
