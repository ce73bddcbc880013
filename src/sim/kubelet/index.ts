/** The kubelet and pod-GC stand-ins of the simulated cluster. */
export * from './kubelet.ts';
export * from './podgc.ts';
