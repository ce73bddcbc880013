/** The kube-scheduler stand-in of the simulated cluster (see `scheduler.ts`, predicates in `filters.ts`). */
export * from './filters.ts';
export * from './scheduler.ts';
