/**
 * Stand-in for Cluster API's MachineDeployment, MachineSet and Machine controllers and an infrastructure provider
 * (cluster-api v1.14 `internal/controllers/{machinedeployment,machineset,machine}`), so the `clusterapi` cloud
 * provider runs end to end in the embedded management cluster:
 * - one MachineSet per MachineDeployment template (`<md>-<template hash>`; a changed template gets a new
 *   MachineSet, old Machines stay: the `OnDelete` rollout, so drift replacement is Karpenter's);
 * - `spec.replicas` → Machines: missing ones are created in the newest MachineSet (labels
 *   `cluster.x-k8s.io/{cluster-name,deployment-name,set-name}` and the template's labels); surplus ones are deleted,
 *   those marked `cluster.x-k8s.io/delete-machine` first, then those without a Node, then the newest (CAPI's
 *   deletion priority);
 * - the infrastructure provider: after `provisionSeconds` a Machine gets `spec.providerID` (`aws:///<zone>/i-…` for
 *   an AWSMachineTemplate, `capi-sim:///<namespace>/<machine>` otherwise);
 * - the Node: written into the workload cluster (name = Machine name) with the deployment's capacity, labels
 *   (instance type, zone, capacity type, the propagated ones), the `karpenter.sh/unregistered` registration taint,
 *   CABPK's `node.cluster.x-k8s.io/uninitialized:NoSchedule` and the deployment's taints; then `status.nodeRef` and
 *   phase `Running` on the Machine; `uninitializedTaintSeconds` after that, the Machine controller removes the
 *   uninitialized taint (as cluster-api's `reconcileNode` does once it has synced the Node's labels); a deleted
 *   Machine's Node is deleted;
 * - paused: a MachineDeployment with `spec.paused`, the `cluster.x-k8s.io/paused` annotation or a paused Cluster is
 *   not reconciled at all (no scaling, no MachineSet), as cluster-api v1.14 skips paused objects;
 * - infrastructure failures: `failMachines(md)` → new Machines get the v1beta1 `failureReason` under
 *   `status.deprecated` and keep phase `Provisioning` (cluster-api v1.14.2 never sets phase `Failed`);
 * - MachineSet preflight checks: `preflightBlocked(md)` true → no new Machines, and the MachineSet condition
 *   `MachinesCreated=False` reason `PreflightCheckFailed` (v1beta1 shape under `status.deprecated`), as CAPI does
 *   while the control plane upgrades.
 * - the current MachineSet's `spec.replicas` follows the deployment's (less older sets' Machines), as the real
 *   MachineDeployment controller scales its MachineSet;
 * - Machine phases: `Provisioning` (`Pending` without bootstrap data) until the provider ID, `Provisioned` with it,
 *   `Running` with the Node (cluster-api v1.14.2's `setMachinePhaseAndLastUpdated`; observed in
 *   test/cluster/realcapi-clusterapi.test.ts).
 * Status of MachineDeployments: `replicas`, `readyReplicas`, `availableReplicas`, `upToDateReplicas`.
 * Known differences from the real controllers (test/cluster/realcapi-clusterapi.test.ts runs those): names (real:
 * `<md>-<5 random>` sets, `<set>-<5 random>` Machines with a `machine-template-hash` label), the Node's
 * `cluster.x-k8s.io/*` annotations (real: written by the Machine controller after `nodeRef`; here with the Node),
 * the Node written by the stand-in rather than by an infrastructure provider, no drain by CAPI, no webhook defaulting
 * (real: `spec.replicas` defaults to the min-size annotation, the selector to cluster/deployment name), and the
 * MachineSet's status is not written (only its preflight condition).
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  AnnotationDeleteMachine,
  AnnotationPaused,
  type AWSMachineTemplate,
  type CAPICluster,
  LabelClusterName,
  LabelDeploymentName,
  LabelSetName,
  type Machine,
  type MachineDeployment,
  type MachineSet,
} from '../../apis/capi.ts';
import type { Node, Taint } from '../../apis/core.ts';
import {
  LabelCapacityType,
  LabelHostname,
  LabelInstanceType,
  LabelTopologyZone,
  TaintCAPIUninitialized,
  TaintUnregistered,
} from '../../apis/labels.ts';
import { formatResources, type Resources } from '../../apis/quantity.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Clock } from '../../kube/clock.ts';
import { isAlreadyExists, isConflict, isNotFound } from '../../kube/errors.ts';

/** What a Machine of a MachineDeployment registers as: the Node's shape. Resources in internal units. */
export interface DeploymentNodeShape {
  instanceTypeName: string;
  capacity: Resources;
  allocatable: Resources;
  /** Node labels that do not depend on the offering (the zone and capacity type are added). */
  labels: Record<string, string>;
  /** Taints of its Nodes (the registration taint is added). */
  taints: Taint[];
  zone: string;
  capacityType: string;
}

/**
 * Reads a MachineDeployment (and its infrastructure template, when found) into the shape of its Nodes, or
 * undefined when its capacity is unknown. Injected: capenter's (`src/embedded/rules.ts`) is the clusterapi
 * provider's own `resolveDeployment`, so the stand-in reads deployments exactly as the provider under test does:
 * a misreading is repeated here and the embedded ring cannot catch it (`resolveDeployment`'s unit tests against
 * cluster-autoscaler's documented annotations are the check).
 */
export type DeploymentNodeShapeResolver = (
  deployment: MachineDeployment,
  template: AWSMachineTemplate | undefined,
) => DeploymentNodeShape | undefined;

/** Options of {@link CAPIMachineDeploymentStandIn}. */
export interface CAPIMachineDeploymentOptions {
  /** Reads a deployment into its Nodes' shape (the declared face, see {@link DeploymentNodeShapeResolver}). */
  nodeShape: DeploymentNodeShapeResolver;
  /** Management-cluster client. */
  client: KubeClient;
  clock: Clock;
  /** The workload cluster's client for `namespace/clusterName`; without it no Nodes are written. */
  workload?: (namespace: string, clusterName: string) => Promise<KubeClient>;
  /** Seconds between passes (default 0.2). */
  periodSeconds?: number;
  /** Seconds from Machine creation to its provider ID (default 0). */
  provisionSeconds?: number;
  /**
   * Seconds from a Machine's `status.nodeRef` until its Node loses `node.cluster.x-k8s.io/uninitialized` (default 0:
   * the next pass). `holdUninitialized(md)` true keeps it on (a Machine controller that has not caught up).
   */
  uninitializedTaintSeconds?: number;
  holdUninitialized?: (md: MachineDeployment) => boolean;
  /** MachineSet preflight checks block new Machines of this deployment (default never). */
  preflightBlocked?: (md: MachineDeployment) => boolean;
  /**
   * The infrastructure fails new Machines of this deployment with this reason (e.g. `InsufficientInstanceCapacity`):
   * the v1beta1 `failureReason`/`failureMessage`, no provider ID. Default never.
   */
  failMachines?: (md: MachineDeployment) => string | undefined;
  onError?: (err: unknown, where: string) => void;
}

/**
 * The phase cluster-api v1.14.2 gives a Machine without a provider ID (`setMachinePhaseAndLastUpdated`):
 * `Provisioning` once its bootstrap data exists (here: `bootstrap.dataSecretName` set), else `Pending`. v1.14 never
 * sets `Failed`: an infrastructure failure only shows as the v1beta1 `failureReason` under `status.deprecated`.
 */
function waitingPhase(m: Machine): string {
  return m.spec.bootstrap?.dataSecretName ? 'Provisioning' : 'Pending';
}

/** The MachineDeployment/MachineSet/Machine stand-in; see the module comment. */
export class CAPIMachineDeploymentStandIn {
  private readonly ac = new AbortController();
  private loop: Promise<void> | undefined;
  /** Passes run, Machines created and deleted (diagnostics). */
  passes = 0;
  machinesCreated = 0;
  machinesDeleted = 0;
  /** Nodes whose uninitialized taint the Machine controller has synced away. */
  private readonly initialized = new Set<string>();

  constructor(private readonly opts: CAPIMachineDeploymentOptions) {}

  /** Starts the loop. */
  start(): void {
    this.loop ??= (async () => {
      while (!this.ac.signal.aborted) {
        try {
          await this.pass();
        } catch (err) {
          this.opts.onError?.(err, 'capi machinedeployment');
        }
        await this.opts.clock.sleep((this.opts.periodSeconds ?? 0.2) * 1000, this.ac.signal).catch(() => {});
      }
    })();
  }

  /** Stops the loop; resolves when the current pass has finished. */
  async stop(): Promise<void> {
    this.ac.abort();
    await this.loop;
  }

  /** One pass over every MachineDeployment (exposed for tests). @throws an API error listing the objects. */
  async pass(): Promise<void> {
    this.passes++;
    const c = this.opts.client;
    const [mds, sets, machines] = await Promise.all([
      c.list('MachineDeployment'),
      c.list('MachineSet'),
      c.list('Machine'),
    ]);
    for (const md of mds.items as MachineDeployment[]) {
      try {
        await this.reconcile(
          md,
          (sets.items as MachineSet[]).filter(
            (s) =>
              s.metadata.namespace === md.metadata.namespace &&
              s.metadata.labels?.[LabelDeploymentName] === md.metadata.name,
          ),
          (machines.items as Machine[]).filter(
            (m) =>
              m.metadata.namespace === md.metadata.namespace &&
              m.metadata.labels?.[LabelDeploymentName] === md.metadata.name,
          ),
        );
      } catch (err) {
        if (!isConflict(err))
          this.opts.onError?.(err, `machinedeployment ${md.metadata.namespace}/${md.metadata.name}`);
      }
    }
  }

  /**
   * One MachineDeployment's pass: its MachineSet for the current template and that set's preflight condition,
   * Machines scaled to `spec.replicas`, deleted Machines' Nodes removed, then each live Machine provisioned
   * (provider ID, Node, `Running`), and the deployment's `replicas`/`readyReplicas`.
   */
  private async reconcile(md: MachineDeployment, sets: MachineSet[], machines: Machine[]): Promise<void> {
    const cluster = md.spec.clusterName;
    if (await this.isPaused(md)) return;
    const hash = createHash('sha256').update(JSON.stringify(md.spec.template.spec)).digest('hex').slice(0, 8);
    const setName = `${md.metadata.name!}-${hash}`;
    const blocked = this.opts.preflightBlocked?.(md) ?? false;
    let ms = sets.find((s) => s.metadata.name === setName) ?? (await this.createMachineSet(md, setName));
    ms = await this.syncPreflightCondition(ms, blocked);

    const live = machines.filter((m) => !m.metadata.deletionTimestamp);
    const desired = md.spec.replicas ?? 0;
    const inOtherSets = live.filter((m) => m.metadata.labels?.[LabelSetName] !== setName).length;
    await this.syncMachineSetReplicas(ms, Math.max(0, desired - inOtherSets));
    if (live.length < desired && !blocked) await this.scaleUp(md, ms, desired - live.length);
    if (live.length > desired) await this.scaleDown(live, desired, cluster);
    // Deleted directly (not by scale-down): their Nodes go too.
    for (const m of machines) if (m.metadata.deletionTimestamp) await this.deleteMachine(m, cluster);

    // Infrastructure + Nodes.
    const template = live.some((m) => !m.status?.nodeRef) ? await this.infrastructureTemplate(md) : undefined;
    let ready = 0;
    for (const m of live) if (await this.provisionMachine(md, m, template)) ready++;
    await this.updateDeploymentStatus(md, {
      replicas: live.length,
      readyReplicas: ready,
      availableReplicas: ready,
      upToDateReplicas: live.length - inOtherSets,
    });
  }

  /**
   * The MachineDeployment controller's scaling of its current MachineSet: `spec.replicas` = the deployment's replicas
   * less the live Machines of older MachineSets (cluster-api logs "Scaled up current MachineSet … from 0 to 3
   * replicas"); written only when it changes.
   */
  private async syncMachineSetReplicas(ms: MachineSet, replicas: number): Promise<void> {
    if (ms.spec.replicas === replicas) return;
    await this.opts.client
      .patch(
        'MachineSet',
        ms.metadata.name!,
        ms.metadata.namespace ?? 'default',
        { spec: { replicas } },
        { type: 'merge' },
      )
      .catch((err) => {
        if (!isNotFound(err) && !isConflict(err)) throw err;
      });
  }

  /** Sets a Machine's `status.phase` (cluster-api's `Provisioning`, `Provisioned`, …); returns it as stored. */
  private async setPhase(m: Machine, phase: string): Promise<Machine> {
    if (m.status?.phase === phase) return m;
    return (await this.opts.client
      .updateStatus({ ...m, status: { ...(m.status ?? {}), phase } })
      .catch((err) => {
        if (!isNotFound(err) && !isConflict(err)) throw err;
        return m;
      })) as Machine;
  }

  /** True when `md` or its Cluster is paused (cluster-api `annotations.IsPaused`): it is left alone. */
  private async isPaused(md: MachineDeployment): Promise<boolean> {
    if (md.spec.paused || md.metadata.annotations?.[AnnotationPaused] !== undefined) return true;
    const cluster = (await this.opts.client
      .tryGet('Cluster', md.spec.clusterName, md.metadata.namespace ?? 'default')
      .catch(() => undefined)) as CAPICluster | undefined;
    return cluster?.spec?.paused === true;
  }

  /** Creates `md`'s MachineSet `setName` (0 replicas, `md`'s template), or gets it when it already exists. */
  private async createMachineSet(md: MachineDeployment, setName: string): Promise<MachineSet> {
    const c = this.opts.client;
    const ns = md.metadata.namespace ?? 'default';
    const mdName = md.metadata.name!;
    const cluster = md.spec.clusterName;
    return (await c
      .create({
        apiVersion: 'cluster.x-k8s.io/v1beta2',
        kind: 'MachineSet',
        metadata: {
          name: setName,
          namespace: ns,
          labels: { [LabelClusterName]: cluster, [LabelDeploymentName]: mdName },
          ownerReferences: [
            {
              apiVersion: 'cluster.x-k8s.io/v1beta2',
              kind: 'MachineDeployment',
              name: mdName,
              uid: md.metadata.uid!,
              controller: true,
            },
          ],
        },
        spec: {
          clusterName: cluster,
          replicas: 0,
          selector: { matchLabels: { [LabelDeploymentName]: mdName, [LabelSetName]: setName } },
          template: md.spec.template,
        },
      } as MachineSet)
      .catch((err) => {
        if (isAlreadyExists(err)) return c.get('MachineSet', setName, ns);
        throw err;
      })) as MachineSet;
  }

  /**
   * Sets (when `blocked`) or clears the MachineSet's v1beta1 condition `MachinesCreated=False` reason
   * `PreflightCheckFailed`, writing status only when it changes; returns the MachineSet as stored.
   */
  private async syncPreflightCondition(ms: MachineSet, blocked: boolean): Promise<MachineSet> {
    const preflightReason = blocked ? 'PreflightCheckFailed' : undefined;
    const curReason = ms.status?.deprecated?.v1beta1?.conditions?.find(
      (x) => x.type === 'MachinesCreated',
    )?.reason;
    if ((preflightReason ?? '') === (curReason === 'PreflightCheckFailed' ? curReason : '')) return ms;
    return (await this.opts.client.updateStatus({
      ...ms,
      status: {
        ...(ms.status ?? {}),
        deprecated: {
          v1beta1: {
            conditions: blocked
              ? [
                  {
                    type: 'MachinesCreated',
                    status: 'False',
                    severity: 'Warning',
                    reason: 'PreflightCheckFailed',
                    message: 'ControlPlaneIsStable: the control plane is being upgraded',
                    lastTransitionTime: new Date(this.opts.clock.now()).toISOString(),
                  },
                ]
              : [],
          },
        },
      },
    })) as MachineSet;
  }

  /**
   * Creates `count` Machines in MachineSet `ms` (named `<set>-<6 hex>`, with the template's labels and the
   * cluster/deployment/set labels; infrastructure ref = the template's kind without `Template`, named like the
   * Machine).
   */
  private async scaleUp(md: MachineDeployment, ms: MachineSet, count: number): Promise<void> {
    const tspec = md.spec.template.spec;
    const setName = ms.metadata.name!;
    for (let i = 0; i < count; i++) {
      const name = `${setName}-${randomBytes(3).toString('hex')}`;
      const m: Machine = {
        apiVersion: 'cluster.x-k8s.io/v1beta2',
        kind: 'Machine',
        metadata: {
          name,
          namespace: md.metadata.namespace ?? 'default',
          labels: {
            ...(md.spec.template.metadata?.labels ?? {}),
            [LabelClusterName]: md.spec.clusterName,
            [LabelDeploymentName]: md.metadata.name!,
            [LabelSetName]: setName,
          },
          ownerReferences: [
            {
              apiVersion: 'cluster.x-k8s.io/v1beta2',
              kind: 'MachineSet',
              name: setName,
              uid: ms.metadata.uid!,
              controller: true,
            },
          ],
        },
        spec: {
          ...structuredClone(tspec),
          infrastructureRef: {
            apiGroup: tspec.infrastructureRef.apiGroup ?? 'infrastructure.cluster.x-k8s.io',
            kind: tspec.infrastructureRef.kind.replace(/Template$/, ''),
            name,
          },
        },
      };
      await this.opts.client.create(m);
      this.machinesCreated++;
    }
  }

  /**
   * Deletes the `live.length - desired` surplus Machines in CAPI's deletion priority: those marked
   * `cluster.x-k8s.io/delete-machine` first, then those without a Node, then the newest.
   */
  private async scaleDown(live: readonly Machine[], desired: number, cluster: string): Promise<void> {
    const rank = (m: Machine): number =>
      m.metadata.annotations?.[AnnotationDeleteMachine] !== undefined ? 0 : m.status?.nodeRef ? 2 : 1;
    const victims = [...live]
      .sort(
        (a, b) =>
          rank(a) - rank(b) ||
          String(b.metadata.creationTimestamp ?? '').localeCompare(
            String(a.metadata.creationTimestamp ?? ''),
          ),
      )
      .slice(0, live.length - desired);
    for (const v of victims) await this.deleteMachine(v, cluster);
  }

  /** The infrastructure template `md` references, or undefined when its kind is unknown or it is absent. */
  private async infrastructureTemplate(md: MachineDeployment): Promise<AWSMachineTemplate | undefined> {
    const c = this.opts.client;
    const ref = md.spec.template.spec.infrastructureRef;
    const rt = c.registry.forKind(`${ref.kind}.${ref.apiGroup ?? 'infrastructure.cluster.x-k8s.io'}`);
    if (!rt) return undefined;
    return (await c.tryGet(rt, ref.name, md.metadata.namespace ?? 'default').catch(() => undefined)) as
      | AWSMachineTemplate
      | undefined;
  }

  /**
   * The infrastructure provider and Node registration for one live Machine, once `provisionSeconds` have passed
   * since its creation: the v1beta1 `failureReason` when `failMachines` says so; else a provider ID, then (with a workload
   * cluster) its Node and `status.nodeRef`, phase `Running`. Returns whether the Machine is ready (has a Node).
   */
  private async provisionMachine(
    md: MachineDeployment,
    m: Machine,
    template: AWSMachineTemplate | undefined,
  ): Promise<boolean> {
    if (m.status?.nodeRef) {
      await this.initializeNode(md, m);
      return true;
    }
    const c = this.opts.client;
    const ns = md.metadata.namespace ?? 'default';
    const tspec = md.spec.template.spec;
    const created = Date.parse(String(m.metadata.creationTimestamp ?? '')) || this.opts.clock.now();
    if (this.opts.clock.now() - created < (this.opts.provisionSeconds ?? 0) * 1000) {
      if (!m.status?.phase) await this.setPhase(m, waitingPhase(m));
      return false;
    }
    let cur = m;
    const zone = tspec.failureDomain ?? 'unspecified';
    const failure = cur.spec.providerID ? undefined : this.opts.failMachines?.(md);
    if (failure) {
      if (!cur.status?.deprecated?.v1beta1?.failureReason)
        await c
          .updateStatus({
            ...cur,
            status: {
              ...(cur.status ?? {}),
              phase: waitingPhase(cur),
              deprecated: {
                v1beta1: {
                  failureReason: failure,
                  failureMessage: `the infrastructure could not launch ${tspec.infrastructureRef.name} in ${zone}`,
                },
              },
            },
          })
          .catch((err) => {
            if (!isNotFound(err) && !isConflict(err)) throw err;
          });
      return false;
    }
    if (!cur.spec.providerID) {
      const providerID =
        template?.kind === 'AWSMachineTemplate'
          ? `aws:///${zone}/i-${randomBytes(8).toString('hex').slice(0, 17)}`
          : `capi-sim:///${ns}/${m.metadata.name}`;
      try {
        cur = (await c.patch(
          'Machine',
          m.metadata.name!,
          ns,
          { spec: { providerID } },
          { type: 'merge' },
        )) as Machine;
      } catch (err) {
        if (isNotFound(err)) return false;
        throw err;
      }
      // cluster-api copies the provider ID once the infrastructure is provisioned: phase Provisioned, no Node yet
      cur = await this.setPhase(cur, 'Provisioned');
    }
    if (!this.opts.workload) return false;
    const node = this.nodeFor(md, cur, template);
    if (!node) return false;
    const wl = await this.opts.workload(ns, md.spec.clusterName);
    try {
      await wl.create(node);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    await c
      .updateStatus({
        ...cur,
        status: { ...(cur.status ?? {}), nodeRef: { name: node.metadata.name! }, phase: 'Running' },
      })
      .catch((err) => {
        if (!isNotFound(err) && !isConflict(err)) throw err;
      });
    return true;
  }

  /**
   * The Machine controller's Node sync: once `uninitializedTaintSeconds` have passed since the Node was created,
   * removes `node.cluster.x-k8s.io/uninitialized` from it (unless `holdUninitialized(md)`). Each Node once. The patch
   * carries the Node's resourceVersion, as cluster-api's does: a conflict (another writer, e.g. registration) leaves
   * the Node for the next pass.
   */
  private async initializeNode(md: MachineDeployment, m: Machine): Promise<void> {
    const name = m.status?.nodeRef?.name;
    if (!name || !this.opts.workload || this.initialized.has(name)) return;
    if (this.opts.holdUninitialized?.(md)) return;
    const wl = await this.opts.workload(md.metadata.namespace ?? 'default', md.spec.clusterName);
    const node = (await wl.tryGet('Node', name)) as Node | undefined;
    if (!node) return;
    const created = Date.parse(String(node.metadata.creationTimestamp ?? '')) || this.opts.clock.now();
    if (this.opts.clock.now() - created < (this.opts.uninitializedTaintSeconds ?? 0) * 1000) return;
    const taints = node.spec?.taints ?? [];
    if (taints.some((t) => t.key === TaintCAPIUninitialized.key)) {
      // optimistic, as cluster-api v1.14 `patchNode` (MergeFromWithOptimisticLock): the taint list written is the
      // one read, so without the precondition a registration that removed karpenter.sh/unregistered in between
      // would be undone; on a conflict the next pass reads the Node again
      try {
        await wl.patch(
          'Node',
          name,
          undefined,
          {
            metadata: { resourceVersion: node.metadata.resourceVersion },
            spec: { taints: taints.filter((t) => t.key !== TaintCAPIUninitialized.key) },
          },
          { type: 'merge' },
        );
      } catch (err) {
        if (isConflict(err) || isNotFound(err)) return;
        throw err;
      }
    }
    this.initialized.add(name);
  }

  /**
   * Writes `md`'s v1beta2 replica counters when they changed: `replicas` (live Machines), `readyReplicas` and
   * `availableReplicas` (Machines with a Node; cluster-api counts the Machines' `Ready`/`Available` conditions, which
   * lag the Node by a reconcile), `upToDateReplicas` (Machines of the current MachineSet).
   */
  private async updateDeploymentStatus(
    md: MachineDeployment,
    counts: { replicas: number; readyReplicas: number; availableReplicas: number; upToDateReplicas: number },
  ): Promise<void> {
    const cur = (md.status ?? {}) as Record<string, unknown>;
    if (Object.entries(counts).every(([k, v]) => cur[k] === v)) return;
    await this.opts.client
      .updateStatus({ ...md, status: { ...(md.status ?? {}), ...counts } })
      .catch((err) => {
        if (!isConflict(err) && !isNotFound(err)) throw err;
      });
  }

  private async deleteMachine(m: Machine, cluster: string): Promise<void> {
    const ns = m.metadata.namespace ?? 'default';
    if (m.status?.nodeRef && this.opts.workload) {
      const wl = await this.opts.workload(ns, cluster);
      await wl.tryDelete('Node', m.status.nodeRef.name);
    }
    await this.opts.client.tryDelete('Machine', m.metadata.name!, ns);
    if (!m.metadata.deletionTimestamp) this.machinesDeleted++;
  }

  /** The Node a Machine of `md` registers as, or undefined when its capacity is unknown. */
  private nodeFor(
    md: MachineDeployment,
    m: Machine,
    template: AWSMachineTemplate | undefined,
  ): Node | undefined {
    const d = this.opts.nodeShape(md, template);
    if (!d) return undefined;
    const taints: Taint[] = [
      { key: TaintUnregistered.key, effect: TaintUnregistered.effect },
      { key: TaintCAPIUninitialized.key, effect: TaintCAPIUninitialized.effect },
      ...d.taints,
    ];
    const now = new Date(this.opts.clock.now()).toISOString();
    return {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: m.metadata.name!,
        labels: {
          ...d.labels,
          [LabelInstanceType]: d.instanceTypeName,
          [LabelTopologyZone]: d.zone,
          [LabelCapacityType]: d.capacityType,
          [LabelHostname]: m.metadata.name!,
        },
        annotations: {
          'cluster.x-k8s.io/cluster-name': md.spec.clusterName,
          'cluster.x-k8s.io/cluster-namespace': md.metadata.namespace ?? 'default',
          'cluster.x-k8s.io/machine': m.metadata.name!,
          'cluster.x-k8s.io/owner-kind': 'MachineSet',
          'cluster.x-k8s.io/owner-name': m.metadata.labels?.[LabelSetName] ?? '',
        },
      },
      spec: { providerID: m.spec.providerID!, taints },
      status: {
        capacity: formatResources(d.capacity),
        allocatable: formatResources(d.allocatable),
        conditions: [
          {
            type: 'Ready',
            status: 'False',
            reason: 'KubeletNotReady',
            message: 'registered; waiting for the kubelet stand-in',
            lastTransitionTime: now,
            lastHeartbeatTime: now,
          },
        ],
        nodeInfo: {
          architecture: 'amd64',
          operatingSystem: 'linux',
          kubeletVersion: md.spec.template.spec.version ?? 'v0.0.0',
        },
      },
    } as Node;
  }
}
