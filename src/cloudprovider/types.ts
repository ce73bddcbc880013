/**
 * The CloudProvider contract: data types (instance types, offerings), the provider interface, its error
 * classes. Every provider (kwok, aws, clusterapi) implements it and passes the shared conformance suite.
 * Source of the model: kubernetes-sigs/karpenter `pkg/cloudprovider/types.go`.
 */
import type { NodeCondition } from '../apis/core.ts';
import type { CapacityType, InstanceType } from '../apis/instancetype.ts';
import type { NodeClaim, NodePool } from '../apis/karpenter.ts';

/** The instance-type model, defined in `apis/instancetype.ts` (re-exported for the providers). */
export type { CapacityType, InstanceType, Offering } from '../apis/instancetype.ts';

// ---------------------------------------------------------------------------------------------------------------
// The CloudProvider contract (added with the kwok provider). The shared instance-type model
// lives in `apis/instancetype.ts` (re-exported above); below is the provider interface, its helpers and errors.
// ---------------------------------------------------------------------------------------------------------------

/** A NodeClass kind a provider can launch from, e.g. `{group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass'}`. */
export interface NodeClassKind {
  group: string;
  kind: string;
}

/**
 * A node condition that, held long enough, makes Karpenter replace the node (node auto-repair).
 * Source: kubernetes-sigs/karpenter `pkg/cloudprovider/types.go` `RepairPolicy`.
 */
export interface RepairPolicy {
  /** Node condition type, e.g. `Ready`. */
  conditionType: NodeCondition['type'];
  /** The unhealthy status, e.g. `False`. */
  conditionStatus: NodeCondition['status'];
  /** Seconds the condition may hold before the node is force-terminated. */
  tolerationDurationSeconds: number;
}

/** One launch option of an instance type: instance type × zone × capacity type (price in USD/hour when known). */
export interface OfferingRef {
  instanceType: string;
  zone: string;
  capacityType: CapacityType;
  priceUSDPerHour?: number;
}

/**
 * The interface every cloud provider (kwok, aws, clusterapi) implements; controllers see the cloud only through
 * it. All methods are async (they are the I/O edge). Errors are the classes below, recognised by their `code`
 * (use the `is…Error` guards, which also work across module copies). Any other thrown error is transient:
 * the calling controller retries with backoff.
 *
 * Source: kubernetes-sigs/karpenter `pkg/cloudprovider/types.go` (`CloudProvider`), and the callers in
 * `pkg/controllers/nodeclaim/lifecycle` (launch, registration), `nodeclaim/garbagecollection`,
 * `node/termination`, `nodeclaim/disruption` (drift) and `node/health` (repair).
 */
export interface CloudProvider {
  /** Provider name, used as the `provider` metric label: `kwok`, `aws`, `clusterapi`. */
  readonly name: string;

  /**
   * NodeClass kinds this provider launches from; the first one is the default. NodePools whose
   * `spec.template.spec.nodeClassRef` names another kind are ignored by provisioning.
   */
  supportedNodeClasses(): NodeClassKind[];

  /**
   * Launches one instance for `nodeClaim` and returns the launched NodeClaim: a copy of the input with
   * `status.providerID`, `status.capacity`, `status.allocatable` (quantity strings), optionally `status.imageID`,
   * and `metadata.labels` resolved for the chosen launch: `node.kubernetes.io/instance-type`,
   * `topology.kubernetes.io/zone`, `karpenter.sh/capacity-type`, `kubernetes.io/arch`, `kubernetes.io/os`,
   * every label of the instance type, plus the NodeClaim's own labels and single-value `In` requirements.
   *
   * Choice: among the instance types named by the `node.kubernetes.io/instance-type` `In` requirement (all
   * types when absent) whose labels and offerings satisfy `spec.requirements` (zone, capacity type, ...),
   * the cheapest AVAILABLE offering (USD/hour) wins; offerings in the unavailable-offerings cache are skipped.
   *
   * Idempotency: not guaranteed across providers (the controller caches the result per NodeClaim UID and
   * garbage-collects leaked instances via {@link list}); kwok returns the existing launch for a NodeClaim
   * name it already launched.
   *
   * Errors and what the controller does:
   * - {@link InsufficientCapacityError}: no compatible offering is available. The lifecycle controller deletes
   *   the NodeClaim (event `InsufficientCapacityError`); provisioning re-solves with the ICE'd offerings marked
   *   unavailable.
   * - {@link NodeClassNotReadyError}: the NodeClass is missing, deleting or not Ready. The NodeClaim gets
   *   `Launched=False` (reason `NodeClassNotReady`) and the launch is requeued.
   * - {@link CreateError}: the launch failed for a known reason; `Launched=False` with the error's
   *   `conditionReason`/`conditionMessage`, retried with backoff.
   * - anything else: `Launched=False` reason `LaunchFailed` (message truncated to 300 chars), retried.
   */
  create(nodeClaim: NodeClaim): Promise<NodeClaim>;

  /**
   * Terminates the instance behind `nodeClaim` (found by `status.providerID`). Resolves once termination was
   * triggered. Throws {@link NodeClaimNotFoundError} when the instance is already gone: the termination
   * controller calls `delete` repeatedly and removes the `karpenter.sh/termination` finalizer only after it
   * sees NodeClaimNotFound, so a second call after a successful delete MUST throw it.
   */
  delete(nodeClaim: NodeClaim): Promise<void>;

  /**
   * The instance with `providerID`, as a NodeClaim (`status.providerID`, capacity, allocatable, resolved labels,
   * `metadata.creationTimestamp` = launch time). Throws {@link NodeClaimNotFoundError} when it does not exist
   * (or is terminating); the lifecycle controller then deletes the NodeClaim.
   */
  get(providerID: string): Promise<NodeClaim>;

  /**
   * Every instance this provider launched that still exists (launched by this cluster), as NodeClaims. The
   * garbage-collection controller deletes instances with no matching NodeClaim (older than 30 s), and
   * NodeClaims whose instance is missing. Must not throw for an empty cloud.
   */
  list(): Promise<NodeClaim[]>;

  /**
   * Instance types the NodePool can launch, ALL of them including those with no available offering
   * (offerings in the unavailable-offerings cache come back with `available: false`). Results may be cached
   * by the provider. Throws {@link NodeClassNotReadyError} when the NodePool's NodeClass cannot be resolved;
   * provisioning then skips the NodePool.
   */
  instanceTypes(nodePool: NodePool): Promise<InstanceType[]>;

  /**
   * Provider-specific drift of a launched NodeClaim: the reason (e.g. `NodeClassDrift`, `AMIDrift`), or
   * `undefined` when not drifted. Requirement drift (NodePool vs NodeClaim labels) and NodePool-hash drift are
   * checked by the disruption controller itself, not here. Errors are retried; they never mark drift.
   */
  isDrifted(nodeClaim: NodeClaim): Promise<string | undefined>;

  /** Node conditions that trigger auto-repair; may be empty. Synchronous and side-effect free. */
  repairPolicies(): RepairPolicy[];
}

/** Stable codes of the CloudProvider error classes (also the `code` property of each). */
export type CloudProviderErrorCode =
  | 'NodeClaimNotFound'
  | 'InsufficientCapacity'
  | 'NodeClassNotReady'
  | 'CreateError';

/** Options shared by the CloudProvider error constructors. */
export interface CloudProviderErrorOptions {
  /** The underlying error (kept as `cause`). */
  cause?: unknown;
}

/**
 * The instance behind a NodeClaim / provider ID does not exist (never did, or already terminated).
 * Upstream: `NodeClaimNotFoundError`; message prefix `nodeclaim not found, `.
 */
export class NodeClaimNotFoundError extends Error {
  readonly code = 'NodeClaimNotFound' as const;
  override readonly name = 'NodeClaimNotFoundError';
  /** The provider ID (or NodeClaim name) that was looked up, when known. */
  readonly providerID: string | undefined;
  constructor(message: string, options: CloudProviderErrorOptions & { providerID?: string } = {}) {
    super(
      `nodeclaim not found, ${message}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.providerID = options.providerID;
  }
}

/**
 * No offering compatible with the NodeClaim's requirements had capacity. `offerings` lists the
 * instance type × zone × capacity type options that were tried or skipped as unavailable (empty when no
 * offering was compatible at all). Upstream: `InsufficientCapacityError`; message prefix `insufficient capacity, `.
 */
export class InsufficientCapacityError extends Error {
  readonly code = 'InsufficientCapacity' as const;
  override readonly name = 'InsufficientCapacityError';
  readonly offerings: readonly OfferingRef[];
  constructor(
    message: string,
    offerings: readonly OfferingRef[] = [],
    options: CloudProviderErrorOptions = {},
  ) {
    super(
      `insufficient capacity, ${message}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.offerings = offerings;
  }
}

/**
 * The NodeClass a launch needs is missing, being deleted, or not Ready (its resolved fields are not there yet).
 * Upstream: `NodeClassNotReadyError`; message prefix `NodeClassRef not ready, `.
 */
export class NodeClassNotReadyError extends Error {
  readonly code = 'NodeClassNotReady' as const;
  override readonly name = 'NodeClassNotReadyError';
  /** `<kind>/<name>` of the NodeClass, when known. */
  readonly nodeClass: string | undefined;
  constructor(message: string, options: CloudProviderErrorOptions & { nodeClass?: string } = {}) {
    super(
      `NodeClassRef not ready, ${message}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.nodeClass = options.nodeClass;
  }
}

/**
 * A launch failed for a known reason; the controller copies `conditionReason`/`conditionMessage` into the
 * NodeClaim's `Launched=False` condition. Upstream: `CreateError`; message prefix `creating nodeclaim, `.
 */
export class CreateError extends Error {
  readonly code = 'CreateError' as const;
  override readonly name = 'CreateError';
  constructor(
    message: string,
    /** CamelCase reason for the `Launched` condition, e.g. `InstanceTypeNotFound`. */
    readonly conditionReason: string,
    /** Human message for the `Launched` condition. */
    readonly conditionMessage: string = message,
    options: CloudProviderErrorOptions = {},
  ) {
    super(
      `creating nodeclaim, ${message}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
  }
}

/** Any of the CloudProvider error classes. */
export type CloudProviderError =
  | NodeClaimNotFoundError
  | InsufficientCapacityError
  | NodeClassNotReadyError
  | CreateError;

function hasCode(err: unknown, code: CloudProviderErrorCode): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code;
}

/** True when `err` is a {@link NodeClaimNotFoundError} (checked by `code`, so it works across module copies). */
export function isNodeClaimNotFoundError(err: unknown): err is NodeClaimNotFoundError {
  return hasCode(err, 'NodeClaimNotFound');
}
/** True when `err` is an {@link InsufficientCapacityError} (checked by `code`). */
export function isInsufficientCapacityError(err: unknown): err is InsufficientCapacityError {
  return hasCode(err, 'InsufficientCapacity');
}
/** True when `err` is a {@link NodeClassNotReadyError} (checked by `code`). */
export function isNodeClassNotReadyError(err: unknown): err is NodeClassNotReadyError {
  return hasCode(err, 'NodeClassNotReady');
}
/** True when `err` is a {@link CreateError} (checked by `code`). */
export function isCreateError(err: unknown): err is CreateError {
  return hasCode(err, 'CreateError');
}

/**
 * Resolves to `undefined` instead of throwing when `promise` rejects with {@link NodeClaimNotFoundError}
 * (upstream `IgnoreNodeClaimNotFoundError`); other errors propagate.
 */
export async function ignoreNodeClaimNotFound<T>(promise: Promise<T>): Promise<T | undefined> {
  try {
    return await promise;
  } catch (err) {
    if (isNodeClaimNotFoundError(err)) return undefined;
    throw err;
  }
}
