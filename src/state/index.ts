/** Cluster state: the {@link Cluster}, pod predicates and the kwok Node writer adapter. */
export * from './cluster.ts';
export * from './kwoknodes.ts';
export * from './pods.ts';
