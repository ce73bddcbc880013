/**
 * The client layer: everything controllers need to talk to a Kubernetes API server (embedded or real).
 * Re-exports the public API of `kube/`.
 */
export * from './backoff.ts';
export * from './cache.ts';
export * from './client.ts';
export * from './clock.ts';
export * from './errors.ts';
export * from './events.ts';
export * from './informer.ts';
export * from './intern.ts';
export * from './leaderelection.ts';
export * from './resources.ts';
export * from './retry.ts';
export * from './selectors.ts';
export type * from './types.ts';
export * from './workqueue.ts';
