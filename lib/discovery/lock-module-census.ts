// Warns once at bootstrap when LockModule.forRoot / forRootAsync is imported more than once in an application.
import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import type { Module } from '@nestjs/core/injector/module';
import { describeStore } from '../options/store-description';
import { LOCK_OPTIONS } from '../lock.constants';
import type { ResolvedLockOptions } from '../options/lock-options.interface';

/** One configured LockModule of the application, as Nest's container holds it. */
interface ConfiguredLockModule {
  readonly module: Module;
  readonly options: ResolvedLockOptions;
}

/**
 * Warns, once per application at bootstrap, when LockModule.forRoot / forRootAsync is imported more than once.
 * Nest makes a separate module for each import (even with equal options), so each has its own LockService and
 * store: two in-process stores never exclude each other, and the LockService a provider gets depends on which
 * import its module sees. Nothing fails, so without this warning the split is silent (a feature module that
 * imports `LockModule.forRoot()` again beside the root's Redis one).
 * Not an error: an application may mean it (a module of a third party that brings its own LockModule). Counted
 * at bootstrap only: a LockModule loaded later (LazyModuleLoader) is not.
 */
@Injectable()
export class LockModuleCensus implements OnModuleInit {
  private readonly logger = new Logger('LockModule');

  constructor(private readonly modules: ModulesContainer) {}

  onModuleInit(): void {
    const modules = [...this.modules.values()];
    const configured = configuredModules(modules);
    // Every LockModule has a census; the first in the container speaks for all of them.
    if (configured.length < 2 || configured[0].module.providers.get(LockModuleCensus)?.instance !== this) return;
    const described = configured.map(
      ({ module, options }) => `${describeStore(options)} (${describeImport(module, modules)})`,
    );
    this.logger.warn(
      `LockModule.forRoot / forRootAsync is imported ${configured.length} times in this application, and each ` +
        `import is a LockModule of its own, with its own LockService and store: ${described.join('; ')}. ` +
        'A lock taken through one does not exclude the holders of another unless both reach the same Redis with the ' +
        'same keyPrefix (in-process stores never do), and which one a @Locked method uses is not defined. Import it ' +
        'in one place: once with isGlobal: true, or in a module of ' +
        'yours that exports LockModule and that the others import.',
    );
  }
}

function configuredModules(modules: readonly Module[]): ConfiguredLockModule[] {
  const configured: ConfiguredLockModule[] = [];
  for (const module of modules) {
    // LOCK_OPTIONS is a provider of LockModule alone; other modules only see it through their imports.
    const options = module.providers.get(LOCK_OPTIONS)?.instance as ResolvedLockOptions | null | undefined;
    if (options != null) configured.push({ module, options });
  }
  return configured;
}

/** Who imports it (not known for a global module: Nest binds a global module into every module). */
function describeImport(module: Module, modules: readonly Module[]): string {
  if (module.isGlobal) return 'isGlobal';
  const importers = modules
    .filter((candidate) => candidate.imports.has(module))
    .map((candidate) => candidate.metatype.name);
  if (importers.length === 0) return 'the root module';
  return `imported by ${importers.join(', ')}`;
}
