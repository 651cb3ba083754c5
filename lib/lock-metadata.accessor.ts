import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { LockedMetadata } from './decorators/locked-metadata';
import { LOCKED_METADATA } from './lock.constants';

/** The one place that reads what @Locked recorded on a method. */
@Injectable()
export class LockMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  getLockedMetadata(method: Function): LockedMetadata | undefined {
    return this.reflector.get<LockedMetadata | undefined>(LOCKED_METADATA, method);
  }
}
