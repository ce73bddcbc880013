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
import type { Pod } from '../../apis/core.ts';
import { objectKey } from '../../kube/client.ts';
import { isNotFound } from '../../kube/errors.ts';
import type { Informer } from '../../kube/informer.ts';
import type { ResourceRef } from '../../kube/resources.ts';
import type { ReconcileResult } from '../../kube/workqueue.ts';
import {
  changedFields,
  controllerOwnerRef,
  controllerRef,
  deletionOrder,
  Expectations,
  ensureIndex,
  IndexControllerUID,
  indexByControllerUID,
  isPodActive,
  isPodReady,
  podFromTemplate,
  rfc3339,
  SimController,
  type SimControllerOptions,
  specChanged,
} from './controller.ts';

interface JobStatus {
  active?: number;
  succeeded?: number;
  failed?: number;
  startTime?: string;
  completionTime?: string;
  conditions?: Array<{ type: string; status: string }>;
}

/** The Job controller stand-in. */
export class JobController extends SimController {
  private readonly pods: Informer<'Pod'>;
  private readonly jobs: Informer<'Job'>;
  private readonly expectations: Expectations<Pod>;

  constructor(opts: SimControllerOptions) {
    super('job', opts, 4);
    this.pods = opts.informers.informerFor('Pod');
    this.jobs = opts.informers.informerFor('Job');
    ensureIndex(this.pods.cache, IndexControllerUID, indexByControllerUID);
    this.expectations = new Expectations(opts.clock);
  }

  protected informersUsed(): Array<Informer<ResourceRef>> {
    return [this.pods, this.jobs] as Array<Informer<ResourceRef>>;
  }

  protected register(): Array<() => void> {
    const onPod = (p: Pod): void => {
      this.expectations.observed(objectKey(p));
      const ref = controllerRef(p);
      if (ref?.kind === 'Job') this.enqueueBatched(`${p.metadata.namespace}/${ref.name}`);
    };
    const offPods = this.pods.on({ add: onPod, update: (_o, p) => onPod(p), delete: onPod });
    const offJobs = this.jobs.on({
      add: (j) => this.queue.add(objectKey(j)),
      update: (o, j) => {
        if (specChanged(o, j)) this.queue.add(objectKey(j));
      },
      delete: (j) => this.expectations.forget(objectKey(j)),
    });
    return [offPods, offJobs];
  }

  protected async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const job = this.jobs.cache.get(key);
    if (!job || job.metadata.deletionTimestamp) return undefined;
    const status = (job.status ?? {}) as JobStatus;
    const finished = status.conditions?.some(
      (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
    );
    const ns = job.metadata.namespace ?? 'default';
    const inCache = (k: string) => this.pods.cache.get(k) !== undefined;
    const deleting = this.expectations.pendingDeletes(key, inCache);
    const owned = this.pods.cache.byIndex(IndexControllerUID, job.metadata.uid ?? '');
    const active = owned.filter((p) => isPodActive(p) && !deleting.has(objectKey(p)));
    const creating = this.expectations.pendingCreates(key, inCache);
    const succeeded = Math.max(
      status.succeeded ?? 0,
      owned.filter((p) => p.status?.phase === 'Succeeded').length,
    );
    const failed = Math.max(status.failed ?? 0, owned.filter((p) => p.status?.phase === 'Failed').length);
    const now = rfc3339(this.clock.now());

    if (finished) {
      await this.deletePods(key, active);
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
    const have = active.length + creating.length;
    if (condition || suspended) {
      await this.deletePods(key, active);
    } else if (have < want) {
      const owner = controllerOwnerRef(job, 'batch/v1', 'Job');
      const labels = {
        'batch.kubernetes.io/job-name': job.metadata.name ?? '',
        'batch.kubernetes.io/controller-uid': job.metadata.uid ?? '',
        'job-name': job.metadata.name ?? '',
        'controller-uid': job.metadata.uid ?? '',
      };
      await Promise.all(
        Array.from({ length: want - have }, async () => {
          const pod = podFromTemplate(job.spec.template, {
            namespace: ns,
            owner,
            generateName: `${job.metadata.name}-`,
            extraLabels: labels,
          });
          const created = await this.client.create(pod);
          this.expectations.expectCreate(key, objectKey(created), created);
        }),
      );
    } else if (have > want) {
      await this.deletePods(key, [...active].sort(deletionOrder).slice(0, have - want));
    }

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

  private async deletePods(key: string, pods: Pod[]): Promise<void> {
    await Promise.all(
      pods.map(async (p) => {
        this.expectations.expectDelete(key, objectKey(p));
        try {
          await this.client.delete('Pod', p.metadata.name ?? '', p.metadata.namespace, {
            ...(p.metadata.uid ? { preconditions: { uid: p.metadata.uid } } : {}),
          });
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      }),
    );
  }
}
