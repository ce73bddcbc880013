/**
 * The default assembly of the simulator for capenter: `src/sim`'s simulated cluster and CAPI two-cluster
 * environment with capenter's rules injected (`rules.ts`, the declared face). `capenter start`, the embedded
 * stacks and the test harnesses start their clusters here, so none of them names the rules; sim itself never
 * imports capenter's code.
 */
import {
  type CAPIEnvironment,
  type CAPIEnvironmentOptions as SimCAPIEnvironmentOptions,
  startCAPIEnvironment as startCAPIEnvironmentWithRules,
} from '../sim/capi/environment.ts';
import {
  type SimulatedClusterOptions as SimClusterOptions,
  type SimulatedCluster,
  startSimulatedCluster as startSimulatedClusterWithRules,
} from '../sim/cluster.ts';
import { schedulingRules } from './rules.ts';

export { capenterCRDs } from '../sim/cluster.ts';
export type { CAPIEnvironment, SimulatedCluster };

/** Options of {@link startSimulatedCluster}: sim's, without the rules (capenter's are injected). */
export type SimulatedClusterOptions = Omit<SimClusterOptions, 'rules'>;

/** Options of {@link startCAPIEnvironment}: sim's, without the rules (capenter's are injected). */
export type CAPIEnvironmentOptions = Omit<SimCAPIEnvironmentOptions, 'rules'>;

/**
 * Starts sim's simulated cluster (`sim/cluster.ts` `startSimulatedCluster`: API server, CRDs, stand-ins) with the
 * scheduling core's rules in its kube-scheduler and DaemonSet stand-ins. Resolves once the informers have synced;
 * throws when the port cannot be bound or a CRD is invalid (the server is stopped first).
 */
export function startSimulatedCluster(opts: SimulatedClusterOptions = {}): Promise<SimulatedCluster> {
  return startSimulatedClusterWithRules({ ...opts, rules: schedulingRules });
}

/**
 * Starts sim's CAPI environment (`sim/capi/environment.ts` `startCAPIEnvironment`: management API server with the
 * CAPI/CAPA CRDs, the MachinePool stand-in, and a workload cluster as {@link startSimulatedCluster} starts it).
 */
export function startCAPIEnvironment(opts: CAPIEnvironmentOptions = {}): Promise<CAPIEnvironment> {
  return startCAPIEnvironmentWithRules({ ...opts, rules: schedulingRules });
}
