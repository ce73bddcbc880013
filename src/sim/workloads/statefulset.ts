/**
 * StatefulSet controller stand-in (kube-controller-manager `statefulset`): pods `<name>-<ordinal>` for
 * ordinals `0..replicas-1` with `hostname`/`subdomain`, the labels `statefulset.kubernetes.io/pod-name`,
 * `apps.kubernetes.io/pod-index` and `controller-revision-hash`, and an owner reference to the set.
 * `podManagementPolicy: OrderedReady` (the default) creates one pod at a time, each after its
 * predecessors are Running and Ready, and removes the highest ordinal first, one at a time;
 * `Parallel` creates and removes all at once. Failed pods are deleted and recreated; deleted or evicted
 * pods come back under the same name. For each `volumeClaimTemplates` entry a PVC
 * `<template>-<pod>` is created if missing (never deleted; nothing binds it) and mounted in the pod.
 * Not simulated: rolling updates of existing pods on template change, partitions, PVC retention policy,
 * `minReadySeconds` in status.
 */
import type { Pod, StatefulSet, Volume } from '../../apis/core.ts';
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
  IndexControllerUID,
  indexByControllerUID,
  isPodReady,
  isPodTerminal,
  podFromTemplate,
  SimController,
  type SimControllerOptions,
  specChanged,
} from './controller.ts';
import { podTemplateHash } from './deployment.ts';

/** The StatefulSet controller stand-in. */
export class StatefulSetController extends SimController {
  private readonly pods: Informer<'Pod'>;
  private readonly sets: Informer<'StatefulSet'>;

  constructor(opts: SimControllerOptions) {
    super('statefulset', opts, 4);
    this.pods = opts.informers.informerFor('Pod');
    this.sets = opts.informers.informerFor('StatefulSet');
    ensureIndex(this.pods.cache, IndexControllerUID, indexByControllerUID);
  }

  protected informersUsed(): Array<Informer<ResourceRef>> {
    return [this.pods, this.sets] as Array<Informer<ResourceRef>>;
  }

  protected register(): Array<() => void> {
    const onPod = (p: Pod): void => {
      const ref = controllerRef(p);
      if (ref?.kind === 'StatefulSet') this.enqueueBatched(`${p.metadata.namespace}/${ref.name}`);
    };
    const offPods = this.pods.on({ add: onPod, update: (_o, p) => onPod(p), delete: onPod });
    const offSets = this.sets.on({
      add: (s) => this.queue.add(objectKey(s)),
      update: (o, s) => {
        if (specChanged(o, s)) this.queue.add(objectKey(s));
      },
    });
    return [offPods, offSets];
  }

  protected async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const sts = this.sets.cache.get(key);
    if (!sts || sts.metadata.deletionTimestamp) return undefined;
    const name = sts.metadata.name ?? '';
    const replicas = sts.spec.replicas ?? 1;
    const ordered = (sts.spec.podManagementPolicy ?? 'OrderedReady') !== 'Parallel';
    const byOrdinal = new Map<number, Pod>();
    for (const p of this.pods.cache.byIndex(IndexControllerUID, sts.metadata.uid ?? '')) {
      const ord = ordinalOf(name, p.metadata.name ?? '');
      if (ord !== undefined) byOrdinal.set(ord, p);
    }

    // create / repair ordinals 0..replicas-1
    const creates: number[] = [];
    for (let i = 0; i < replicas; i++) {
      const p = byOrdinal.get(i);
      if (!p) {
        creates.push(i);
        if (ordered) break;
        continue;
      }
      if (p.metadata.deletionTimestamp) {
        if (ordered) break;
        continue;
      }
      if (isPodTerminal(p) && p.status?.phase === 'Failed') {
        await this.deletePod(p);
        if (ordered) break;
        continue;
      }
      if (ordered && !(p.status?.phase === 'Running' && isPodReady(p))) break;
    }
    await Promise.all(creates.map((i) => this.createPod(sts, i)));

    // scale down: highest ordinal first
    const condemned = [...byOrdinal.entries()].filter(([i]) => i >= replicas).sort(([a], [b]) => b - a);
    if (condemned.length > 0 && !(ordered && creates.length > 0)) {
      const live = condemned.filter(([, p]) => !p.metadata.deletionTimestamp);
      const terminating = condemned.length - live.length;
      const victims = ordered ? (terminating > 0 ? [] : live.slice(0, 1)) : live;
      await Promise.all(victims.map(([, p]) => this.deletePod(p)));
    }
    await this.updateStatus(sts, [...byOrdinal.values()]);
    return undefined;
  }

  private async createPod(sts: StatefulSet, ordinal: number): Promise<void> {
    const setName = sts.metadata.name ?? '';
    const ns = sts.metadata.namespace ?? 'default';
    const podName = `${setName}-${ordinal}`;
    const pod = podFromTemplate(sts.spec.template, {
      namespace: ns,
      owner: controllerOwnerRef(sts, 'apps/v1', 'StatefulSet'),
      name: podName,
      extraLabels: {
        'statefulset.kubernetes.io/pod-name': podName,
        'apps.kubernetes.io/pod-index': String(ordinal),
        'controller-revision-hash': `${setName}-${podTemplateHash(sts.spec.template)}`,
      },
    });
    pod.spec.hostname = podName;
    if (sts.spec.serviceName) pod.spec.subdomain = sts.spec.serviceName;
    const volumes: Volume[] = [...(pod.spec.volumes ?? [])];
    for (const t of sts.spec.volumeClaimTemplates ?? []) {
      const tname = t.metadata.name ?? 'data';
      const claimName = `${tname}-${podName}`;
      try {
        await this.client.create({
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: {
            name: claimName,
            namespace: ns,
            labels: { ...(t.metadata.labels ?? {}), ...(sts.spec.selector.matchLabels ?? {}) },
          },
          spec: structuredClone(t.spec),
        });
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
      const i = volumes.findIndex((v) => v.name === tname);
      const vol: Volume = { name: tname, persistentVolumeClaim: { claimName } };
      if (i >= 0) volumes[i] = vol;
      else volumes.push(vol);
    }
    if (volumes.length > 0) pod.spec.volumes = volumes;
    try {
      await this.client.create(pod);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err; // informer lag: it is there already
    }
  }

  private async deletePod(p: Pod): Promise<void> {
    try {
      await this.client.delete('Pod', p.metadata.name ?? '', p.metadata.namespace, {
        ...(p.metadata.uid ? { preconditions: { uid: p.metadata.uid } } : {}),
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  private async updateStatus(sts: StatefulSet, pods: Pod[]): Promise<void> {
    const live = pods.filter((p) => !isPodTerminal(p));
    const ready = live.filter(isPodReady).length;
    const revision = `${sts.metadata.name}-${podTemplateHash(sts.spec.template)}`;
    const desired = {
      observedGeneration: sts.metadata.generation ?? 1,
      replicas: live.length,
      readyReplicas: ready,
      currentReplicas: live.length,
      updatedReplicas: live.length,
      availableReplicas: ready,
      currentRevision: revision,
      updateRevision: revision,
    };
    const patch = changedFields(sts.status as Record<string, unknown> | undefined, desired);
    if (patch)
      await this.client.patchStatus('StatefulSet', sts.metadata.name ?? '', sts.metadata.namespace, {
        status: patch,
      });
  }
}

/** The ordinal of pod `podName` in set `setName` (`web-3` → 3), or undefined when it is not one of its pods. */
export function ordinalOf(setName: string, podName: string): number | undefined {
  if (!podName.startsWith(`${setName}-`)) return undefined;
  const rest = podName.slice(setName.length + 1);
  return /^(0|[1-9]\d*)$/.test(rest) ? Number(rest) : undefined;
}
