/**
 * Deployment controller stand-in (kube-controller-manager `deployment`): one ReplicaSet per pod template,
 * named `<deployment>-<pod-template-hash>` with the `pod-template-hash` label on the RS, its selector and
 * its template, owned by the Deployment (`controller: true`, `blockOwnerDeletion: true`) and annotated
 * `deployment.kubernetes.io/revision`. The RS matching the current template gets `spec.replicas`, so
 * scaling (also through the `scale` subresource) flows down. Status (replicas, updatedReplicas,
 * readyReplicas, availableReplicas, unavailableReplicas, observedGeneration, Available/Progressing
 * conditions) is summed from the ReplicaSets.
 *
 * Simplification: a template change is rolled out at once — the new RS is scaled to `spec.replicas` and
 * every old RS to 0 (no maxSurge/maxUnavailable pacing); `paused` stops template rollouts but not scaling;
 * old RSes beyond `revisionHistoryLimit` are deleted. The hash is FNV-32a over the template's canonical
 * JSON, safe-encoded like kubernetes (values differ from a real cluster's).
 */
import type { Deployment, PodTemplateSpec, ReplicaSet } from '../../apis/core.ts';
import { objectKey } from '../../kube/client.ts';
import { isAlreadyExists, isNotFound } from '../../kube/errors.ts';
import type { Informer } from '../../kube/informer.ts';
import type { ResourceRef } from '../../kube/resources.ts';
import type { ReconcileResult } from '../../kube/workqueue.ts';
import {
  changedFields,
  controllerOwnerRef,
  controllerRef,
  ensureIndex,
  fnv32a,
  IndexControllerUID,
  indexByControllerUID,
  rfc3339,
  SimController,
  type SimControllerOptions,
  safeEncode,
  specChanged,
  stableStringify,
} from './controller.ts';

/** Label carrying the template hash on ReplicaSets and their pods. */
export const LabelPodTemplateHash = 'pod-template-hash';
/** Revision annotation on Deployments and ReplicaSets. */
export const AnnotationRevision = 'deployment.kubernetes.io/revision';

/** The `pod-template-hash` of a pod template (FNV-32a of its canonical JSON, safe-encoded). */
export function podTemplateHash(template: PodTemplateSpec): string {
  return safeEncode(String(fnv32a(stableStringify(withoutHash(template)))));
}

function withoutHash(t: PodTemplateSpec): PodTemplateSpec {
  const labels = { ...(t.metadata?.labels ?? {}) };
  delete labels[LabelPodTemplateHash];
  return { ...t, metadata: { ...(t.metadata ?? {}), labels } };
}

/** True when two templates are equal apart from the `pod-template-hash` label (`EqualIgnoreHash`). */
export function templatesEqualIgnoringHash(a: PodTemplateSpec, b: PodTemplateSpec): boolean {
  return stableStringify(withoutHash(a)) === stableStringify(withoutHash(b));
}

/** The Deployment controller stand-in. */
export class DeploymentController extends SimController {
  private readonly deployments: Informer<'Deployment'>;
  private readonly replicaSets: Informer<'ReplicaSet'>;

  constructor(opts: SimControllerOptions) {
    super('deployment', opts, 4);
    this.deployments = opts.informers.informerFor('Deployment');
    this.replicaSets = opts.informers.informerFor('ReplicaSet');
    ensureIndex(this.replicaSets.cache, IndexControllerUID, indexByControllerUID);
  }

  protected informersUsed(): Array<Informer<ResourceRef>> {
    return [this.deployments, this.replicaSets] as Array<Informer<ResourceRef>>;
  }

  protected register(): Array<() => void> {
    const onRs = (rs: ReplicaSet): void => {
      const ref = controllerRef(rs);
      if (ref?.kind === 'Deployment') this.enqueueBatched(`${rs.metadata.namespace}/${ref.name}`);
    };
    const offRs = this.replicaSets.on({ add: onRs, update: (_o, rs) => onRs(rs), delete: onRs });
    const offD = this.deployments.on({
      add: (d) => this.queue.add(objectKey(d)),
      update: (o, d) => {
        if (specChanged(o, d)) this.queue.add(objectKey(d));
      },
    });
    return [offRs, offD];
  }

  protected async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const d = this.deployments.cache.get(key);
    if (!d || d.metadata.deletionTimestamp) return undefined;
    const ns = d.metadata.namespace ?? 'default';
    const owned = this.replicaSets.cache
      .byIndex(IndexControllerUID, d.metadata.uid ?? '')
      .filter((rs) => !rs.metadata.deletionTimestamp);
    const replicas = d.spec.replicas ?? 1;
    const revisionOf = (rs: ReplicaSet) => Number(rs.metadata.annotations?.[AnnotationRevision] ?? 0) || 0;
    const maxRevision = Math.max(0, ...owned.map(revisionOf));

    let current = owned.find((rs) => templatesEqualIgnoringHash(rs.spec.template, d.spec.template));
    if (!current && d.spec.paused === true) current = owned.find((rs) => revisionOf(rs) === maxRevision);
    if (!current) {
      current = await this.createReplicaSet(d, maxRevision + 1);
      if (!current) return { requeueAfter: 1 };
    } else if ((current.spec.replicas ?? 1) !== replicas) {
      await this.scale(current, replicas);
    }
    for (const rs of owned) {
      if (rs === current || rs.metadata.name === current.metadata.name) continue;
      if ((rs.spec.replicas ?? 1) !== 0) await this.scale(rs, 0);
    }
    // history cleanup: old, empty RSes beyond revisionHistoryLimit
    const limit = Number(d.spec.revisionHistoryLimit ?? 10);
    const old = owned
      .filter((rs) => rs.metadata.name !== current.metadata.name && (rs.spec.replicas ?? 1) === 0)
      .filter((rs) => Number((rs.status as { replicas?: number } | undefined)?.replicas ?? 0) === 0)
      .sort((a, b) => revisionOf(a) - revisionOf(b));
    for (const rs of old.slice(0, Math.max(0, old.length - limit)))
      await this.client.tryDelete('ReplicaSet', rs.metadata.name ?? '', ns);

    await this.updateStatus(d, owned, current);
    return undefined;
  }

  private async scale(rs: ReplicaSet, replicas: number): Promise<void> {
    try {
      await this.client.patch('ReplicaSet', rs.metadata.name ?? '', rs.metadata.namespace, {
        spec: { replicas },
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  private async createReplicaSet(d: Deployment, revision: number): Promise<ReplicaSet | undefined> {
    const ns = d.metadata.namespace ?? 'default';
    const hash = podTemplateHash(d.spec.template);
    const name = `${d.metadata.name}-${hash}`;
    const template = structuredClone(d.spec.template);
    template.metadata = {
      ...(template.metadata ?? {}),
      labels: { ...(template.metadata?.labels ?? {}), [LabelPodTemplateHash]: hash },
    };
    const selector = structuredClone(d.spec.selector);
    selector.matchLabels = { ...(selector.matchLabels ?? {}), [LabelPodTemplateHash]: hash };
    const rs: ReplicaSet = {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name,
        namespace: ns,
        labels: { ...(d.spec.template.metadata?.labels ?? {}), [LabelPodTemplateHash]: hash },
        annotations: {
          [AnnotationRevision]: String(revision),
          'deployment.kubernetes.io/desired-replicas': String(d.spec.replicas ?? 1),
          'deployment.kubernetes.io/max-replicas': String(d.spec.replicas ?? 1),
        },
        ownerReferences: [controllerOwnerRef(d, 'apps/v1', 'Deployment')],
      },
      spec: {
        replicas: d.spec.replicas ?? 1,
        ...(d.spec.minReadySeconds !== undefined ? { minReadySeconds: d.spec.minReadySeconds } : {}),
        selector,
        template,
      },
    };
    try {
      const created = await this.client.create(rs);
      await this.client.patch('Deployment', d.metadata.name ?? '', ns, {
        metadata: { annotations: { [AnnotationRevision]: String(revision) } },
      });
      return created;
    } catch (err) {
      if (isAlreadyExists(err)) return undefined; // the informer has not caught up; look again
      throw err;
    }
  }

  private async updateStatus(d: Deployment, owned: ReplicaSet[], current: ReplicaSet): Promise<void> {
    const st = (rs: ReplicaSet, f: string) =>
      Number((rs.status as Record<string, unknown> | undefined)?.[f] ?? 0) || 0;
    const all = owned.some((rs) => rs.metadata.name === current.metadata.name) ? owned : [...owned, current];
    const sum = (f: string) => all.reduce((n, rs) => n + st(rs, f), 0);
    const replicas = d.spec.replicas ?? 1;
    const available = sum('availableReplicas');
    const maxUnavailable = resolveMaxUnavailable(d, replicas);
    const now = rfc3339(this.clock.now());
    const prev = (d.status as { conditions?: Array<Record<string, unknown>> } | undefined)?.conditions ?? [];
    const condition = (type: string, status: string, reason: string, message: string) => {
      const old = prev.find((c) => c.type === type);
      const same = old?.status === status;
      return {
        type,
        status,
        reason,
        message,
        lastUpdateTime: same && old?.reason === reason ? (old.lastUpdateTime ?? now) : now,
        lastTransitionTime: same ? (old?.lastTransitionTime ?? now) : now,
      };
    };
    const isAvailable = available >= replicas - maxUnavailable;
    const updated = st(current, 'replicas');
    const complete =
      updated === replicas && st(current, 'availableReplicas') === replicas && sum('replicas') === replicas;
    const desired = {
      observedGeneration: d.metadata.generation ?? 1,
      replicas: sum('replicas'),
      updatedReplicas: updated,
      readyReplicas: sum('readyReplicas'),
      availableReplicas: available,
      unavailableReplicas: Math.max(0, replicas - available),
      conditions: [
        condition(
          'Available',
          isAvailable ? 'True' : 'False',
          isAvailable ? 'MinimumReplicasAvailable' : 'MinimumReplicasUnavailable',
          isAvailable
            ? 'Deployment has minimum availability.'
            : 'Deployment does not have minimum availability.',
        ),
        condition(
          'Progressing',
          'True',
          complete ? 'NewReplicaSetAvailable' : 'ReplicaSetUpdated',
          complete
            ? `ReplicaSet "${current.metadata.name}" has successfully progressed.`
            : `ReplicaSet "${current.metadata.name}" is progressing.`,
        ),
      ],
    };
    const patch = changedFields(d.status as Record<string, unknown> | undefined, desired);
    if (patch)
      await this.client.patchStatus('Deployment', d.metadata.name ?? '', d.metadata.namespace, {
        status: patch,
      });
  }
}

/** `spec.strategy.rollingUpdate.maxUnavailable` resolved against `replicas` (percent rounded down; default 25%). */
function resolveMaxUnavailable(d: Deployment, replicas: number): number {
  const strategy = d.spec.strategy as
    | { type?: string; rollingUpdate?: { maxUnavailable?: number | string } }
    | undefined;
  if (strategy?.type === 'Recreate') return replicas;
  const v = strategy?.rollingUpdate?.maxUnavailable ?? '25%';
  if (typeof v === 'number') return v;
  const m = /^(\d+)%$/.exec(v);
  return m ? Math.floor((Number(m[1]) * replicas) / 100) : Number(v) || 0;
}
