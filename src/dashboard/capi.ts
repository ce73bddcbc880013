/**
 * CAPI: the dashboard's KarpenterMachinePool rows from a management cluster's informers (KarpenterMachinePools and
 * MachinePools). Used by `capenter start --capi` (the stack's management informers) and `capenter controller
 * --capi-management-kubeconfig` (informers of its own on the management cluster: two watches, whatever the number
 * of viewers).
 */
import type { KarpenterMachinePool } from '../apis/capi.ts';
import type { SharedInformers } from '../kube/informer.ts';
import { Resources } from '../kube/resources.ts';
import type { DashboardHub } from './hub.ts';
import { type MachinePoolView, machinePoolViews } from './view.ts';

/** The rows' source over `informers` (registers the two informers; start them as usual). */
export function machinePoolSource(informers: SharedInformers): {
  machinePools: () => MachinePoolView[];
  /** Tells `hub` of every change of either kind; returns the unsubscribe. */
  follow(hub: DashboardHub): () => void;
} {
  const kmps = informers.informerFor(Resources.KarpenterMachinePool);
  const mps = informers.informerFor(Resources.MachinePool);
  return {
    machinePools: () => machinePoolViews(kmps.cache.list() as KarpenterMachinePool[], mps.cache.list()),
    follow(hub) {
      const notify = (): void => hub.notify();
      const offs = [kmps, mps].map((i) => i.on({ add: notify, update: notify, delete: notify }));
      return () => {
        for (const off of offs) off();
      };
    },
  };
}
