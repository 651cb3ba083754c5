export * from './lock-event';
export * from './lock-info';
export {
  LOCK_ATTRIBUTES,
  LOCK_INSTRUMENTATION_SCOPE,
  LOCK_METRICS,
  LOCK_WAIT_SPAN,
  UNLABELLED,
} from './lock-telemetry';
