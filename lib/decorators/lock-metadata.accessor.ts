// Reads what @Locked recorded on a method, labelling its locks by their key template the first time.
import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { LockedMetadata } from './locked-metadata';
import { LOCKED_METADATA } from '../lock.constants';

/** Metadata already given its default label (once per @Locked method, for the process). */
const labelled = new WeakSet<LockedMetadata>();

/** The one place that reads what @Locked recorded on a method. */
@Injectable()
export class LockMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  getLockedMetadata(method: Function): LockedMetadata | undefined {
    const metadata = this.reflector.get<LockedMetadata | undefined>(LOCKED_METADATA, method);
    if (metadata && !labelled.has(metadata)) labelByTemplate(metadata);
    return metadata;
  }
}

/**
 * A @Locked method's locks are named in metrics and events by its key template (`order:{params.id}`),
 * unless its options give a `label`: one time series per method, never one per rendered key. Key
 * functions have no template and stay unlabelled.
 *
 * Set on the metadata object itself, the first time it is read (the explorer reads every @Locked method at
 * startup): the interceptor passes these options on, and the provider-method runner holds the same object.
 * The options object is the library's own (made by createLockedMetadata), and the label is a pure function
 * of the decorator's arguments, so every application of the process would set the same value.
 */
function labelByTemplate(metadata: LockedMetadata): void {
  labelled.add(metadata);
  if (metadata.acquireOptions.label !== undefined) return;
  const template = templateOf(metadata.key.description);
  if (template !== undefined) metadata.acquireOptions.label = template;
}

/** A compiled key's description is its template(s) as JSON, or words for a key function. */
function templateOf(description: string): string | undefined {
  try {
    const templates: unknown = JSON.parse(description);
    if (typeof templates === 'string') return templates;
    if (Array.isArray(templates) && templates.every((template) => typeof template === 'string'))
      return templates.join(',');
  } catch {
    // A key function: no template to name it by.
  }
  return undefined;
}
