/**
 * DaemonSet controller stand-in (kube-controller-manager `daemon`): one pod per eligible node. A node is
 * eligible when it matches the template's `nodeSelector` and required node affinity and its NoSchedule/
 * NoExecute taints are tolerated by the template's tolerations plus the ones every DaemonSet pod gets
 * (`AddOrUpdateDaemonPodTolerations`: not-ready and unreachable NoExecute; disk-, memory-, pid-pressure
 * and unschedulable NoSchedule; network-unavailable NoSchedule for hostNetwork pods). A running pod stays
 * while affinity still matches and NoExecute taints are tolerated (a new NoSchedule taint does not evict).
 *
 * Pods are created like the real controller does, unbound: `generateName: <ds>-`, the template's node
 * affinity replaced by a single required term `matchFields: metadata.name In [<node>]`
 * (`ReplaceDaemonSetPodNodeNameNodeAffinity`), labels `controller-revision-hash` and
 * `pod-template-generation`; the scheduler (stand-in) binds them. Pods on nodes that are gone or no longer
 * eligible are deleted, failed pods are replaced, duplicates removed. Status: desired/current/ready/
 * available/misscheduled/updated counts. Not simulated: rolling updates of existing pods, surge, backoff.
 */
import type { DaemonSet, Node, Pod } from '../../apis/core.ts';
import { objectKey } from '../../kube/client.ts';
import type { Informer } from '../../kube/informer.ts';
import type { ResourceRef } from '../../kube/resources.ts';
import type { ReconcileResult } from '../../kube/workqueue.ts';
import type { DaemonNodeFit, SchedulingRules } from '../kubescheduler/rules.ts';
import {
  changedFields,
  controllerOwnerRef,
  isPodActive,
  isPodReady,
  podFromTemplate,
  type SimControllerOptions,
  stableStringify,
} from './controller.ts';
import { podTemplateHash } from './deployment.ts';
import { PodOwnerController, settleAll } from './podowner.ts';

export { daemonPodTolerations } from '../../apis/daemonset.ts';

/**
 * Whether a DaemonSet should have a pod on `node` (`shouldRun`: new pods may be created) and whether an
 * existing pod may stay (`shouldContinue`), as `NodeShouldRunDaemonPod` decides: the injected rules'
 * `daemonSetNodeFit` (capenter injects its scheduling core's) on the node's labels and taints as they are.
 */
export function daemonNodeFit(rules: SchedulingRules, ds: DaemonSet, node: Node): DaemonNodeFit {
  return rules.daemonSetNodeFit(ds.spec.template.spec, {
    name: node.metadata.name ?? '',
    labels: node.metadata.labels ?? {},
    taints: node.spec?.taints ?? [],
  });
}

/** The node a DaemonSet pod is for: `spec.nodeName`, else the `matchFields metadata.name In [x]` value. */
export function daemonPodNode(p: Pod): string | undefined {
  if (p.spec.nodeName) return p.spec.nodeName;
  for (const t of p.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
    ?.nodeSelectorTerms ?? [])
    for (const f of t.matchFields ?? [])
      if (f.key === 'metadata.name' && f.operator === 'In' && f.values?.length === 1) return f.values[0];
  return undefined;
}

/** The DaemonSet controller stand-in. */
export class DaemonSetController extends PodOwnerController<'DaemonSet'> {
  private readonly nodes: Informer<'Node'>;
  private readonly rules: SchedulingRules;

  constructor(opts: SimControllerOptions & { rules: SchedulingRules }) {
    super('daemonset', opts, 'DaemonSet');
    this.rules = opts.rules;
    this.nodes = opts.informers.informerFor('Node');
  }

  protected override informersUsed(): Array<Informer<ResourceRef>> {
    return [...super.informersUsed(), this.nodes as Informer<ResourceRef>];
  }

  protected override register(): Array<() => void> {
    const all = (): void => {
      for (const ds of this.owners.cache.list()) this.queue.add(objectKey(ds));
    };
    const offNodes = this.nodes.on({
      add: all,
      update: (o, n) => {
        if (
          stableStringify([o.metadata.labels, o.spec?.taints]) !==
          stableStringify([n.metadata.labels, n.spec?.taints])
        )
          all();
      },
      delete: all,
    });
    return [...super.register(), offNodes];
  }

  protected async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const ds = this.owners.cache.get(key);
    if (!ds || ds.metadata.deletionTimestamp) return undefined;
    const { owned: ownedAll, deleting, creating } = this.ownedPods(key, ds.metadata.uid);
    const owned = ownedAll.filter((p) => !deleting.has(objectKey(p)));
    const byNode = new Map<string, Pod[]>();
    const add = (node: string, p: Pod) => {
      const l = byNode.get(node);
      if (l) l.push(p);
      else byNode.set(node, [p]);
    };
    for (const p of owned) {
      const n = daemonPodNode(p);
      if (n !== undefined) add(n, p);
    }
    const creatingOn = new Set(creating.map((p) => daemonPodNode(p) ?? ''));

    const toCreate: string[] = [];
    const toDelete: Pod[] = [];
    let desired = 0;
    let misscheduled = 0;
    const nodes = this.nodes.cache.list();
    const nodeNames = new Set(nodes.map((n) => n.metadata.name ?? ''));
    for (const node of nodes) {
      const name = node.metadata.name ?? '';
      const { shouldRun, shouldContinue } = daemonNodeFit(this.rules, ds, node);
      const pods = byNode.get(name) ?? [];
      const live = pods.filter((p) => isPodActive(p));
      for (const p of pods)
        if (p.status?.phase === 'Failed' && !p.metadata.deletionTimestamp) toDelete.push(p);
      if (shouldRun) desired++;
      if (shouldContinue && (shouldRun || live.length > 0)) {
        if (live.length === 0 && shouldRun && !creatingOn.has(name)) toCreate.push(name);
        if (live.length > 1) {
          const sorted = [...live].sort((a, b) =>
            (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? ''),
          );
          toDelete.push(...sorted.slice(1));
        }
      } else if (live.length > 0) {
        misscheduled += live.filter((p) => p.spec.nodeName).length;
        toDelete.push(...live);
      }
    }
    for (const [node, pods] of byNode)
      if (!nodeNames.has(node)) toDelete.push(...pods.filter((p) => !p.metadata.deletionTimestamp));

    const owner = controllerOwnerRef(ds, 'apps/v1', 'DaemonSet');
    const hash = podTemplateHash(ds.spec.template);
    const tolerations = this.rules.daemonSetPodTolerations(ds.spec.template.spec);
    const writes = [
      ...toCreate.map((node) => {
        const pod = podFromTemplate(ds.spec.template, {
          namespace: ds.metadata.namespace ?? 'default',
          owner,
          generateName: `${ds.metadata.name}-`,
          extraLabels: {
            'controller-revision-hash': hash,
            'pod-template-generation': String(ds.metadata.generation ?? 1),
          },
        });
        pod.spec.tolerations = tolerations;
        pod.spec.affinity = {
          ...(pod.spec.affinity ?? {}),
          nodeAffinity: {
            ...(pod.spec.affinity?.nodeAffinity ?? {}),
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchFields: [{ key: 'metadata.name', operator: 'In', values: [node] }] },
              ],
            },
          },
        };
        return this.createPod(key, pod);
      }),
      ...toDelete.map((p) => this.deletePod(key, p)),
    ];
    try {
      await settleAll(writes);
    } finally {
      // the status is written even when a pod write failed; the failure is thrown afterwards
      await this.updateStatus(ds, owned, nodeNames, desired, misscheduled);
    }
    return undefined;
  }

  private async updateStatus(
    ds: DaemonSet,
    owned: Pod[],
    nodeNames: ReadonlySet<string>,
    desired: number,
    misscheduled: number,
  ): Promise<void> {
    const scheduled = owned.filter(
      (p) => isPodActive(p) && p.spec.nodeName && nodeNames.has(p.spec.nodeName),
    );
    const ready = scheduled.filter(isPodReady).length;
    const status = {
      observedGeneration: ds.metadata.generation ?? 1,
      desiredNumberScheduled: desired,
      currentNumberScheduled: scheduled.length,
      updatedNumberScheduled: scheduled.length,
      numberReady: ready,
      numberAvailable: ready,
      numberUnavailable: Math.max(0, desired - ready),
      numberMisscheduled: misscheduled,
    };
    const patch = changedFields(ds.status as Record<string, unknown> | undefined, status);
    if (patch)
      await this.client.patchStatus('DaemonSet', ds.metadata.name ?? '', ds.metadata.namespace, {
        status: patch,
      });
  }
}
