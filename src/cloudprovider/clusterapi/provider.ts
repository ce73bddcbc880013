/**
 * The `clusterapi` CloudProvider: a NodeClaim becomes a Machine of a Cluster API MachineDeployment, on any
 * infrastructure. The provider talks to the management cluster (MachineDeployments, MachineSets, Machines,
 * infrastructure templates of one namespace: the Cluster's) and reads the `ClusterAPINodeClass` through an injected
 * lookup (it lives in the workload cluster, with the NodePools).
 *
 * - Instance types: the MachineDeployments labelled `node.cluster.x-k8s.io/karpenter-member` that the NodeClass's
 *   `spec.scalableResourceSelector` selects, resolved by `deployments.ts` (capacity, labels, price, bounds) and
 *   grouped by instance type (one offering = one deployment's failure domain × capacity type × price). Deployments
 *   whose taints the NodePool's NodeClaims do not carry are left out for that NodePool. An offering is unavailable
 *   while its deployment is at max size, or in the unavailable-offerings cache.
 * - create: the cheapest compatible available offering (as every provider); its deployment's {@link DeploymentScaler}
 *   raises the replicas (batched, recomputed) and binds a new Machine; the NodeClaim gets the Machine's provider ID
 *   and the annotations {@link AnnotationNodeClaimMachine}, {@link AnnotationNodeClaimMachineDeployment}.
 * - delete: the Machine is marked `cluster.x-k8s.io/delete-machine` and the replicas lowered (rollback on failure).
 * - drift: the deployment's template (infrastructure/bootstrap refs, version) differs from the one the Machine's
 *   MachineSet was made from (`MachineTemplateDrift`).
 * Compared with upstream karpenter-provider-cluster-api v0.2: price ordering instead of first-by-name, taints
 * honoured, recomputed replicas, max-size, drift, and only Machines of this namespace's deployments.
 */
import {
  type AWSMachineTemplate,
  type CAPICluster,
  LabelDeploymentName,
  LabelSetName,
  type Machine,
  type MachineDeployment,
  type MachineSet,
} from '../../apis/capi.ts';
import type { Node, Taint } from '../../apis/core.ts';
import type { ClusterAPINodeClass, NodeClaim, NodePool } from '../../apis/karpenter.ts';
import { LabelCapacityType, LabelInstanceType, LabelTopologyZone } from '../../apis/labels.ts';
import { formatResources } from '../../apis/quantity.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Clock } from '../../kube/clock.ts';
import { isConflict, isNotFound } from '../../kube/errors.ts';
import { matchesLabels } from '../../kube/selectors.ts';
import { describeOfferings, selectLaunchOption, UnavailableOfferings } from '../offerings.ts';
import {
  type CapacityType,
  type CloudProvider,
  CreateError,
  type InstanceType,
  InsufficientCapacityError,
  NodeClaimNotFoundError,
  type NodeClassKind,
  NodeClassNotReadyError,
  type OfferingRef,
  type RepairPolicy,
} from '../types.ts';
import {
  AnnotationMaxSize,
  type DeploymentResolution,
  instanceTypeNames,
  instanceTypesOf,
  LabelKarpenterMember,
  type ResolvedDeployment,
  resolveDeployment,
  taintsCovered,
  templateHash,
} from './deployments.ts';
import {
  DeploymentScaler,
  isMachineGoing,
  LabelMachineNodeClaim,
  MachineFailedError,
  sizeBounds,
} from './scaler.ts';

/** API group of the ClusterAPINodeClass. */
export const ClusterAPIGroup = 'karpenter.cluster.x-k8s.io';
/** Kind of the clusterapi NodeClass. */
export const ClusterAPINodeClassKind = 'ClusterAPINodeClass';
/** NodeClaim annotation: `<namespace>/<name>` of its Machine. */
export const AnnotationNodeClaimMachine = 'karpenter.cluster.x-k8s.io/machine';
/** NodeClaim annotation: `<namespace>/<name>` of the MachineDeployment it was launched from. */
export const AnnotationNodeClaimMachineDeployment = 'karpenter.cluster.x-k8s.io/machinedeployment';
/** NodeClaim annotation: the price (USD/hour) of the offering it launched on. */
export const AnnotationNodeClaimPrice = 'karpenter.cluster.x-k8s.io/price-per-hour';
/** Drift reason: the MachineDeployment's template changed since the Machine was made. */
export const DriftMachineTemplate = 'MachineTemplateDrift';
/** Drift reason: the MachineDeployment is gone or no longer selected. */
export const DriftMachineDeploymentGone = 'MachineDeploymentNotFound';

/** Constructor dependencies of {@link ClusterAPICloudProvider}. */
export interface ClusterAPICloudProviderDeps {
  /** Client of the management cluster. */
  management: KubeClient;
  /** Namespace of the Cluster served: only its MachineDeployments and Machines are used. */
  namespace: string;
  /** Only MachineDeployments of this Cluster (`spec.clusterName`); default: all of the namespace. */
  clusterName?: string;
  /** ClusterAPINodeClass lookup by name (the workload cluster's). */
  nodeClass: (name: string) => ClusterAPINodeClass | undefined | Promise<ClusterAPINodeClass | undefined>;
  /** Client of the workload cluster: reads a Node of a deployment when that is the only capacity source. */
  workload?: KubeClient;
  clock: Clock;
  /** AWS region for the embedded catalog's prices of CAPA deployments (default us-east-1). */
  region?: string;
  /** Seconds between scaler passes while NodeClaims wait for Machines (default 0.2). */
  pollSeconds?: number;
  /** Seconds `create` waits for a bound Machine with a provider ID before failing `MachineNotReady` (default 600). */
  machineTimeoutSeconds?: number;
  /** Seconds an unclaimed Machine nobody waits for is kept before it is removed (default 300). */
  unclaimedGraceSeconds?: number;
  /** Seconds a resolved view of the deployments is reused (default 1). */
  cacheSeconds?: number;
  /** The ICE cache; default a private one on `clock`. */
  unavailableOfferings?: UnavailableOfferings;
  /** Notices (unknown prices), each once. */
  onNotice?: (message: string) => void;
  onError?: (err: unknown, where: string) => void;
}

/** A resolved view of the namespace's member deployments. */
export interface DeploymentsSnapshot {
  at: number;
  deployments: MachineDeployment[];
  resolutions: DeploymentResolution[];
  usable: ResolvedDeployment[];
  /** Deployments unusable for a while (paused, preflight-blocked): offered with every offering unavailable. */
  held: ResolvedDeployment[];
  /** Instance-type name per usable or held deployment (`namespace/name`). */
  typeNames: Map<string, string>;
}

/**
 * The clusterapi CloudProvider; see the module comment. Extra beyond {@link CloudProvider}: {@link markUnavailable},
 * {@link resolve} (NodeClass status), {@link replicaUpdates}, {@link stop}.
 */
export class ClusterAPICloudProvider implements CloudProvider {
  readonly name = 'clusterapi';
  private readonly ice: UnavailableOfferings;
  private readonly scalers = new Map<string, DeploymentScaler>();
  private snap: DeploymentsSnapshot | undefined;
  private snapLoading: Promise<DeploymentsSnapshot> | undefined;
  private readonly noticed = new Set<string>();

  constructor(private readonly deps: ClusterAPICloudProviderDeps) {
    if (!deps.namespace)
      throw new Error("ClusterAPICloudProvider: namespace is required (the Cluster's namespace)");
    this.ice = deps.unavailableOfferings ?? new UnavailableOfferings({ clock: deps.clock });
  }

  supportedNodeClasses(): NodeClassKind[] {
    return [{ group: ClusterAPIGroup, kind: ClusterAPINodeClassKind }];
  }

  repairPolicies(): RepairPolicy[] {
    return [];
  }

  /** Marks one offering unavailable for the cache TTL (as an ICE would). */
  markUnavailable(instanceType: string, zone: string, capacityType: CapacityType, reason?: string): void {
    this.ice.markUnavailable(instanceType, zone, capacityType, reason);
  }

  /** Replica updates written per MachineDeployment name (diagnostics, benchmark). */
  replicaUpdates(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [k, s] of this.scalers) out[k] = s.updates;
    return out;
  }

  /** Stops the scalers (waiting creates fail transiently). */
  stop(): void {
    for (const s of this.scalers.values()) s.stop();
  }

  private scaler(namespace: string, name: string): DeploymentScaler {
    const key = `${namespace}/${name}`;
    let s = this.scalers.get(key);
    if (!s) {
      s = new DeploymentScaler({
        client: this.deps.management,
        clock: this.deps.clock,
        namespace,
        name,
        ...(this.deps.pollSeconds !== undefined ? { pollSeconds: this.deps.pollSeconds } : {}),
        onError: (err) => this.deps.onError?.(err, `scaler ${key}`),
      });
      this.scalers.set(key, s);
    }
    return s;
  }

  /** Reads and resolves the namespace's member deployments (cached for `cacheSeconds`). */
  async snapshot(fresh = false): Promise<DeploymentsSnapshot> {
    const now = this.deps.clock.now();
    if (!fresh && this.snap && now - this.snap.at < (this.deps.cacheSeconds ?? 1) * 1000) return this.snap;
    if (!fresh && this.snapLoading) return this.snapLoading;
    const p = this.loadSnapshot().finally(() => {
      if (this.snapLoading === p) this.snapLoading = undefined;
    });
    this.snapLoading = p;
    this.snap = await p;
    return this.snap;
  }

  private async loadSnapshot(): Promise<DeploymentsSnapshot> {
    const { management: c, namespace, clusterName } = this.deps;
    const [mds, sets, machines] = await Promise.all([
      c.list('MachineDeployment', { namespace }),
      c.list('MachineSet', { namespace }),
      c.list('Machine', { namespace }),
    ]);
    const deployments = (mds.items as MachineDeployment[]).filter(
      (md) =>
        md.metadata.labels?.[LabelKarpenterMember] !== undefined &&
        (!clusterName || md.spec.clusterName === clusterName),
    );
    const clusters = new Map<string, CAPICluster | undefined>();
    const resolutions: DeploymentResolution[] = [];
    for (const md of deployments) {
      const cn = md.spec.clusterName;
      if (!clusters.has(cn))
        clusters.set(cn, (await c.tryGet('Cluster', cn, namespace)) as CAPICluster | undefined);
      const ref = md.spec.template.spec.infrastructureRef;
      let template: AWSMachineTemplate | undefined;
      const group = ref.apiGroup ?? ref.apiVersion?.split('/')[0];
      const rt = group ? c.registry.forKind(`${ref.kind}.${group}`) : undefined;
      if (rt)
        template = (await c.tryGet(rt, ref.name, namespace).catch(() => undefined)) as
          | AWSMachineTemplate
          | undefined;
      const machineSets = (sets.items as MachineSet[]).filter(
        (ms) => ms.metadata.labels?.[LabelDeploymentName] === md.metadata.name,
      );
      const ann = md.metadata.annotations ?? {};
      let node: Node | undefined;
      const hasCapacity =
        ann['capacity.cluster-autoscaler.kubernetes.io/cpu'] !== undefined ||
        Object.keys(template?.status?.capacity ?? {}).length > 0;
      if (!hasCapacity && this.deps.workload) {
        const withNode = (machines.items as Machine[]).find(
          (m) => m.metadata.labels?.[LabelDeploymentName] === md.metadata.name && m.status?.nodeRef?.name,
        );
        if (withNode)
          node = (await this.deps.workload
            .tryGet('Node', withNode.status!.nodeRef!.name)
            .catch(() => undefined)) as Node | undefined;
      }
      const r = resolveDeployment({
        deployment: md,
        template,
        cluster: clusters.get(cn),
        machineSets,
        node,
        ...(this.deps.region ? { region: this.deps.region } : {}),
      });
      resolutions.push(r);
      if (r.ok)
        for (const n of r.deployment.notices)
          if (!this.noticed.has(n)) {
            this.noticed.add(n);
            this.deps.onNotice?.(n);
          }
    }
    const usable = resolutions.flatMap((r) => (r.ok ? [r.deployment] : []));
    const held = resolutions.flatMap((r) => (!r.ok && r.held ? [r.held] : []));
    return {
      at: this.deps.clock.now(),
      deployments,
      resolutions,
      usable,
      held,
      typeNames: instanceTypeNames([...usable, ...held]),
    };
  }

  /**
   * What a ClusterAPINodeClass selects: its usable deployments and the unusable ones with their reasons (for its
   * status). @throws NodeClassNotReadyError when the NodeClass does not exist.
   */
  async resolve(
    nodeClassName: string,
    fresh = false,
  ): Promise<{
    nodeClass: ClusterAPINodeClass;
    usable: ResolvedDeployment[];
    unusable: Array<Extract<DeploymentResolution, { ok: false }>>;
    /** The selected deployments unusable for a while (their instance types stay offered, unavailable). */
    held: ResolvedDeployment[];
  }> {
    const nodeClass = await this.nodeClassOrThrow(nodeClassName);
    const snap = await this.snapshot(fresh);
    const sel = nodeClass.spec?.scalableResourceSelector ?? {};
    const selected = new Set(
      snap.deployments
        .filter((md) => matchesLabels(sel as never, md.metadata.labels ?? {}))
        .map((md) => md.metadata.name),
    );
    return {
      nodeClass,
      usable: snap.usable.filter((d) => selected.has(d.name)),
      unusable: snap.resolutions.flatMap((r) => (!r.ok && selected.has(r.name) ? [r] : [])),
      held: snap.held.filter((d) => selected.has(d.name)),
    };
  }

  private async nodeClassOrThrow(name: string): Promise<ClusterAPINodeClass> {
    const nc = await this.deps.nodeClass(name);
    if (!nc)
      throw new NodeClassNotReadyError(`ClusterAPINodeClass "${name}" not found`, {
        nodeClass: `${ClusterAPINodeClassKind}/${name}`,
      });
    if (nc.metadata.deletionTimestamp)
      throw new NodeClassNotReadyError(`ClusterAPINodeClass "${name}" is being deleted`, {
        nodeClass: `${ClusterAPINodeClassKind}/${name}`,
      });
    return nc;
  }

  /** Whether deployment `d` can take one more Machine (max size, counting Machines and waiting NodeClaims). */
  private async roomFor(): Promise<(x: ResolvedDeployment) => boolean> {
    const machines = (await this.deps.management.list('Machine', { namespace: this.deps.namespace }))
      .items as Machine[];
    return (x) => {
      if (x.maxSize === undefined) return true;
      const live = machines.filter(
        (m) => m.metadata.labels?.[LabelDeploymentName] === x.name && !isMachineGoing(m),
      );
      const bound = live.filter((m) => m.metadata.labels?.[LabelMachineNodeClaim]).length;
      const waiting = this.scalers.get(`${x.namespace}/${x.name}`)?.waitingAdmitted ?? 0;
      return bound + Math.max(live.length - bound, waiting + 1) <= x.maxSize;
    };
  }

  /**
   * The instance types of `usable` and `held` deployments whose taints `taints` cover; names are computed over
   * `snap`'s usable and held ones (stable). An offering is available while one of its usable deployments has room;
   * held deployments (paused, preflight-blocked) are offered but never available.
   */
  private offer(
    usable: ResolvedDeployment[],
    held: ResolvedDeployment[],
    snap: DeploymentsSnapshot,
    taints: readonly Taint[],
    room: (d: ResolvedDeployment) => boolean,
  ): ReturnType<typeof instanceTypesOf> {
    const ids = new Set([...usable, ...held].map((d) => d.name));
    const heldIds = new Set(held.map((d) => d.name));
    return instanceTypesOf(
      [...snap.usable, ...snap.held],
      (d) => !heldIds.has(d.name) && room(d),
      (d) => ids.has(d.name) && taintsCovered(d.taints, taints),
    );
  }

  async instanceTypes(nodePool: NodePool): Promise<InstanceType[]> {
    const ref = nodePool.spec.template.spec.nodeClassRef;
    if (ref.group !== ClusterAPIGroup || ref.kind !== ClusterAPINodeClassKind)
      throw new NodeClassNotReadyError(
        `NodePool "${nodePool.metadata.name}" references ${ref.group}/${ref.kind}; the clusterapi provider launches only ${ClusterAPIGroup}/${ClusterAPINodeClassKind}`,
      );
    const { usable, held } = await this.resolve(ref.name);
    const snap = await this.snapshot();
    const room = await this.roomFor();
    const taints = [
      ...(nodePool.spec.template.spec.taints ?? []),
      ...(nodePool.spec.template.spec.startupTaints ?? []),
    ];
    return this.ice.apply(this.offer(usable, held, snap, taints, room).instanceTypes);
  }

  async create(nodeClaim: NodeClaim): Promise<NodeClaim> {
    const name = nodeClaim.metadata.name;
    if (!name)
      throw new CreateError(
        'NodeClaim has no metadata.name; set a name before launching',
        'InvalidNodeClaim',
      );
    const ref = nodeClaim.spec.nodeClassRef;
    if (ref.group !== ClusterAPIGroup || ref.kind !== ClusterAPINodeClassKind)
      throw new CreateError(
        `NodeClaim "${name}" spec.nodeClassRef is ${ref.group}/${ref.kind} "${ref.name}", but the clusterapi provider launches only ${ClusterAPIGroup}/${ClusterAPINodeClassKind}; point the NodePool at a ClusterAPINodeClass`,
        'NodeClassNotSupported',
      );
    const timeout = this.deps.machineTimeoutSeconds ?? 600;

    // Idempotency: a Machine already bound to this NodeClaim (an earlier create, a restart).
    const existing = (
      (
        await this.deps.management.list('Machine', {
          namespace: this.deps.namespace,
          labelSelector: { [LabelMachineNodeClaim]: name },
        })
      ).items as Machine[]
    ).find((m) => !isMachineGoing(m));
    if (existing) {
      const mdName = existing.metadata.labels?.[LabelDeploymentName] ?? '';
      const m = existing.spec.providerID
        ? existing
        : await this.scaler(this.deps.namespace, mdName).machineFor(name, timeout);
      return this.launched(nodeClaim, m, await this.snapshot());
    }

    await this.releaseOrphanedMachines();
    const taints = [...(nodeClaim.spec.taints ?? []), ...(nodeClaim.spec.startupTaints ?? [])];
    const tried = new Set<string>();
    const full: OfferingRef[] = [];
    for (let attempt = 0; attempt < 5; attempt++) {
      const { usable } = await this.resolve(ref.name, attempt > 0);
      const snap = await this.snapshot();
      const room = await this.roomFor();
      const { instanceTypes, offerings } = this.offer(
        usable.filter((d) => !tried.has(d.name)),
        [],
        snap,
        taints,
        room,
      );
      let selection: ReturnType<typeof selectLaunchOption>;
      try {
        selection = selectLaunchOption(instanceTypes, nodeClaim.spec.requirements ?? [], (it, z, ct) =>
          this.ice.isUnavailable(it, z, ct),
        );
      } catch (err) {
        throw new CreateError(
          `NodeClaim "${name}" spec.requirements are malformed: ${(err as Error).message}`,
          'InvalidRequirements',
          undefined,
          { cause: err },
        );
      }
      if (!selection.ok && tried.size > 0)
        throw new InsufficientCapacityError(
          `NodeClaim "${name}": MachineDeployment(s) ${[...tried].sort().join(', ')} at their max size (${AnnotationMaxSize}) or failing to make Machines, and no other compatible offering is available`,
          full,
        );
      if (!selection.ok)
        throw new InsufficientCapacityError(
          selection.reason === 'NoCompatibleOffering'
            ? `NodeClaim "${name}": no MachineDeployment selected by ClusterAPINodeClass "${ref.name}" satisfies its requirements and taints`
            : `NodeClaim "${name}": all ${selection.compatible.length} compatible offerings are unavailable: ${describeOfferings(selection.compatible)}`,
          selection.compatible,
        );
      const { instanceType, offering } = selection.option;
      const o = offerings.find(
        (x) =>
          x.instanceType === instanceType.name &&
          x.zone === offering.zone &&
          x.capacityType === offering.capacityType,
      )!;
      const d = o.deployments.find((x) => room(x) && !tried.has(x.name)) ?? o.deployments[0]!;
      try {
        const m = await this.scaler(d.namespace, d.name).machineFor(name, timeout);
        return this.launched(nodeClaim, m, snap, d);
      } catch (err) {
        if (!(err instanceof InsufficientCapacityError)) throw err;
        // The infrastructure could not make the Machine: that offering is unavailable for the cache's TTL.
        if (err instanceof MachineFailedError)
          this.ice.markUnavailable(
            instanceType.name,
            offering.zone,
            offering.capacityType,
            err.machineFailure,
          );
        tried.add(d.name); // at max size or failed: try the next cheapest
        full.push({
          instanceType: instanceType.name,
          zone: offering.zone,
          capacityType: offering.capacityType,
          priceUSDPerHour: offering.priceUSDPerHour,
        });
      }
    }
    throw new InsufficientCapacityError(
      `NodeClaim "${name}": every compatible MachineDeployment is at its max size`,
    );
  }

  /** The launched NodeClaim for `machine` (labels of its deployment's instance type and offering). */
  private launched(
    nodeClaim: NodeClaim,
    machine: Machine,
    snap: DeploymentsSnapshot,
    chosen?: ResolvedDeployment,
  ): NodeClaim {
    const out = structuredClone(nodeClaim);
    const view = this.machineView(machine, snap, chosen);
    const requirementLabels: Record<string, string> = {};
    for (const r of nodeClaim.spec.requirements ?? [])
      if (r.operator === 'In' && r.values?.length === 1) requirementLabels[r.key] = r.values[0]!;
    out.metadata.labels = {
      ...requirementLabels,
      ...(nodeClaim.metadata.labels ?? {}),
      ...view.metadata.labels,
    };
    out.metadata.annotations = { ...(nodeClaim.metadata.annotations ?? {}), ...view.metadata.annotations };
    out.status = { ...(out.status ?? {}), ...view.status };
    return out;
  }

  /** A Machine as a NodeClaim (get/list/create). */
  private machineView(machine: Machine, snap: DeploymentsSnapshot, chosen?: ResolvedDeployment): NodeClaim {
    const ns = machine.metadata.namespace ?? this.deps.namespace;
    const mdName = machine.metadata.labels?.[LabelDeploymentName] ?? '';
    const d =
      chosen ?? snap.usable.find((x) => x.name === mdName) ?? snap.held.find((x) => x.name === mdName);
    const typeName = d ? (snap.typeNames.get(`${d.namespace}/${d.name}`) ?? d.instanceTypeName) : undefined;
    const labels: Record<string, string> = d
      ? {
          ...d.labels,
          [LabelInstanceType]: typeName!,
          [LabelTopologyZone]: d.zone,
          [LabelCapacityType]: d.capacityType,
        }
      : {};
    return {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: {
        name: machine.metadata.labels?.[LabelMachineNodeClaim] ?? machine.metadata.name!,
        labels,
        annotations: {
          [AnnotationNodeClaimMachine]: `${ns}/${machine.metadata.name}`,
          [AnnotationNodeClaimMachineDeployment]: `${ns}/${mdName}`,
          ...(d ? { [AnnotationNodeClaimPrice]: String(d.priceUSDPerHour) } : {}),
        },
        ...(machine.metadata.creationTimestamp
          ? { creationTimestamp: machine.metadata.creationTimestamp }
          : {}),
      },
      spec: {
        nodeClassRef: { group: ClusterAPIGroup, kind: ClusterAPINodeClassKind, name: '' },
        requirements: [],
      },
      status: {
        ...(machine.spec.providerID ? { providerID: machine.spec.providerID } : {}),
        ...(d ? { capacity: formatResources(d.capacity), allocatable: formatResources(d.allocatable) } : {}),
      },
    } as NodeClaim;
  }

  private async machineByProviderID(providerID: string): Promise<Machine | undefined> {
    const list = await this.deps.management.list('Machine', { namespace: this.deps.namespace });
    return (list.items as Machine[]).find((m) => m.spec.providerID === providerID);
  }

  async get(providerID: string): Promise<NodeClaim> {
    const m = await this.machineByProviderID(providerID);
    if (!m || isMachineGoing(m))
      throw new NodeClaimNotFoundError(
        `no live Machine with provider ID ${providerID} in ${this.deps.namespace}`,
        {
          providerID,
        },
      );
    return this.machineView(m, await this.snapshot());
  }

  async list(): Promise<NodeClaim[]> {
    const snap = await this.snapshot();
    const members = new Set(snap.deployments.map((d) => d.metadata.name));
    const list = await this.deps.management.list('Machine', { namespace: this.deps.namespace });
    return (list.items as Machine[])
      .filter(
        (m) =>
          m.metadata.labels?.[LabelMachineNodeClaim] &&
          members.has(m.metadata.labels?.[LabelDeploymentName] ?? '') &&
          m.spec.providerID &&
          !isMachineGoing(m),
      )
      .map((m) => this.machineView(m, snap));
  }

  async delete(nodeClaim: NodeClaim): Promise<void> {
    const providerID = nodeClaim.status?.providerID;
    let m: Machine | undefined;
    if (providerID) m = await this.machineByProviderID(providerID);
    else if (nodeClaim.metadata.name)
      m = (
        (
          await this.deps.management.list('Machine', {
            namespace: this.deps.namespace,
            labelSelector: { [LabelMachineNodeClaim]: nodeClaim.metadata.name },
          })
        ).items as Machine[]
      )[0];
    if (!m || isMachineGoing(m))
      throw new NodeClaimNotFoundError(
        `no live Machine for NodeClaim "${nodeClaim.metadata.name}" (${providerID ?? 'no provider ID'})`,
        providerID ? { providerID } : {},
      );
    const mdName = m.metadata.labels?.[LabelDeploymentName];
    if (!mdName) {
      await this.deps.management.tryDelete('Machine', m.metadata.name!, this.deps.namespace);
      return;
    }
    await this.scaler(this.deps.namespace, mdName).deleteMachine(m);
  }

  /**
   * Unbinds the namespace's Machines whose `karpenter.cluster.x-k8s.io/nodeclaim` label names a NodeClaim that no
   * longer exists in the workload cluster: a NodeClaim deleted before it launched (the launch timeout after
   * `MachineNotReady`, when the infrastructure never gave its Machine a provider ID) is finalized without
   * `delete` (no provider ID, as upstream), and its Machine would otherwise stay bound and counted in the replicas
   * for ever, each retry adding one more. Released, the Machine is an unclaimed one again: the next waiting NodeClaim
   * takes it (oldest first) or {@link trimUnclaimed} removes it after the grace. Machines are listed before the
   * NodeClaims (a label is written only for an existing NodeClaim, so one missing from the later list is gone); the
   * label is removed with the Machine's resourceVersion (a concurrent bind wins). Concurrent calls share one pass.
   * Without a workload client nothing is done. Returns the released Machines' names.
   */
  releaseOrphanedMachines(): Promise<string[]> {
    this.releasing ??= this.releaseOrphans().finally(() => {
      this.releasing = undefined;
    });
    return this.releasing;
  }

  private releasing: Promise<string[]> | undefined;

  /** One pass of {@link releaseOrphanedMachines}. */
  private async releaseOrphans(): Promise<string[]> {
    const workload = this.deps.workload;
    if (!workload) return [];
    const { management, namespace } = this.deps;
    const bound = ((await management.list('Machine', { namespace })).items as Machine[]).filter(
      (m) => m.metadata.labels?.[LabelMachineNodeClaim] && !isMachineGoing(m),
    );
    if (bound.length === 0) return [];
    const claims = new Set(
      ((await workload.list('NodeClaim')).items as NodeClaim[]).map((nc) => nc.metadata.name),
    );
    const released: string[] = [];
    for (const m of bound) {
      if (claims.has(m.metadata.labels?.[LabelMachineNodeClaim])) continue;
      const labels = { ...(m.metadata.labels ?? {}) };
      delete labels[LabelMachineNodeClaim];
      try {
        await management.update({ ...m, metadata: { ...m.metadata, labels } });
        released.push(m.metadata.name ?? '');
      } catch (err) {
        if (!isConflict(err) && !isNotFound(err)) throw err;
      }
    }
    return released;
  }

  /**
   * Removes unclaimed Machines of every member deployment created more than `unclaimedGraceSeconds` ago (default
   * 300) that no NodeClaim waits for, down to min-size (see `DeploymentScaler.trimUnclaimed`). Called periodically
   * by the ClusterAPINodeClass controller. Returns the count per deployment that lost Machines.
   */
  async trimUnclaimed(): Promise<Record<string, number>> {
    await this.releaseOrphanedMachines();
    const snap = await this.snapshot();
    const out: Record<string, number> = {};
    for (const md of snap.deployments) {
      const name = md.metadata.name ?? '';
      const n = await this.scaler(this.deps.namespace, name).trimUnclaimed(
        this.deps.unclaimedGraceSeconds ?? 300,
      );
      if (n > 0) out[name] = n;
    }
    return out;
  }

  /**
   * The member deployments (`namespace/name`) whose live Machines are at or below their min-size
   * (`cluster-api-autoscaler-node-group-min-size` > 0): removing a NodeClaim of one saves nothing, CAPI only
   * replaces its Machine with an unclaimed one (issue 29). Malformed bounds count as none.
   */
  async atMinSize(): Promise<Set<string>> {
    const snap = await this.snapshot();
    const machines = (await this.deps.management.list('Machine', { namespace: this.deps.namespace }))
      .items as Machine[];
    const out = new Set<string>();
    for (const md of snap.deployments) {
      let min = 0;
      try {
        min = sizeBounds(md).min;
      } catch {
        continue;
      }
      if (min === 0 || md.metadata.deletionTimestamp) continue;
      const live = machines.filter(
        (m) => m.metadata.labels?.[LabelDeploymentName] === md.metadata.name && !isMachineGoing(m),
      ).length;
      if (live <= min) out.add(`${md.metadata.namespace ?? this.deps.namespace}/${md.metadata.name}`);
    }
    return out;
  }

  async isDrifted(nodeClaim: NodeClaim): Promise<string | undefined> {
    const providerID = nodeClaim.status?.providerID;
    if (!providerID) return undefined;
    const m = await this.machineByProviderID(providerID);
    if (!m) return undefined;
    const mdName = m.metadata.labels?.[LabelDeploymentName];
    if (!mdName) return undefined;
    const md = (await this.deps.management.tryGet('MachineDeployment', mdName, this.deps.namespace)) as
      | MachineDeployment
      | undefined;
    if (!md || md.metadata.labels?.[LabelKarpenterMember] === undefined) return DriftMachineDeploymentGone;
    const setName = m.metadata.labels?.[LabelSetName];
    const ms = setName
      ? ((await this.deps.management.tryGet('MachineSet', setName, this.deps.namespace)) as
          | MachineSet
          | undefined)
      : undefined;
    const made = ms
      ? templateHash(ms.spec.template.spec)
      : templateHash({ ...md.spec.template.spec, ...(m.spec.version ? { version: m.spec.version } : {}) });
    if (made !== templateHash(md.spec.template.spec)) return DriftMachineTemplate;
    if (m.spec.version && md.spec.template.spec.version && m.spec.version !== md.spec.template.spec.version)
      return DriftMachineTemplate;
    return undefined;
  }
}
