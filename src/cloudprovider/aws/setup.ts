/**
 * The loaded `aws` provider ({@link awsSetup}; upstream aws/karpenter-provider-aws `pkg/controllers/controllers.go`):
 * the provider, the EC2NodeClass controller (`nodeclass`), with the `ReservedCapacity` gate the capacity
 * reservation controllers (`capacityreservation.capacitytype`, `capacityreservation.expiration`), the EC2 instance
 * status controller (`interruption.instancestatus`, always, as upstream), the instance-profile garbage collector
 * (`instanceprofile.garbagecollection`, always, as upstream), the instance tagging controller
 * (`nodeclaim.tagging`: `Name=<node name>`, always, as upstream) and, when `--interruption-queue` is set, the
 * interruption controller; plus a loop that garbage-collects the provider's unused launch templates every 5 minutes. This module
 * loads the AWS SDK: only `awsModule.load` (`./module.ts`), the embedded layer and tests import it.
 */
import { DescribeAvailabilityZonesCommand } from '@aws-sdk/client-ec2';
import type { Registry } from 'prom-client';
import type { EC2NodeClass } from '../../apis/karpenter.ts';
import { AWSGroup } from '../../apis/labels.ts';
import type { Recorder } from '../../controllers/runtime/index.ts';
import { type Controller, errorMessage, SingletonController } from '../../controllers/runtime/index.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Clock } from '../../kube/clock.ts';
import type { SharedInformers } from '../../kube/informer.ts';
import type { Logger } from '../../kube/logger.ts';
import { type ProviderSetup, readyDependentsOf } from '../module.ts';
import type { CloudProvider } from '../types.ts';
import type { MiddlewareClient } from './callhealth.ts';
import type { AwsClients } from './clients.ts';
import {
  capacityReservationCapacityTypeController,
  capacityReservationExpirationController,
} from './controllers/capacityreservation.ts';
import { instanceProfileGCController } from './controllers/instanceprofile-gc.ts';
import { InterruptionController, type UnavailableOfferings } from './controllers/interruption/controller.ts';
import { InstanceStatusController } from './controllers/interruption/instancestatus.ts';
import { EC2NodeClassController } from './controllers/nodeclass.ts';
import { taggingController } from './controllers/tagging.ts';
import { awsNodeClassKinds, awsProviderName } from './kinds.ts';
import { InstanceProfileResolver } from './nodeclass/instanceprofile.ts';
import { AwsCloudProvider, EC2NodeClassKind } from './provider.ts';
import { watchAwsSdkMetrics } from './sdkmetrics.ts';
import type { AwsSettings } from './settings.ts';

/** What the operator needs to run with `--cloud-provider aws`: the provider and its own controllers. */
export interface AwsControllersConfig {
  /** SDK clients (endpoints and credentials from the SDK's default chain, or an emulator's). */
  clients: AwsClients;
  /** The aws settings (`CLUSTER_NAME`, `INTERRUPTION_QUEUE`, `ISOLATED_VPC`, ...). */
  settings: AwsSettings;
  /** AWS region. */
  region: string;
  /** Kubernetes `major.minor` for AMI aliases; default: read from the API server's `/version`. */
  kubernetesVersion?: () => Promise<string>;
  /** SQS long-poll seconds (default 20). */
  interruptionWaitSeconds?: number;
  /** Seconds between re-resolutions of each EC2NodeClass (default 60). */
  nodeClassPeriodSeconds?: number;
  /** Service CIDR for AL2023 user data (default: from EKS DescribeCluster). */
  clusterCIDR?: string;
  /** Base64 PEM CA of the controller's kubeconfig: user data's CA when `CLUSTER_CA_BUNDLE` is empty. */
  kubeconfigCABundle?: string;
  /** ClusterIP of `kube-system/kube-dns`: the nodes' cluster DNS when a class sets no `kubelet.clusterDNS`. */
  kubeDNSIP?: string;
  /** Seconds between launch-template garbage collections (default 300). */
  launchTemplateGCPeriodSeconds?: number;
  /** Seconds between instance-profile garbage collections (default 1800, upstream's 30 minutes). */
  instanceProfileGCPeriodSeconds?: number;
  /** Seconds between DescribeInstanceStatus polls of `interruption.instancestatus` (default 60, upstream's). */
  instanceStatusPeriodSeconds?: number;
}

/**
 * The aws provider of the operator: EC2NodeClasses come from the operator's cluster state (`nodeClass`).
 * @throws Error when the region or cluster name is missing.
 */
export function createAwsProvider(
  cfg: AwsControllersConfig,
  clock: Clock,
  nodeClass: (name: string) => EC2NodeClass | undefined,
  onError?: (err: unknown, context: string) => void,
  featureGates?: Readonly<Record<string, boolean>>,
  registry?: Registry,
  minValuesPolicy?: 'Strict' | 'BestEffort',
  unpricedTypeOverlayPrices?: () => ReadonlyMap<string, number>,
): AwsCloudProvider {
  // upstream's aws_sdk_go_* request metrics (./sdkmetrics.ts) on every client, into the operator's registry
  if (registry) {
    const c = cfg.clients;
    for (const [client, service] of [
      [c.ec2, 'EC2'],
      [c.ssm, 'SSM'],
      [c.sqs, 'SQS'],
      [c.iam, 'IAM'],
      [c.eks, 'EKS'],
      [c.pricing, 'Pricing'],
    ] as const)
      if (client?.middlewareStack)
        watchAwsSdkMetrics(client as unknown as MiddlewareClient, service, registry);
  }
  return new AwsCloudProvider({
    ...(unpricedTypeOverlayPrices ? { unpricedTypeOverlayPrices } : {}),
    ...(registry ? { registry } : {}),
    ...(minValuesPolicy ? { minValuesPolicy } : {}),
    reservedCapacity: featureGates?.ReservedCapacity !== false,
    clients: cfg.clients,
    settings: cfg.settings,
    region: cfg.region,
    clock,
    nodeClass,
    ...(cfg.clusterCIDR ? { clusterCIDR: cfg.clusterCIDR } : {}),
    ...(cfg.kubeconfigCABundle ? { kubeconfigCABundle: cfg.kubeconfigCABundle } : {}),
    ...(cfg.kubeDNSIP ? { kubeDNSIP: cfg.kubeDNSIP } : {}),
    ...(onError ? { onError } : {}),
  });
}

/**
 * The loaded aws provider for an operator: the provider (EC2NodeClasses from the operator's cluster state; its
 * errors logged as warnings), its controllers ({@link awsControllers}) and the EC2NodeClass conditions `Ready`
 * depends on (the aws module's kinds). Used by `capenter controller --cloud-provider aws` (through
 * `awsModule.load`), `capenter start --cloud-provider aws` and the CAPI stack.
 */
export function awsSetup(cfg: AwsControllersConfig): ProviderSetup {
  return {
    name: awsProviderName,
    readyDependents: readyDependentsOf(awsNodeClassKinds),
    createProvider: ({
      clock,
      logger,
      nodeClass,
      featureGates,
      registry,
      minValuesPolicy,
      unpricedTypeOverlayPrices,
    }) =>
      createAwsProvider(
        cfg,
        clock,
        (name) => nodeClass({ group: AWSGroup, kind: EC2NodeClassKind, name }) as EC2NodeClass | undefined,
        (err, context) => logger.warn({ context, err: errorMessage(err) }, 'aws provider'),
        featureGates,
        registry,
        minValuesPolicy,
        unpricedTypeOverlayPrices,
      ),
    controllers: (deps) => awsControllers(cfg, deps),
    readiness: () =>
      cfg.clients.health?.problem(() => cfg.clients.ec2.send(new DescribeAvailabilityZonesCommand({}))),
  };
}

/**
 * Seconds between re-resolutions of each EC2NodeClass: `nodeClassPeriodSeconds` when given (tests, the embedded
 * stacks), else the smaller of `AMI_REFRESH_INTERVAL` and `SUBNET_REFRESH_INTERVAL` (capenter resolves a class's AMIs,
 * subnets and security groups in one pass; upstream refreshes AMIs and subnets on their own timers).
 */
export function nodeClassPeriodSeconds(
  cfg: Pick<AwsControllersConfig, 'nodeClassPeriodSeconds' | 'settings'>,
): number {
  return (
    cfg.nodeClassPeriodSeconds ?? Math.min(cfg.settings.amiRefreshSeconds, cfg.settings.subnetRefreshSeconds)
  );
}

/** `major.minor` of the API server (`/version`), cached for 10 minutes. @throws on API errors. */
export function kubernetesVersionFrom(client: KubeClient, clock: Clock): () => Promise<string> {
  let cached: { at: number; v: string } | undefined;
  return async () => {
    if (cached && clock.now() - cached.at < 600_000) return cached.v;
    const info = await client.request<{ major?: string; minor?: string; gitVersion?: string }>(
      'GET',
      '/version',
    );
    const m = /^v?(\d+)\.(\d+)/.exec(info.gitVersion ?? '');
    const v = m ? `${m[1]}.${m[2]}` : `${info.major ?? '1'}.${(info.minor ?? '').replace(/\D+$/, '')}`;
    cached = { at: clock.now(), v };
    return v;
  };
}

/** Dependencies the aws controllers get from the operator. */
export interface AwsControllerDeps {
  client: KubeClient;
  clock: Clock;
  logger: Logger;
  recorder: Recorder;
  registry: Registry;
  informers?: SharedInformers;
  cloudProvider: CloudProvider;
}

/** The EC2NodeClass controller of {@link awsControllers}, on the shared instance-profile resolver. */
function ec2NodeClassController(
  cfg: AwsControllersConfig,
  deps: AwsControllerDeps,
  instanceProfiles: InstanceProfileResolver,
): EC2NodeClassController {
  return new EC2NodeClassController({
    instanceProfiles,
    client: deps.client,
    clock: deps.clock,
    logger: deps.logger,
    recorder: deps.recorder,
    registry: deps.registry,
    ...(deps.informers ? { informers: deps.informers } : {}),
    ec2: cfg.clients.ec2,
    ssm: cfg.clients.ssm,
    iam: cfg.clients.iam,
    region: cfg.region,
    clusterName: cfg.settings.clusterName,
    caBundle: cfg.settings.clusterCABundle || cfg.kubeconfigCABundle || '',
    kubernetesVersion: cfg.kubernetesVersion ?? kubernetesVersionFrom(deps.client, deps.clock),
    ...(deps.cloudProvider instanceof AwsCloudProvider
      ? {
          reservedCapacity: deps.cloudProvider.reservedCapacity,
          capacityReservations: deps.cloudProvider.capacityReservations,
          placementGroups: deps.cloudProvider.placementGroups,
          resolveClusterCIDR: () => (deps.cloudProvider as AwsCloudProvider).resolveClusterCIDR(),
          validationLaunch: (nc: EC2NodeClass) =>
            (deps.cloudProvider as AwsCloudProvider).validationLaunch(nc),
          disableDryRun: cfg.settings.disableDryRun,
          onDeleted: async (nc: EC2NodeClass) => {
            await (deps.cloudProvider as AwsCloudProvider).deleteLaunchTemplates(nc.metadata.name);
          },
        }
      : {}),
    periodSeconds: nodeClassPeriodSeconds(cfg),
  });
}

/** Builds the aws controllers. */
export function awsControllers(cfg: AwsControllersConfig, deps: AwsControllerDeps): Controller[] {
  const instanceProfiles = new InstanceProfileResolver({
    iam: cfg.clients.iam,
    region: cfg.region,
    clusterName: cfg.settings.clusterName,
    now: () => deps.clock.now(),
  });
  const out: Controller[] = [ec2NodeClassController(cfg, deps, instanceProfiles)];
  const provider = deps.cloudProvider;
  if (provider instanceof AwsCloudProvider)
    out.push(
      new SingletonController({
        name: 'launchtemplate.garbagecollection',
        clock: deps.clock,
        logger: deps.logger,
        reconcile: async () => {
          const deleted = await provider.garbageCollectLaunchTemplates();
          if (deleted.length > 0)
            deps.logger.info(
              { controller: 'launchtemplate.garbagecollection', deleted },
              'deleted unused launch templates',
            );
          return { requeueAfter: cfg.launchTemplateGCPeriodSeconds ?? 300 };
        },
      }),
    );
  if (provider instanceof AwsCloudProvider && provider.reservedCapacity)
    out.push(
      capacityReservationCapacityTypeController({
        client: deps.client,
        list: () => provider.list(),
        clock: deps.clock,
        logger: deps.logger,
      }),
      capacityReservationExpirationController({
        client: deps.client,
        ec2: cfg.clients.ec2,
        clock: deps.clock,
        logger: deps.logger,
      }),
    );
  out.push(
    instanceProfileGCController({
      client: deps.client,
      ec2: cfg.clients.ec2,
      profiles: instanceProfiles,
      region: cfg.region,
      clusterName: cfg.settings.clusterName,
      clock: deps.clock,
      logger: deps.logger,
      ...(cfg.instanceProfileGCPeriodSeconds !== undefined
        ? { periodSeconds: cfg.instanceProfileGCPeriodSeconds }
        : {}),
    }),
    taggingController({
      client: deps.client,
      ec2: cfg.clients.ec2,
      clusterName: cfg.settings.clusterName,
      clock: deps.clock,
      logger: deps.logger,
    }),
    new InstanceStatusController({
      client: deps.client,
      ec2: cfg.clients.ec2,
      clock: deps.clock,
      logger: deps.logger,
      recorder: deps.recorder,
      registry: deps.registry,
      ...(cfg.instanceStatusPeriodSeconds !== undefined
        ? { periodSeconds: cfg.instanceStatusPeriodSeconds }
        : {}),
    }),
  );
  if (cfg.settings.interruptionQueue) {
    const p = deps.cloudProvider as Partial<UnavailableOfferings>;
    out.push(
      new InterruptionController({
        client: deps.client,
        sqs: cfg.clients.sqs,
        queue: cfg.settings.interruptionQueue,
        clock: deps.clock,
        logger: deps.logger,
        recorder: deps.recorder,
        registry: deps.registry,
        unavailableOfferings:
          typeof p.markUnavailable === 'function' ? (p as UnavailableOfferings) : undefined,
        ...(cfg.interruptionWaitSeconds !== undefined
          ? { waitTimeSeconds: cfg.interruptionWaitSeconds }
          : {}),
      }),
    );
  }
  return out;
}
