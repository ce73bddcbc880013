/**
 * Job controller stand-in (kube-controller-manager `job`): runs `parallelism` pods (default 1) at a time
 * until `completions` pods have succeeded (without `completions`: until one succeeded and none is active),
 * then sets the `Complete` condition and `completionTime`. Failed pods count towards `backoffLimit`
 * (default 6); above it the Job gets `Failed` / `BackoffLimitExceeded` and its active pods are deleted.
 * `suspend: true` deletes active pods and creates none. Pods (`generateName: <job>-`) carry the labels
 * `batch.kubernetes.io/job-name`, `batch.kubernetes.io/controller-uid`, `job-name`, `controller-uid` and an
 * owner reference. Deleted or evicted pods are replaced.
 *
 * Pods only finish when the kubelet stand-in is told how long they run: the pod annotation
 * `sim.capenter.dev/run-seconds` (put it on the Job's pod template), optionally with
 * `sim.capenter.dev/exit-code`. Not simulated: Indexed completion mode (pods are NonIndexed), pod failure
 * policy, backoff delays between retries, tracking finalizers, `activeDeadlineSeconds`, TTL after finished.
 */
import type { ReconcileResult } from '../../kube/workqueue.ts';
import {
  changedFields,
  controllerOwnerRef,
  isPodReady,
  podFromTemplate,
  rfc3339,
  type SimControllerOptions,
} from './controller.ts';
import { PodOwnerController, settleAll } from './podowner.ts';

interface JobStatus {
  active?: number;
  succeeded?: number;
  failed?: number;
  startTime?: string;
  completionTime?: string;
  conditions?: Array<{ type: string; status: string }>;
}

/** The Job controller stand-in. */
export class JobController extends PodOwnerController<'Job'> {
  constructor(opts: SimControllerOptions) {
    super('job', opts, 'Job');
  }

  protected async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const job = this.owners.cache.get(key);
    if (!job || job.metadata.deletionTimestamp) return undefined;
    const status = (job.status ?? {}) as JobStatus;
    const finished = status.conditions?.some(
      (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
    );
    const ns = job.metadata.namespace ?? 'default';
    const { owned, active, creating } = this.ownedPods(key, job.metadata.uid);
    const succeeded = Math.max(
      status.succeeded ?? 0,
      owned.filter((p) => p.status?.phase === 'Succeeded').length,
    );
    const failed = Math.max(status.failed ?? 0, owned.filter((p) => p.status?.phase === 'Failed').length);
    const now = rfc3339(this.clock.now());

    if (finished) {
      await settleAll(active.map((p) => this.deletePod(key, p)));
      return undefined;
    }
    const completions = typeof job.spec.completions === 'number' ? job.spec.completions : undefined;
    const parallelism = job.spec.parallelism ?? 1;
    const backoffLimit = typeof job.spec.backoffLimit === 'number' ? job.spec.backoffLimit : 6;
    const suspended = job.spec.suspend === true;

    let condition: { type: string; reason: string; message: string } | undefined;
    if (failed > backoffLimit)
      condition = {
        type: 'Failed',
        reason: 'BackoffLimitExceeded',
        message: 'Job has reached the specified backoff limit',
      };
    else if (completions !== undefined ? succeeded >= completions : succeeded > 0 && active.length === 0)
      condition = {
        type: 'Complete',
        reason: 'CompletionsReached',
        message: 'Reached expected number of succeeded pods',
      };

    let want = 0;
    if (!condition && !suspended) {
      want =
        completions !== undefined
          ? Math.min(parallelism, completions - succeeded)
          : succeeded > 0
            ? 0
            : parallelism;
    }
    // a finished or suspended Job wants 0 pods: every active one is deleted
    const owner = controllerOwnerRef(job, 'batch/v1', 'Job');
    const labels = {
      'batch.kubernetes.io/job-name': job.metadata.name ?? '',
      'batch.kubernetes.io/controller-uid': job.metadata.uid ?? '',
      'job-name': job.metadata.name ?? '',
      'controller-uid': job.metadata.uid ?? '',
    };
    await this.scalePods(key, want, { active, creating }, () =>
      podFromTemplate(job.spec.template, {
        namespace: ns,
        owner,
        generateName: `${job.metadata.name}-`,
        extraLabels: labels,
      }),
    );

    const desired: Record<string, unknown> = {
      active: want,
      succeeded,
      failed,
      ready: active.filter(isPodReady).length,
      startTime: status.startTime ?? now,
    };
    if (condition) {
      desired.conditions = [
        ...(status.conditions ?? []).filter((c) => c.type !== condition.type),
        {
          type: condition.type,
          status: 'True',
          reason: condition.reason,
          message: condition.message,
          lastProbeTime: now,
          lastTransitionTime: now,
        },
      ];
      if (condition.type === 'Complete') desired.completionTime = now;
    }
    const patch = changedFields(status as Record<string, unknown>, desired);
    if (patch) await this.client.patchStatus('Job', job.metadata.name ?? '', ns, { status: patch });
    return undefined;
  }
}
