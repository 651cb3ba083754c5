import { ConsoleLogger, DynamicModule, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  LockModule,
  LockModuleOptions,
  LockNotAcquiredError,
  LockOptionsError,
  type LockOptionsFactory,
  LockService,
} from '../../lib';
import { uniqueKey } from '../support/lock-app';
import { StoreUnderTest, storeRows } from '../support/store-matrix';
import { rejectionOf } from './helpers/timing';

/** Stands in for an application's ConfigService: where the lock settings come from. */
@Injectable()
class LockSettings {
  static store: StoreUnderTest;
  /** A setting whose effect is visible: a busy key fails at once instead of after the 10 s default wait. */
  readonly wait = 0;
  lockOptions(): LockModuleOptions {
    return LockSettings.store.options({ wait: this.wait });
  }
}

@Module({ providers: [LockSettings], exports: [LockSettings] })
class SettingsModule {}

/** The useClass / useExisting form: Nest calls create() on it (the library's LockOptionsFactory). */
@Injectable()
class LockOptionsFromSettings implements LockOptionsFactory {
  constructor(private readonly settings: LockSettings) {}
  create(): LockModuleOptions {
    return this.settings.lockOptions();
  }
}

@Module({ imports: [SettingsModule], providers: [LockOptionsFromSettings], exports: [LockOptionsFromSettings] })
class OptionsFactoryModule {}

/** A feature module that uses LockService without importing LockModule (only works when it is global). */
@Injectable()
class FeatureService {
  constructor(readonly locks: LockService) {}
}
@Module({ providers: [FeatureService] })
class FeatureModule {}

/** Boots `imports`, checks that the module's options took effect, and closes it. */
async function expectWaitZeroApplied(
  imports: DynamicModule[],
  getLocks?: (get: <T>(type: new (...args: never[]) => T) => T) => LockService,
): Promise<void> {
  const module = await Test.createTestingModule({ imports })
    .setLogger(new ConsoleLogger({ logLevels: ['error'] }))
    .compile();
  await module.init();
  try {
    const locks = getLocks ? getLocks((type) => module.get(type, { strict: false })) : module.get(LockService);
    const key = uniqueKey('async-options');
    const holder = await locks.acquire(key);
    const startedAt = performance.now();
    expect(await rejectionOf(locks.acquire(key))).toBeInstanceOf(LockNotAcquiredError);
    // wait: 0 from the settings, not the 10 s default (the bound is half of it, for a stall of the loaded machine).
    expect(performance.now() - startedAt).toBeLessThan(5_000);
    await holder.release();
  } finally {
    await module.close();
  }
}

describe.each(storeRows())('LockModule.forRootAsync (%s store)', (_name, fixture) => {
  beforeAll(async () => {
    LockSettings.store = await fixture.setup();
  });
  afterAll(() => LockSettings.store?.teardown());

  it('useFactory + inject + imports (a ConfigService-like provider)', async () => {
    await expectWaitZeroApplied([
      LockModule.forRootAsync({
        imports: [SettingsModule],
        inject: [LockSettings],
        useFactory: (settings: LockSettings) => settings.lockOptions(),
      }),
    ]);
  });

  it('an async useFactory', async () => {
    await expectWaitZeroApplied([
      LockModule.forRootAsync({
        imports: [SettingsModule],
        inject: [LockSettings],
        useFactory: async (settings: LockSettings) => {
          await new Promise((resolve) => setImmediate(resolve));
          return settings.lockOptions();
        },
      }),
    ]);
  });

  it('useClass', async () => {
    await expectWaitZeroApplied([
      LockModule.forRootAsync({ imports: [SettingsModule], useClass: LockOptionsFromSettings }),
    ]);
  });

  it('useExisting', async () => {
    await expectWaitZeroApplied([
      LockModule.forRootAsync({ imports: [OptionsFactoryModule], useExisting: LockOptionsFromSettings }),
    ]);
  });

  it('isGlobal makes LockService injectable in modules that do not import LockModule', async () => {
    await expectWaitZeroApplied(
      [
        LockModule.forRootAsync({
          isGlobal: true,
          imports: [SettingsModule],
          inject: [LockSettings],
          useFactory: (settings: LockSettings) => settings.lockOptions(),
        }),
        { module: FeatureModule },
      ],
      (get) => get(FeatureService).locks,
    );
  });
});

describe('LockModule.forRootAsync without options', () => {
  it('a factory that returns nothing fails the bootstrap with a LockOptionsError, not an in-process store', async () => {
    const warnings: string[] = [];
    class RecordingLogger extends ConsoleLogger {
      override warn(message: unknown): void {
        warnings.push(String(message));
      }
    }
    const compiled = Test.createTestingModule({
      imports: [LockModule.forRootAsync({ useFactory: () => undefined as unknown as LockModuleOptions })],
    })
      .setLogger(new RecordingLogger({ logLevels: ['error', 'warn'] }))
      .compile();
    const error = await rejectionOf(compiled);
    expect(error).toBeInstanceOf(LockOptionsError);
    expect((error as LockOptionsError).option).toBe('options');
    // The old reading of undefined: "No Redis configured … using the in-process lock store".
    expect(warnings).toEqual([]);
  });
});
