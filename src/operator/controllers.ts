/**
 * The controller list of one capenter process (upstream kubernetes-sigs/karpenter `pkg/controllers/controllers.go`
 * plus the provider's own, as a provider's `main` appends them): provisioner + its trigger, `nodeclaim.lifecycle`,
 * `nodeclaim.consistency`,
 * `nodeclaim.garbagecollection`, `node.termination`, `node.health` (only with the `NodeRepair` feature gate),
 * disruption, `nodeclaim.expiration`, `nodeclaim.podevents`, `nodepool`, `static.capacity` (upstream
 * `static.provisioning` + `static.deprovisioning`), `nodeclass.status` (with the provider's `Ready` dependents),
 * `nodeoverlay.controller` (only with the `NodeOverlay` gate; the other controllers then see overlaid instance
 * types), the metrics controllers, then the
 * provider module's controllers. Built by `createOperator` (`./operator.ts`); nothing runs until it starts them.
 */
import type { Registry } from 'prom-client';
import type { ProviderSetup } from '../cloudprovider/module.ts';
import { NodeOverlayStore, withNodeOverlays } from '../cloudprovider/overlay.ts';
import type { CloudProvider } from '../cloudprovider/types.ts';
import {
  DisruptionController,
  type DisruptionControllerOptions,
} from '../controllers/disruption/controller.ts';
import { InstanceTypeMetricsController, metricsControllers } from '../controllers/metrics/index.ts';
import { NodeHealthController } from '../controllers/node/health/controller.ts';
import { NodeTerminationController } from '../controllers/node/termination/controller.ts';
import { NodeClaimConsistencyController } from '../controllers/nodeclaim/consistency/controller.ts';
import { PodEventsController } from '../controllers/nodeclaim/disruption/podevents.ts';
import { ExpirationController } from '../controllers/nodeclaim/expiration/controller.ts';
import { NodeClaimGarbageCollectionController } from '../controllers/nodeclaim/garbagecollection/controller.ts';
import { NodeClaimLifecycleController } from '../controllers/nodeclaim/lifecycle/controller.ts';
import { NodeOverlayController, NodeOverlayGateOffNotice } from '../controllers/nodeoverlay/controller.ts';
import { NodePoolController } from '../controllers/nodepool/controller.ts';
import { NodePoolHashVersion, nodePoolHash } from '../controllers/nodepool/hash.ts';
import { NodeClassStatusController } from '../controllers/nodepool/nodeclass.ts';
import { Provisioner } from '../controllers/provisioning/provisioner.ts';
import { ProvisioningTrigger } from '../controllers/provisioning/trigger.ts';
import type { Controller, ControllerDeps } from '../controllers/runtime/index.ts';
import { StaticCapacityController } from '../controllers/static/controller.ts';
import type { KubeClient } from '../kube/client.ts';
import type { Clock } from '../kube/clock.ts';
import type { EventRecorder } from '../kube/events.ts';
import type { SharedInformers } from '../kube/informer.ts';
import type { Logger } from '../kube/logger.ts';
import type { Cluster } from '../state/cluster.ts';
import { NodePoolHealth } from '../state/nodepoolhealth.ts';
import type { OperatorOptions } from './options.ts';

/** Overrides for controller internals, mostly for tests (seconds; `OperatorConfig.tuning`). */
export interface ControllerTuning {
  gcInstanceGraceSeconds?: number;
  registrationTimeoutSeconds?: number;
  launchTimeoutSeconds?: number;
  /** Seconds between checks for missing CRDs (default 5). */
  crdRecheckSeconds?: number;
  /** Seconds between provisioning resyncs of waiting pods (default 10). */
  provisioningResyncSeconds?: number;
  /** Seconds a pod's nomination to a node or NodeClaim lives (default 20, upstream's). */
  nominationTTLSeconds?: number;
  /** Seconds between passes of `metrics.instancetype` (default 60, upstream's). */
  instanceTypeMetricsSeconds?: number;
  /** Disruption controller tunables (poll and validation periods, replacement timeout, core options). */
  disruption?: Pick<
    DisruptionControllerOptions,
    'pollSeconds' | 'validationSeconds' | 'replacementTimeoutSeconds' | 'coreOptions' | 'syncConditions'
  >;
}

/** What the controllers are built from: the operator's shared pieces. */
export interface ControllerListDeps {
  client: KubeClient;
  cluster: Cluster;
  informers: SharedInformers;
  clock: Clock;
  logger: Logger;
  recorder: EventRecorder;
  registry: Registry;
  options: OperatorOptions;
  tuning: ControllerTuning;
  /** The provider as built (the provider's own controllers get it undecorated). */
  rawProvider: CloudProvider;
  /** The provider module's setup, for its `Ready` dependents and its controllers; none for an injected provider. */
  setup?: ProviderSetup;
  /** The provider decorated with cloud-provider metrics labelled `controller`. */
  provider: (controller: string) => CloudProvider;
  /**
   * The NodeOverlay store when the operator built it before the provider (so the provider reads its prices of
   * unpriced instance types); default a new one when the `NodeOverlay` gate is on.
   */
  overlayStore?: NodeOverlayStore;
}

/** The built controllers, with the two the operator exposes. */
export interface ControllerList {
  provisioner: Provisioner;
  disruption: DisruptionController;
  /** Every controller run while leading, in start order. */
  controllers: Controller[];
}

/** Builds the controllers of {@link ControllerListDeps}; see the module comment. */
export function buildControllers(d: ControllerListDeps): ControllerList {
  const { client, cluster, clock, logger, recorder, registry, options, tuning } = d;
  // NodeOverlay gate (upstream default off): every controller sees instance types with the overlays applied,
  // as last evaluated by the nodeoverlay controller, which itself reads the provider without them.
  const overlayStore =
    options.featureGates.NodeOverlay === true ? (d.overlayStore ?? new NodeOverlayStore()) : undefined;
  const deps = (controller: string): ControllerDeps => ({
    client,
    cloudProvider: overlayStore
      ? withNodeOverlays(d.provider(controller), overlayStore)
      : d.provider(controller),
    clock,
    logger,
    recorder,
    registry,
    informers: d.informers,
  });
  const hash = (np: Parameters<typeof nodePoolHash>[0]) => ({
    hash: nodePoolHash(np),
    version: NodePoolHashVersion,
  });
  const provisioner = new Provisioner({
    ...deps('provisioner'),
    cluster,
    options: {
      batchIdleSeconds: options.batchIdleSeconds,
      batchMaxSeconds: options.batchMaxSeconds,
      nodePoolHash: hash,
      ...(tuning.nominationTTLSeconds !== undefined
        ? { nominationTTLSeconds: tuning.nominationTTLSeconds }
        : {}),
      ...(options.preferencePolicy ? { preferencePolicy: options.preferencePolicy } : {}),
      ...(options.minValuesPolicy ? { minValuesPolicy: options.minValuesPolicy } : {}),
    },
  });
  const disruption = new DisruptionController({
    ...deps('disruption'),
    cluster,
    nodePoolHash: hash,
    launcher: provisioner.launcher,
    featureGates: { spotToSpotConsolidation: options.featureGates.SpotToSpotConsolidation === true },
    coreOptions: {
      ...(options.preferencePolicy ? { preferencePolicy: options.preferencePolicy } : {}),
      ...(options.minValuesPolicy ? { minValuesPolicy: options.minValuesPolicy } : {}),
    },
    ...(tuning.disruption ?? {}),
  });
  const readyDependents = d.setup?.readyDependents ?? {};
  // registration outcomes per NodePool, shared by nodeclaim.lifecycle and nodepool (NodeRegistrationHealthy)
  const nodePoolHealth = new NodePoolHealth();
  const controllers: Controller[] = [
    provisioner,
    new ProvisioningTrigger({
      cluster,
      provisioner,
      clock,
      logger,
      ...(tuning.provisioningResyncSeconds !== undefined
        ? { resyncSeconds: tuning.provisioningResyncSeconds }
        : {}),
    }),
    new NodeClaimLifecycleController({
      ...deps('nodeclaim.lifecycle'),
      nodePoolHealth,
      ...(tuning.registrationTimeoutSeconds !== undefined
        ? { registrationTimeoutSeconds: tuning.registrationTimeoutSeconds }
        : {}),
      ...(tuning.launchTimeoutSeconds !== undefined
        ? { launchTimeoutSeconds: tuning.launchTimeoutSeconds }
        : {}),
    }),
    new NodeClaimConsistencyController(deps('nodeclaim.consistency')),
    new NodeClaimGarbageCollectionController({
      ...deps('nodeclaim.garbagecollection'),
      periodSeconds: options.gcPeriodSeconds,
      ...(tuning.gcInstanceGraceSeconds !== undefined
        ? { instanceGraceSeconds: tuning.gcInstanceGraceSeconds }
        : {}),
    }),
    new NodeTerminationController(deps('node.termination')),
    // node auto-repair, behind the NodeRepair gate (upstream registers node/health only when it is on)
    ...(options.featureGates.NodeRepair === true ? [new NodeHealthController(deps('node.health'))] : []),
    disruption,
    new ExpirationController(deps('nodeclaim.expiration')),
    new PodEventsController(deps('nodeclaim.podevents')),
    new NodePoolController({ ...deps('nodepool'), nodePoolHealth }),
    // always registered: with the gate off it tells each static NodePool so (upstream registers nothing)
    new StaticCapacityController({
      ...deps('static.capacity'),
      cluster,
      launcher: provisioner.launcher,
      enabled: options.featureGates.StaticCapacity === true,
    }),
    new NodeClassStatusController({
      ...deps('nodeclass.status'),
      ...(Object.keys(readyDependents).length > 0 ? { extraDependents: readyDependents } : {}),
    }),
    ...(overlayStore
      ? [
          new NodeOverlayController({
            ...deps('nodeoverlay.controller'),
            cloudProvider: d.provider('nodeoverlay.controller'),
            store: overlayStore,
            cluster,
          }),
        ]
      : [new NodeOverlayGateOffNotice({ client, logger })]),
    ...metricsControllers({ cluster, clock, logger, registry, periodSeconds: options.metricsPeriodSeconds }),
    new InstanceTypeMetricsController({
      ...deps('metrics.instancetype'),
      nodePools: () => cluster.listNodePools(),
      nodeClaims: () => cluster.listNodeClaims(),
      ...(tuning.instanceTypeMetricsSeconds !== undefined
        ? { periodSeconds: tuning.instanceTypeMetricsSeconds }
        : {}),
    }),
    ...(d.setup?.controllers?.({ ...deps('nodeclass'), cloudProvider: d.rawProvider }) ?? []),
  ];
  return { provisioner, disruption, controllers };
}
