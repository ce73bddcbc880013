/** The disruption controller (orchestration around the pure core in `src/disruption`). */
export * from './controller.ts';
export * from './input.ts';
export * from './metrics.ts';
export * from './orchestration.ts';
export * from './validation.ts';
