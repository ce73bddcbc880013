/** Cluster state: the {@link Cluster} and pod predicates. */
export * from './cluster.ts';
export * from './pods.ts';
export * from './podscheduling.ts';
