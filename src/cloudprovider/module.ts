/**
 * The ProviderModule contract: how a cloud provider plugs into capenter (upstream's answer is a provider's own
 * `main` composing `operator.NewOperator()` + `controllers.NewControllers(…)` + its own controllers; here a provider
 * is a value registered in one list, `./index.ts`). A module declares, without loading its implementation:
 * - its `name` (the `--cloud-provider` value) and one line of help;
 * - its NodeClass kinds ({@link ProviderNodeClassKind}: group, version, kind, for a kind of its own its API (schema,
 *   defaults, CRD), the conditions its `Ready` depends on,
 *   the order `capenter start` creates them in);
 * - its settings (`Setting[]` of the registry, `src/config/settings.ts`), turned into its own settings object by
 *   {@link ProviderModule.configure};
 * and, behind one dynamic import ({@link ProviderModule.load}), what the operator runs: `createProvider(deps)` and
 * `controllers(deps)` ({@link ProviderSetup}). So `capenter controller --cloud-provider kwok` never loads the AWS SDK
 * and no command pays for a provider it does not run. {@link ProviderModule.embedded} holds the checks `capenter
 * start` makes before it starts anything; the simulator stand-ins a provider needs in `capenter start` (an EC2
 * emulator, CAPI controllers) are wired in `src/embedded/`, which may import `src/sim/` (this folder may not).
 *
 * This module imports only types: of lower floors (`apis/`, `kube/`, `config/`), of `./types.ts`, and the
 * KarpenterMachinePool's bootstrap-data port (`./bootstrap.ts`; the store itself is the provider's, aws: S3).
 */
import type { Registry } from 'prom-client';
import type { KubeObject } from '../apis/core.ts';
import type { NodeClassReference } from '../apis/karpenter.ts';
import type { KarpenterKindInfo } from '../apis/schemas.ts';
import type { Setting, SettingSources } from '../config/settings.ts';
import type { KubeClient } from '../kube/client.ts';
import type { Clock } from '../kube/clock.ts';
import type { Recorder } from '../kube/events.ts';
import type { SharedInformers } from '../kube/informer.ts';
import type { Logger } from '../kube/logger.ts';
import type { BootstrapDataStore } from './bootstrap.ts';
import type { CloudProvider, NodeClassKind } from './types.ts';

/**
 * A NodeClass kind a provider serves. The built-in kinds' schema, defaults and CRD are declared in `apis/` (a lower
 * floor); a new provider declares its own kind completely in its folder with {@link ProviderNodeClassKind.api}.
 */
export interface ProviderNodeClassKind extends NodeClassKind {
  /** API version of the kind, e.g. `v1` for `karpenter.k8s.aws/v1`. */
  version: string;
  /**
   * Conditions the `nodeclass.status` controller folds into the kind's `Ready` besides `ValidationSucceeded` (set by
   * the provider's own NodeClass controller), e.g. `SubnetsReady`, `MachineDeploymentsReady`.
   */
  readyDependents: readonly string[];
  /** Where `capenter start` creates objects of this kind (see `src/embedded/apply.ts`; default 3: before NodePools). */
  applyOrder?: number;
  /**
   * The kind's API when it is not one of `apis/schemas.ts`'s `KarpenterKinds` (a provider's own group, e.g.
   * `karpenter.demo.sh`): plural, zod schemas of the object, `spec` and `status` (defaults as `.default()`),
   * description. With it the kind is registered at start (`registerOwnKinds` of `src/operator/crds.ts`,
   * `registerProviderKind` of `src/apis/provider-kinds.ts`): its objects are validated and defaulted with `schema`
   * (`apis/validation.ts`), the operator's client serves it, `capenter start` installs its CRD (`crdFor`,
   * `apis/crds.ts`) and `capenter controller --install-crds` applies it and waits for it to be served.
   */
  api?: KarpenterKindInfo;
}

/** What a provider built by the operator gets: the operator's client, clock, logger and cluster state. */
export interface ProviderContext {
  /** The operator's client (of the cluster the NodeClaims live in). */
  client: KubeClient;
  clock: Clock;
  /** The operator's logger (component `operator`). */
  logger: Logger;
  /** The operator's region (`AWS_REGION`/`--region`): the catalog the kwok provider simulates. */
  region: string;
  /** A NodeClass of the cluster state by reference (`undefined` when not known yet). */
  nodeClass: (ref: NodeClassReference) => KubeObject | undefined;
  /** The operator's feature gates (`FEATURE_GATES`), e.g. aws reads `ReservedCapacity`; absent: upstream's defaults. */
  featureGates?: Readonly<Record<string, boolean>>;
  /** The registry behind `/metrics`, for the provider's own metrics (aws: instance launch/termination failures). */
  registry?: Registry;
  /** `MIN_VALUES_POLICY` (absent: `Strict`); aws checks `minValues` after cutting a launch to 60 types. */
  minValuesPolicy?: 'Strict' | 'BestEffort';
  /**
   * With the `NodeOverlay` gate: instance type name → USD/hour that validated NodeOverlays give offerings without a
   * price of their own (preview types, upstream aws `GetOverlayPrice`); aws prices such offerings with it.
   */
  unpricedTypeOverlayPrices?: () => ReadonlyMap<string, number>;
}

/** A controller run under leadership with the core ones (same shape as `controllers/runtime.ts` `Controller`). */
export interface ProviderController {
  /** Name, as upstream names it (`nodeclass`, `interruption`, ...). */
  readonly name: string;
  /** Runs until `signal` aborts; resolves once in-flight work has finished. Never rejects. */
  start(signal: AbortSignal): Promise<void>;
}

/**
 * What a provider's controllers are built from (the operator's dependency bag; structurally the controllers'
 * `ControllerDeps`). `cloudProvider` is the provider without the operator's metrics decoration.
 */
export interface ProviderControllerDeps {
  client: KubeClient;
  cloudProvider: CloudProvider;
  clock: Clock;
  logger: Logger;
  /** Kubernetes Event recorder (component `karpenter`). */
  recorder: Recorder;
  /** prom-client registry of the operator. */
  registry: Registry;
  informers?: SharedInformers;
}

/**
 * A loaded provider, ready for `createOperator` (`src/operator/operator.ts`): builds the provider from the
 * operator's context and its own controllers from the operator's dependencies.
 */
export interface ProviderSetup {
  /** The module's name (`kwok`, `aws`, `clusterapi`, ...). */
  name: string;
  /** Dependents of `Ready` by NodeClass kind (from the module's {@link ProviderNodeClassKind}s). */
  readyDependents: Record<string, string[]>;
  /**
   * The module's NodeClass kinds that declare their own API ({@link ProviderNodeClassKind.api}); set by the
   * module's loader ({@link withModuleKinds}), so a provider need not repeat them in `load`.
   */
  ownKinds?: readonly KarpenterKindInfo[];
  /** The region the provider found at load (aws: from the instance metadata service), when the settings had none. */
  region?: string;
  /**
   * Builds the cloud provider (called once, when the operator is created).
   * @throws Error when it cannot be built (an unknown region, missing settings).
   */
  createProvider(ctx: ProviderContext): CloudProvider;
  /** The provider's own controllers (default none), run under leadership with the others. */
  controllers?(deps: ProviderControllerDeps): ProviderController[];
  /**
   * With `capenter controller --capi-management-kubeconfig`: the workload cluster's name for the
   * KarpenterMachinePool controller and a factory of the store bootstrap data goes to (aws: S3). Without it the
   * data is kept in memory.
   */
  capi?: {
    clusterName: string;
    bootstrapStore: () => BootstrapDataStore & { close?(): void };
    /**
     * The credentials check of the infrastructure cluster object (aws: `AWSCluster.spec.identityRef`, CAPA's
     * identities), bound to the management cluster and the controller's namespace; it also switches the provider's
     * clients to the resolved credentials. Undefined: the provider's clients keep their own credentials.
     */
    clusterIdentity?: (deps: { management: KubeClient; controllerNamespace: string }) => ClusterIdentityCheck;
  };
  /** Releases what {@link ProviderModule.load} opened (clients of other clusters, SDK clients). */
  close?(): void;
  /**
   * Why the provider cannot work at all right now (aws: no credentials, credentials refused, endpoint unreachable),
   * the operator's `/readyz` reason; undefined when it can (default).
   */
  readiness?(): string | undefined;
}

/**
 * Checks the credentials an infrastructure cluster object names for its workload cluster (aws: the AWSCluster's
 * `spec.identityRef`) and makes the provider use them. `{ok: false}`: the KarpenterMachinePool gets `Ready=False`
 * with this reason and message (naming the object, the field and the fix) and the provider's calls fail until it is
 * fixed. @throws on API errors other than NotFound (the reconcile retries).
 */
export type ClusterIdentityCheck = (
  infraCluster: KubeObject,
) => Promise<{ ok: true } | { ok: false; reason: string; message: string }>;

/** What {@link ProviderModule.load} gets besides the module's settings. */
export interface ProviderLoadDeps {
  /** The operator's client. */
  client: KubeClient;
  logger: Logger;
  /** The operator's region. */
  region: string;
}

/** The core values a module may read and refine in {@link ProviderModule.configure}. */
export interface CoreSettings {
  /** `AWS_REGION`/`--region`. */
  region: string;
  /** `CLUSTER_NAME`/`--cluster-name`. */
  clusterName: string;
}

/** Checks `capenter start` makes for a provider before it starts anything (no simulator code here). */
export interface EmbeddedHooks {
  /** What a NodeClaim becomes in `capenter start`, for its `--help` (default: the module's `summary`). */
  summary?: string;
  /** An error text when the environment cannot run this provider embedded (exit 2), else `undefined`. */
  check?(env: Readonly<Record<string, string | undefined>>): string | undefined;
  /** The region when `--region` is not given (default `us-east-1`), e.g. aws: `AWS_REGION`. */
  defaultRegion?(env: Readonly<Record<string, string | undefined>>): string | undefined;
}

/** A cloud provider module; see the module comment. `S` is the module's resolved settings. */
export interface ProviderModule<S = unknown> {
  /** `--cloud-provider` value. */
  name: string;
  /** What a NodeClaim becomes, for `--help` (e.g. `EC2 instances`). */
  summary: string;
  /** NodeClass kinds it serves. */
  nodeClassKinds: readonly ProviderNodeClassKind[];
  /** Its settings (flags and variables of `capenter controller`, rows of docs/settings.md). */
  settings: readonly Setting[];
  /**
   * Resolves its settings from the raw flags and environment; may refine `core` (aws: the cluster name it
   * validated). @throws SettingError (`src/config/settings.ts`) naming the flag or variable and what it accepts.
   */
  configure(src: SettingSources, core: CoreSettings): S;
  /**
   * Loads the implementation (a dynamic import) and builds the operator's wiring.
   * @throws Error when clients cannot be built (e.g. an unreadable kubeconfig).
   */
  load(settings: S, deps: ProviderLoadDeps): Promise<ProviderSetup>;
  /** Checks of `capenter start` (default: none; runs with any environment). */
  embedded?: EmbeddedHooks;
}

/** The `readyDependents` of a {@link ProviderSetup} from its kinds. */
export function readyDependentsOf(kinds: readonly ProviderNodeClassKind[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const k of kinds) if (k.readyDependents.length > 0) out[k.kind] = [...k.readyDependents];
  return out;
}

/**
 * The APIs of the kinds of `kinds` that declare their own ({@link ProviderNodeClassKind.api}).
 * @throws Error when an `api` names another group, version or kind than its `ProviderNodeClassKind`.
 */
export function ownKindsOf(kinds: readonly ProviderNodeClassKind[]): KarpenterKindInfo[] {
  return kinds.flatMap((k) => {
    if (!k.api) return [];
    const a = k.api;
    if (a.group !== k.group || a.version !== k.version || a.kind !== k.kind)
      throw new Error(
        `NodeClass kind ${k.group}/${k.version} ${k.kind}: api declares ${a.group}/${a.version} ${a.kind}; make api's group, version and kind the same`,
      );
    return [a];
  });
}

/** `setup` with the module's own kinds ({@link ProviderSetup.ownKinds}); what loaders of a module return. */
export function withModuleKinds(module: ProviderModule, setup: ProviderSetup): ProviderSetup {
  const own = ownKindsOf(module.nodeClassKinds);
  return own.length > 0 ? { ...setup, ownKinds: own } : setup;
}
