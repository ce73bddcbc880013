/** The kube-scheduler stand-in of the simulated cluster (see `scheduler.ts`, filters in `filters.ts`, the injected rules in `rules.ts`). */
export * from './filters.ts';
export * from './rules.ts';
export * from './scheduler.ts';
