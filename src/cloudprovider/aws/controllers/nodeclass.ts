/**
 * `nodeclass` (EC2NodeClass): resolves each class's selectors against AWS into its `status` and readiness
 * conditions, after aws/karpenter-provider-aws `pkg/controllers/nodeclass/{controller,subnet,securitygroup,ami,
 * instanceprofile}.go`. Keyed by class name; runs on every spec change (generation), on the deletion of one of
 * its NodeClaims, and every `periodSeconds` (default 60).
 *
 * A reconcile:
 * - puts the `karpenter.k8s.aws/termination` finalizer on the class;
 * - `status.subnets` (most free IPs first) → `SubnetsReady` (False `SubnetsNotFound` naming the terms);
 * - `status.securityGroups` → `SecurityGroupsReady` (False `SecurityGroupsNotFound` naming the terms);
 * - `status.amis` (alias via SSM for the cluster's Kubernetes version, or id/name/owner/tags/ssmParameter; newest
 *   non-deprecated first per requirement set) → `AMIsReady` (False `AMINotFound` / `UnsupportedAlias`);
 * - `status.instanceProfile` (created from `spec.role`, or `spec.instanceProfile`) → `InstanceProfileReady`
 *   (False `InstanceProfileCreationFailed` with IAM's message);
 * - `status.capacityReservations` from `capacityReservationSelectorTerms` (`../nodeclass/capacityreservations.ts`;
 *   their free counts go to the provider's availability cache) → `CapacityReservationsReady`, False
 *   `CapacityReservationsNotFound` naming each term that matched no active reservation, or
 *   `CapacityReservationIncompatible` naming a reservation the class cannot launch into (a zone without a subnet of
 *   the class, an architecture none of its AMIs serve); True with no terms or with the `ReservedCapacity` gate off;
 * - `PlacementGroupReady` from `spec.placementGroupSelector` (`../nodeclass/placementgroups.ts`, the provider's
 *   cache): False `PlacementGroupNotFound` when no available group matches, `PlacementGroupResolutionFailed` when
 *   EC2 fails; True without a selector;
 * - `ValidationSucceeded`: for an AL2023 class first the cluster CIDR (False `ClusterCIDRResolutionFailed` "Failed to
 *   detect the cluster CIDR" when it cannot be resolved, as upstream `validation.go`), then the CRD rules (the same
 *   check as `nodeclass.status`), then, with `validationLaunch` (the provider's) and without `DISABLE_DRY_RUN`, EC2's
 *   authorization of CreateLaunchTemplate, CreateFleet and RunInstances (`./validation.ts`: False
 *   `CreateLaunchTemplateAuthCheckFailed` / `CreateFleetAuthCheckFailed` / `RunInstancesAuthCheckFailed`, verdicts
 *   cached 30 min per class state);
 * - root `Ready` = all of them; the status is patched only when it changed.
 * An AWS failure leaves that part as it was and the reconcile is retried with backoff (the other parts are still
 * written). A deleting class keeps its finalizer while NodeClaims reference it (Event
 * `WaitingOnNodeClaimTermination`, re-checked on NodeClaim deletion and every 10 min), then its instance
 * profiles are deleted, `onDeleted` runs (the provider's launch templates) and the finalizer is removed.
 */
import type { EC2Client } from '@aws-sdk/client-ec2';
import type { IAMClient } from '@aws-sdk/client-iam';
import type { SSMClient } from '@aws-sdk/client-ssm';
import type { EC2NodeClass, NodeClaim } from '../../../apis/karpenter.ts';
import { nodeClassValidationError } from '../../../controllers/nodepool/nodeclass.ts';
import {
  ConditionSet,
  type Controller,
  type ControllerDeps,
  defineController,
  errorMessage,
  type InformerController,
  type InformerSyncOptions,
  type ReconcileResult,
  watch,
  withFinalizer,
  withoutFinalizer,
} from '../../../controllers/runtime/index.ts';
import { isConflict, isNotFound } from '../../../kube/errors.ts';
import { resolveAMIFamily } from '../catalog/allocatable.ts';
import { getInstanceTypeSpec } from '../catalog/index.ts';
import { isServerFault } from '../cluster.ts';
import { AMIResolver } from '../nodeclass/amis.ts';
import {
  CapacityReservationAvailability,
  type CapacityReservationSelectorTerm,
  type CapacityReservationStatus,
  type ResolvedCapacityReservations,
  resolveCapacityReservations,
} from '../nodeclass/capacityreservations.ts';
import { describeTerms } from '../nodeclass/filters.ts';
import { InstanceProfileResolver } from '../nodeclass/instanceprofile.ts';
import { resolveSecurityGroups, resolveSubnets } from '../nodeclass/network.ts';
import {
  describePlacementGroupSelector,
  PlacementGroups,
  placementGroupSelector,
} from '../nodeclass/placementgroups.ts';
import {
  ConditionAMIsReady,
  ConditionCapacityReservationsReady,
  ConditionInstanceProfileReady,
  ConditionPlacementGroupReady,
  ConditionSecurityGroupsReady,
  ConditionSubnetsReady,
  ConditionValidationSucceeded,
  EC2NodeClassResolvedConditions,
  type EC2NodeClassStatus,
  FinalizerEC2NodeClassTermination,
} from '../nodeclass/types.ts';
import type { ValidationLaunch } from '../provider.ts';
import { reconcileEC2NodeClassHash } from './nodeclass-hash.ts';
import { DryRunValidation } from './validation.ts';

/** The dependents of `Ready` on an EC2NodeClass (upstream `StatusConditions`). */
export const EC2NodeClassDependents: readonly string[] = [
  ...EC2NodeClassResolvedConditions,
  ConditionValidationSucceeded,
];

/** Options of {@link EC2NodeClassController}. */
export interface EC2NodeClassControllerOptions
  extends Omit<ControllerDeps, 'cloudProvider'>,
    InformerSyncOptions {
  ec2: EC2Client;
  ssm: SSMClient;
  iam: IAMClient;
  /** AWS region (instance profile path and tags). */
  region: string;
  /** `--cluster-name` (instance profile name, path and tags). */
  clusterName: string;
  /** The cluster's Kubernetes `major.minor` (e.g. `1.32`), for AMI aliases. */
  kubernetesVersion: () => Promise<string>;
  /** Runs once a deleting class has no NodeClaims left, before the finalizer goes (e.g. launch-template cleanup). */
  onDeleted?: (nodeClass: EC2NodeClass) => Promise<void>;
  /**
   * The instance-profile resolver (shared with `instanceprofile.garbagecollection`, which reads its protected
   * profiles); default a private one on `iam`, `region`, `clusterName` and `clock`.
   */
  instanceProfiles?: InstanceProfileResolver;
  /** Seconds between re-resolutions of each class (upstream: subnets every minute; default 60). */
  periodSeconds?: number;
  /** Parallel reconciles (default 10, as upstream). */
  concurrency?: number;
  /** The cluster CA bundle the EC2NodeClass hash includes (upstream `GetCABundle`; default ''). */
  caBundle?: string;
  /** The `ReservedCapacity` feature gate (default true, as upstream): resolve `capacityReservationSelectorTerms`. */
  reservedCapacity?: boolean;
  /** Where the reservations' free counts go (the provider's; default a private one). */
  capacityReservations?: CapacityReservationAvailability;
  /** The placement-group provider launches read (the provider's, so both see one group; default a private one). */
  placementGroups?: PlacementGroups;
  /**
   * Makes the cluster's service CIDR known, or throws why not (the provider's `resolveClusterCIDR`, upstream
   * `ResolveClusterCIDR`). Run first in the validation of AL2023 classes; unset, AL2023 classes are not checked.
   */
  resolveClusterCIDR?: () => Promise<unknown>;
  /**
   * Ensures the class's launch template and builds the `DryRun` CreateFleet/RunInstances requests (the provider's
   * `validationLaunch`): with it, `ValidationSucceeded` also needs EC2's authorization (`./validation.ts`, upstream
   * `validation.go`); unset, only the CRD rules are checked.
   */
  validationLaunch?: (nodeClass: EC2NodeClass) => Promise<ValidationLaunch>;
  /** `DISABLE_DRY_RUN`: with `validationLaunch`, make no EC2 call for validation (default false, as upstream). */
  disableDryRun?: boolean;
}

/** `ValidationSucceeded=False` reason of an AL2023 class when the cluster CIDR is unknown (upstream, verbatim). */
export const ReasonClusterCIDRResolutionFailed = 'ClusterCIDRResolutionFailed';
/** Its message (upstream `validation.go`, verbatim). */
export const MessageClusterCIDRResolutionFailed = 'Failed to detect the cluster CIDR';

/** The EC2NodeClass controller. */
export class EC2NodeClassController implements Controller {
  readonly name = 'nodeclass';
  private readonly kit: InformerController;
  private readonly amis: AMIResolver;
  private readonly profiles: InstanceProfileResolver;
  private readonly availability: CapacityReservationAvailability;
  private readonly placementGroups: PlacementGroups;
  private readonly dryRun: DryRunValidation | undefined;

  constructor(private readonly opts: EC2NodeClassControllerOptions) {
    this.dryRun = opts.validationLaunch
      ? new DryRunValidation({
          ec2: opts.ec2,
          launch: opts.validationLaunch,
          disabled: opts.disableDryRun === true,
          now: () => opts.clock.now(),
        })
      : undefined;
    this.availability = opts.capacityReservations ?? new CapacityReservationAvailability();
    this.placementGroups =
      opts.placementGroups ?? new PlacementGroups({ ec2: opts.ec2, now: () => opts.clock.now() });
    this.amis = new AMIResolver({ ec2: opts.ec2, ssm: opts.ssm, now: () => opts.clock.now() });
    this.profiles =
      opts.instanceProfiles ??
      new InstanceProfileResolver({
        iam: opts.iam,
        region: opts.region,
        clusterName: opts.clusterName,
        now: () => opts.clock.now(),
      });
    this.kit = defineController({
      name: this.name,
      deps: opts,
      concurrency: opts.concurrency,
      watches: [
        watch('EC2NodeClass', {
          events: ['add', 'update'],
          // an update counts when the spec (generation), the deletion or the object (uid) changed
          map: (b, e) =>
            e.type !== 'update' ||
            e.old.metadata.generation !== b.metadata.generation ||
            !!e.old.metadata.deletionTimestamp !== !!b.metadata.deletionTimestamp ||
            e.old.metadata.uid !== b.metadata.uid
              ? b.metadata.name
              : undefined,
        }),
        watch('NodeClaim', {
          events: ['delete'],
          map: (nc) => {
            const ref = nc.spec?.nodeClassRef;
            return ref?.kind === 'EC2NodeClass' && ref.group === 'karpenter.k8s.aws' ? ref.name : undefined;
          },
        }),
      ],
      reconcile: (key) => this.reconcile(key),
    });
  }

  /** Runs until `signal` aborts (see {@link defineController}); never rejects. */
  start(signal: AbortSignal): Promise<void> {
    return this.kit.start(signal);
  }

  /** Reconciles the EC2NodeClass `name` (exposed for tests). Throws on AWS/API failures (retried). */
  async reconcile(name: string): Promise<ReconcileResult> {
    const { client } = this.opts;
    const nodeClass = (await client.tryGet('EC2NodeClass', name)) as EC2NodeClass | undefined;
    if (!nodeClass) return {};
    if (nodeClass.metadata.deletionTimestamp) return this.finalize(nodeClass);
    if (!nodeClass.metadata.finalizers?.includes(FinalizerEC2NodeClassTermination)) {
      try {
        const stored = await client.patch(
          'EC2NodeClass',
          name,
          undefined,
          {
            metadata: {
              finalizers: withFinalizer(nodeClass.metadata.finalizers, FinalizerEC2NodeClassTermination),
              resourceVersion: nodeClass.metadata.resourceVersion,
            },
          },
          { type: 'merge' },
        );
        nodeClass.metadata = (stored as EC2NodeClass).metadata;
      } catch (err) {
        if (isNotFound(err)) return {};
        if (isConflict(err)) return { requeue: true };
        throw err;
      }
    }
    try {
      const { stored } = await reconcileEC2NodeClassHash(client, nodeClass, this.opts.caBundle ?? '');
      if (stored) nodeClass.metadata = stored.metadata;
    } catch (err) {
      if (isNotFound(err)) return {};
      throw err;
    }
    const before = JSON.stringify(nodeClass.status ?? {});
    const errors = await this.resolve(nodeClass);
    if (JSON.stringify(nodeClass.status ?? {}) !== before) {
      const st = nodeClass.status as EC2NodeClassStatus;
      try {
        await client.patchStatus(
          'EC2NodeClass',
          name,
          undefined,
          {
            metadata: { resourceVersion: nodeClass.metadata.resourceVersion },
            status: {
              subnets: st.subnets ?? null,
              securityGroups: st.securityGroups ?? null,
              amis: st.amis ?? null,
              instanceProfile: st.instanceProfile ?? null,
              capacityReservations: st.capacityReservations ?? null,
              conditions: st.conditions,
            },
          },
          { type: 'merge' },
        );
      } catch (err) {
        if (isNotFound(err)) return {};
        if (isConflict(err)) return { requeue: true };
        throw err;
      }
      const ready = st.conditions?.find((c) => c.type === 'Ready');
      if (ready?.status === 'False')
        void this.opts.recorder.publish(
          nodeClass,
          'Warning',
          ready.reason ?? 'NotReady',
          ready.message ?? '',
        );
    }
    if (errors.length > 0) throw new Error(`EC2NodeClass ${name}: ${errors.join('; ')}`);
    return { requeueAfter: this.opts.periodSeconds ?? 60 };
  }

  /** Resolves every part into `nodeClass.status`; returns the AWS failures (those parts are left unchanged). */
  private async resolve(nodeClass: EC2NodeClass): Promise<string[]> {
    const { clock, ec2 } = this.opts;
    nodeClass.status ??= {};
    const st = nodeClass.status as EC2NodeClassStatus;
    const conds = new ConditionSet(nodeClass, EC2NodeClassDependents, clock);
    const errors: string[] = [];
    const spec = nodeClass.spec;

    const withReservations =
      this.opts.reservedCapacity !== false &&
      ((spec.capacityReservationSelectorTerms ?? []) as CapacityReservationSelectorTerm[]).length > 0;
    const [subnets, groups, amis, profile, reservations] = await Promise.allSettled([
      resolveSubnets(ec2, nodeClass),
      resolveSecurityGroups(ec2, nodeClass),
      this.opts.kubernetesVersion().then((v) => this.amis.resolve(nodeClass, v)),
      this.profiles.ensure(nodeClass, st.instanceProfile),
      withReservations
        ? resolveCapacityReservations(ec2, nodeClass, clock)
        : Promise.resolve<ResolvedCapacityReservations>({
            reservations: [],
            unmatchedTerms: [],
            available: new Map(),
          }),
    ]);

    if (subnets.status === 'rejected') errors.push(errorMessage(subnets.reason));
    else if (subnets.value.length === 0) {
      delete st.subnets;
      conds.setFalse(
        ConditionSubnetsReady,
        'SubnetsNotFound',
        `SubnetSelector did not match any Subnets (subnetSelectorTerms: ${describeTerms(spec.subnetSelectorTerms)})`,
      );
    } else {
      st.subnets = subnets.value.map(({ id, zone, zoneID }) => ({ id, zone, ...(zoneID ? { zoneID } : {}) }));
      conds.setTrue(ConditionSubnetsReady);
    }

    if (groups.status === 'rejected') errors.push(errorMessage(groups.reason));
    else if (groups.value.length === 0 && (spec.securityGroupSelectorTerms ?? []).length > 0) {
      delete st.securityGroups;
      conds.setFalse(
        ConditionSecurityGroupsReady,
        'SecurityGroupsNotFound',
        `SecurityGroupSelector did not match any SecurityGroups (securityGroupSelectorTerms: ${describeTerms(spec.securityGroupSelectorTerms)})`,
      );
    } else {
      if (groups.value.length > 0) st.securityGroups = groups.value;
      else delete st.securityGroups;
      conds.setTrue(ConditionSecurityGroupsReady);
    }

    if (amis.status === 'rejected') errors.push(errorMessage(amis.reason));
    else if ('reason' in amis.value) {
      delete st.amis;
      conds.setFalse(ConditionAMIsReady, amis.value.reason, amis.value.message);
    } else {
      st.amis = amis.value.amis;
      conds.setTrue(ConditionAMIsReady);
    }

    if (profile.status === 'rejected') {
      errors.push(errorMessage(profile.reason));
      conds.setFalse(
        ConditionInstanceProfileReady,
        'InstanceProfileCreationFailed',
        errorMessage(profile.reason),
      );
    } else {
      st.instanceProfile = profile.value;
      conds.setTrue(ConditionInstanceProfileReady);
    }

    if (reservations.status === 'rejected') errors.push(errorMessage(reservations.reason));
    else this.applyReservations(nodeClass, conds, reservations.value);

    await this.resolvePlacementGroup(nodeClass, conds, errors);

    if (!(await this.clusterCIDRKnown(nodeClass, conds, errors))) return errors;
    const invalid = await nodeClassValidationError(nodeClass);
    if (invalid) conds.setFalse(ConditionValidationSucceeded, 'ValidationFailed', invalid);
    else await this.authorized(nodeClass, conds, errors);
    return errors;
  }

  /**
   * The EC2 authorization part of `ValidationSucceeded` (`./validation.ts`): True when EC2 allows the dry runs (or
   * `DISABLE_DRY_RUN`, or no `validationLaunch`, or while a resolved part the dry runs need is not True: those
   * conditions keep the class from Ready themselves), False with upstream's `*AuthCheckFailed` reason when it refuses;
   * an EC2 failure leaves the condition as it was and is returned as an error (the reconcile is retried).
   */
  private async authorized(nodeClass: EC2NodeClass, conds: ConditionSet, errors: string[]): Promise<void> {
    const needed = [
      ConditionAMIsReady,
      ConditionInstanceProfileReady,
      ConditionSecurityGroupsReady,
      ConditionSubnetsReady,
    ];
    if (!this.dryRun || this.dryRun.disabled || !needed.every((t) => conds.isTrue(t))) {
      conds.setTrue(ConditionValidationSucceeded);
      return;
    }
    const verdict = await this.dryRun.validate(nodeClass);
    if (verdict.kind === 'allowed') conds.setTrue(ConditionValidationSucceeded);
    else if (verdict.kind === 'refused')
      conds.setFalse(ConditionValidationSucceeded, verdict.reason, verdict.message);
    else errors.push(verdict.error);
  }

  /**
   * `PlacementGroupReady` (upstream `pkg/controllers/nodeclass/placementgroup.go`): True without
   * `spec.placementGroupSelector` or when it names an available group; False `PlacementGroupNotFound` when none is
   * available (unknown, `pending`, `deleting`), False `PlacementGroupResolutionFailed` when EC2 fails (the error is
   * returned and the reconcile retried). The messages start with upstream's and name the field and the fix.
   */
  private async resolvePlacementGroup(
    nodeClass: EC2NodeClass,
    conds: ConditionSet,
    errors: string[],
  ): Promise<void> {
    const selector = placementGroupSelector(nodeClass);
    if (!selector) {
      conds.setTrue(ConditionPlacementGroupReady);
      return;
    }
    const field = describePlacementGroupSelector(selector);
    const which = selector.name ?? selector.id ?? '';
    try {
      const pg = await this.placementGroups.get(nodeClass);
      if (pg) {
        conds.setTrue(ConditionPlacementGroupReady);
        return;
      }
      conds.setFalse(
        ConditionPlacementGroupReady,
        'PlacementGroupNotFound',
        `Placement group "${which}" not found: EC2NodeClass ${nodeClass.metadata.name} ${field} matches no ` +
          `placement group in state available in ${this.opts.region}; create it (or wait until it is available) ` +
          'or fix spec.placementGroupSelector',
      );
    } catch (err) {
      errors.push(`resolving placement group, ${errorMessage(err)}`);
      conds.setFalse(
        ConditionPlacementGroupReady,
        'PlacementGroupResolutionFailed',
        `Failed to resolve placement group: EC2NodeClass ${nodeClass.metadata.name} ${field}: ${errorMessage(err)}; ` +
          'check the name or id and the ec2:DescribePlacementGroups permission',
      );
    }
  }

  /**
   * Upstream's first validation step: an AL2023 class needs the cluster CIDR (nodeadm `spec.cluster.cidr`). When it
   * cannot be resolved: a server fault is retried leaving `ValidationSucceeded` as it was; any other failure sets
   * `ValidationSucceeded=False` {@link ReasonClusterCIDRResolutionFailed} "Failed to detect the cluster CIDR" (so the
   * class is not Ready and nothing launches) and is returned as an error `failed to detect the cluster CIDR, <why>`.
   * Returns whether validation may go on. Upstream `pkg/controllers/nodeclass/validation.go` `Reconcile`.
   */
  private async clusterCIDRKnown(
    nodeClass: EC2NodeClass,
    conds: ConditionSet,
    errors: string[],
  ): Promise<boolean> {
    if (!this.opts.resolveClusterCIDR || resolveAMIFamily(nodeClass) !== 'AL2023') return true;
    try {
      await this.opts.resolveClusterCIDR();
      return true;
    } catch (err) {
      if (!isServerFault(err)) {
        conds.setFalse(
          ConditionValidationSucceeded,
          ReasonClusterCIDRResolutionFailed,
          MessageClusterCIDRResolutionFailed,
        );
      }
      errors.push(`failed to detect the cluster CIDR, ${errorMessage(err)}`);
      return false;
    }
  }

  /**
   * Writes `status.capacityReservations` and `CapacityReservationsReady` from what the terms resolved to, and
   * syncs the free counts into the availability cache. Reads the `status.subnets` and `status.amis` just resolved.
   */
  private applyReservations(
    nodeClass: EC2NodeClass,
    conds: ConditionSet,
    resolved: ResolvedCapacityReservations,
  ): void {
    const st = nodeClass.status as EC2NodeClassStatus;
    const terms = (nodeClass.spec.capacityReservationSelectorTerms ??
      []) as CapacityReservationSelectorTerm[];
    this.availability.sync(resolved.available);
    if (resolved.reservations.length > 0) st.capacityReservations = resolved.reservations;
    else delete st.capacityReservations;
    if (resolved.unmatchedTerms.length > 0) {
      const named = resolved.unmatchedTerms
        .map((i) => `capacityReservationSelectorTerms[${i}] ${JSON.stringify(terms[i])}`)
        .join(', ');
      conds.setFalse(
        ConditionCapacityReservationsReady,
        'CapacityReservationsNotFound',
        `EC2NodeClass ${nodeClass.metadata.name}: spec.${named} matched no active capacity reservation; ` +
          'fix the id, tags or ownerID (the reservation must be active and in this region), or remove the term',
      );
      return;
    }
    const bad = resolved.reservations.map((r) => incompatibility(nodeClass, r)).find((x) => x !== undefined);
    if (bad) {
      conds.setFalse(ConditionCapacityReservationsReady, 'CapacityReservationIncompatible', bad);
      return;
    }
    conds.setTrue(ConditionCapacityReservationsReady);
  }

  private async finalize(nodeClass: EC2NodeClass): Promise<ReconcileResult> {
    const { client } = this.opts;
    const name = nodeClass.metadata.name;
    if (!nodeClass.metadata.finalizers?.includes(FinalizerEC2NodeClassTermination)) return {};
    const claims = ((await client.list('NodeClaim')).items as NodeClaim[]).filter((nc) => {
      const ref = nc.spec?.nodeClassRef;
      return ref?.group === 'karpenter.k8s.aws' && ref.kind === 'EC2NodeClass' && ref.name === name;
    });
    if (claims.length > 0) {
      const names = claims.map((c) => c.metadata.name ?? '').sort();
      void this.opts.recorder.publish(
        nodeClass,
        'Normal',
        'WaitingOnNodeClaimTermination',
        `Waiting on NodeClaim termination for ${names.slice(0, 5).join(', ')}${names.length > 5 ? ` and ${names.length - 5} other(s)` : ''}`,
      );
      return { requeueAfter: 600 };
    }
    this.dryRun?.forget(name);
    const deleted = await this.profiles.deleteAll(nodeClass);
    if (deleted.length > 0)
      this.opts.logger.info(
        { controller: this.name, nodeclass: name, profiles: deleted },
        'deleted instance profiles',
      );
    await this.opts.onDeleted?.(nodeClass);
    try {
      await client.patch(
        'EC2NodeClass',
        name,
        undefined,
        {
          metadata: {
            finalizers: withoutFinalizer(nodeClass.metadata.finalizers, FinalizerEC2NodeClassTermination),
            resourceVersion: nodeClass.metadata.resourceVersion,
          },
        },
        { type: 'merge' },
      );
    } catch (err) {
      if (isNotFound(err)) return {};
      if (isConflict(err)) return { requeue: true };
      throw err;
    }
    return {};
  }
}

/**
 * Why the class cannot launch into reservation `r`, or undefined: its zone has no subnet of the class, or none of the
 * class's AMIs serves its instance type's architecture (from the embedded catalog; unknown types are not judged).
 */
function incompatibility(nodeClass: EC2NodeClass, r: CapacityReservationStatus): string | undefined {
  const st = nodeClass.status as EC2NodeClassStatus;
  const where = `EC2NodeClass ${nodeClass.metadata.name}: capacity reservation ${r.id} (${r.instanceType} in ${r.availabilityZone}, selected by spec.capacityReservationSelectorTerms)`;
  const zones = (st.subnets ?? []).map((s) => s.zone);
  if (zones.length > 0 && !zones.includes(r.availabilityZone)) {
    return (
      `${where} is in a zone none of the class's subnets is in (${[...new Set(zones)].sort().join(', ')}); ` +
      `add a subnet in ${r.availabilityZone} to spec.subnetSelectorTerms or narrow the reservation terms`
    );
  }
  const arch = getInstanceTypeSpec(r.instanceType)?.architecture;
  const amis = st.amis ?? [];
  if (arch && amis.length > 0) {
    const serves = amis.some((a) =>
      a.requirements.every((q) => q.key !== 'kubernetes.io/arch' || (q.values ?? []).includes(arch)),
    );
    if (!serves) {
      return (
        `${where} is ${arch}, but no AMI in status.amis serves ${arch}; ` +
        `add an ${arch} AMI to spec.amiSelectorTerms or select a reservation of an instance type the AMIs serve`
      );
    }
  }
  return undefined;
}
