/** Provisioning: the batcher, the provisioner, its trigger controller, NodeClaim construction and metrics. */
export * from './batcher.ts';
export * from './input.ts';
export * from './launcher.ts';
export * from './metrics.ts';
export * from './nodeclaim.ts';
export * from './provisioner.ts';
export * from './trigger.ts';
