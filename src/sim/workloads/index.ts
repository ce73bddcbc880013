/**
 * Workload controller stand-ins of the simulated cluster: Deployment → ReplicaSet → Pods, StatefulSet,
 * DaemonSet, Job. {@link WorkloadControllers} starts and stops them together.
 */

import type { SchedulingRules } from '../kubescheduler/rules.ts';
import type { SimController, SimControllerOptions } from './controller.ts';
import { DaemonSetController } from './daemonset.ts';
import { DeploymentController } from './deployment.ts';
import { JobController } from './job.ts';
import { ReplicaSetController } from './replicaset.ts';
import { StatefulSetController } from './statefulset.ts';

export * from './controller.ts';
export * from './daemonset.ts';
export * from './deployment.ts';
export * from './job.ts';
export * from './podowner.ts';
export * from './replicaset.ts';
export * from './statefulset.ts';

/** All workload controllers, sharing one set of informers. */
export class WorkloadControllers {
  readonly deployments: DeploymentController;
  readonly replicaSets: ReplicaSetController;
  readonly statefulSets: StatefulSetController;
  readonly daemonSets: DaemonSetController;
  readonly jobs: JobController;

  /** `opts.rules`: the DaemonSet controller's node fit (the declared face, `kubescheduler/rules.ts`). */
  constructor(opts: SimControllerOptions & { rules: SchedulingRules }) {
    this.deployments = new DeploymentController(opts);
    this.replicaSets = new ReplicaSetController(opts);
    this.statefulSets = new StatefulSetController(opts);
    this.daemonSets = new DaemonSetController(opts);
    this.jobs = new JobController(opts);
  }

  private all(): SimController[] {
    return [this.deployments, this.replicaSets, this.statefulSets, this.daemonSets, this.jobs];
  }

  /** Starts every controller (they begin reconciling once the informers have synced). */
  start(): void {
    for (const c of this.all()) c.start();
  }

  /** Stops every controller. */
  async stop(): Promise<void> {
    await Promise.all(this.all().map((c) => c.stop()));
  }
}
