export * from './deployments.ts';
export * from './provider.ts';
export * from './scaler.ts';
