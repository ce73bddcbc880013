/**
 * Wiring of the `aws` cloud provider and its own controllers into the operator ({@link awsOperatorConfig};
 * upstream aws/karpenter-provider-aws `pkg/controllers/controllers.go`): the EC2NodeClass controller
 * (`nodeclass`) and, when `--interruption-queue` is set, the interruption controller; plus a loop that
 * garbage-collects the provider's unused launch templates every 5 minutes. Also the Node shape the
 * joining-kubelet stand-in (`sim/aws`) registers Nodes with: the embedded AWS catalog computed for the instance's
 * EC2NodeClass (one allocatable implementation for the catalog, `simulate`, the providers and the stand-in).
 * This module loads the AWS SDK: the operator does not import it, its callers do (`capenter controller` and
 * `capenter start` dynamically), and only for the aws provider.
 */
import type { Registry } from 'prom-client';
import type { EC2NodeClass } from '../apis/karpenter.ts';
import { formatResources } from '../apis/quantity.ts';
import { getInstanceTypes } from '../cloudprovider/aws/catalog/index.ts';
import { type AwsClients, createAwsClients } from '../cloudprovider/aws/clients.ts';
import { EC2NodeClassResolvedConditions } from '../cloudprovider/aws/nodeclass/types.ts';
import { AwsCloudProvider } from '../cloudprovider/aws/provider.ts';
import type { AwsSettings } from '../cloudprovider/aws/settings.ts';
import type { CloudProvider } from '../cloudprovider/types.ts';
import { InterruptionController, type UnavailableOfferings } from '../controllers/interruption/controller.ts';
import { EC2NodeClassController } from '../controllers/nodeclass/controller.ts';
import {
  type Controller,
  errorMessage,
  type Recorder,
  SingletonController,
} from '../controllers/runtime/index.ts';
import { catalogPriceTable } from '../embedded/rules.ts';
import type { KubeClient } from '../kube/client.ts';
import type { Clock } from '../kube/clock.ts';
import type { SharedInformers } from '../kube/informer.ts';
import type { Logger } from '../kube/logger.ts';
import { type EmulatorSeed, prepareEmulator } from '../sim/aws/emulator.ts';
import { Ec2NodeJoiner, type NodeShape } from '../sim/aws/joiner.ts';
import { AwsEmulatorProxy } from '../sim/aws/proxy.ts';
import type { OperatorConfig } from './operator.ts';

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
  /** Seconds between launch-template garbage collections (default 300). */
  launchTemplateGCPeriodSeconds?: number;
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
): AwsCloudProvider {
  return new AwsCloudProvider({
    clients: cfg.clients,
    settings: cfg.settings,
    region: cfg.region,
    clock,
    nodeClass,
    ...(cfg.clusterCIDR ? { clusterCIDR: cfg.clusterCIDR } : {}),
    ...(onError ? { onError } : {}),
  });
}

/**
 * The parts of an {@link OperatorConfig} that make an operator run the aws provider: the provider (EC2NodeClasses
 * from the operator's cluster state; its errors logged as warnings), its controllers ({@link awsControllers}) and
 * the EC2NodeClass conditions `Ready` depends on. Used by `capenter controller --cloud-provider aws`, `capenter
 * start --cloud-provider aws` and the CAPI stack.
 */
export function awsOperatorConfig(
  cfg: AwsControllersConfig,
): Required<Pick<OperatorConfig, 'cloudProvider' | 'extraControllers' | 'nodeClassDependents'>> {
  return {
    cloudProvider: ({ clock, logger, nodeClass }) =>
      createAwsProvider(
        cfg,
        clock,
        (name) =>
          nodeClass({ group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name }) as EC2NodeClass | undefined,
        (err, context) => logger.warn({ context, err: errorMessage(err) }, 'aws provider'),
      ),
    extraControllers: (deps, provider) => awsControllers(cfg, { ...deps, cloudProvider: provider }),
    nodeClassDependents: awsNodeClassDependents,
  };
}

/** The dependents of `Ready` the `nodeclass.status` controller must include for EC2NodeClass. */
export const awsNodeClassDependents: Record<string, string[]> = {
  EC2NodeClass: [...EC2NodeClassResolvedConditions],
};

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

/** Builds the aws controllers. */
export function awsControllers(
  cfg: AwsControllersConfig,
  deps: {
    client: KubeClient;
    clock: Clock;
    logger: Logger;
    recorder: Recorder;
    registry: Registry;
    informers?: SharedInformers;
    cloudProvider: CloudProvider;
  },
): Controller[] {
  const out: Controller[] = [
    new EC2NodeClassController({
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
      kubernetesVersion: cfg.kubernetesVersion ?? kubernetesVersionFrom(deps.client, deps.clock),
      ...(deps.cloudProvider instanceof AwsCloudProvider
        ? {
            onDeleted: async (nc: EC2NodeClass) => {
              await (deps.cloudProvider as AwsCloudProvider).deleteLaunchTemplates(nc.metadata.name);
            },
          }
        : {}),
      ...(cfg.nodeClassPeriodSeconds !== undefined ? { periodSeconds: cfg.nodeClassPeriodSeconds } : {}),
    }),
  ];
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

/**
 * The Node shape of the embedded catalog of `region` for the joining-kubelet stand-in: labels, capacity and
 * allocatable of the instance type computed for the instance's EC2NodeClass (default AL2023 overhead without one).
 */
export function catalogNodeShape(region: string): NodeShape {
  return (instanceType, nodeClass) => {
    let types: ReturnType<typeof getInstanceTypes>['instanceTypes'];
    try {
      types = getInstanceTypes({ region, ...(nodeClass ? { nodeClass } : {}) }).instanceTypes;
    } catch {
      types = getInstanceTypes({ region }).instanceTypes;
    }
    const it = types.find((t) => t.name === instanceType);
    if (!it) return undefined;
    return {
      labels: { ...it.labels },
      capacity: formatResources(it.capacity),
      allocatable: formatResources(it.allocatable),
    };
  };
}

/** Options of {@link startEmbeddedAws}. */
export interface EmbeddedAwsOptions {
  /** Client of the embedded cluster (the joining-kubelet stand-in writes Nodes through it). */
  client: KubeClient;
  clock: Clock;
  region: string;
  clusterName: string;
  /** The emulator's endpoint (`AWS_ENDPOINT_URL`); the fault-filling proxy is started in front of it. */
  emulatorEndpoint: string;
  /** Seconds between the stand-in's EC2 polls (default 1). */
  joinPollSeconds?: number;
  onError?: (err: unknown, where: string) => void;
}

/** The AWS side of `capenter start --cloud-provider aws`. */
export interface EmbeddedAws {
  /** The proxy in front of the emulator (clients talk to it). */
  proxy: AwsEmulatorProxy;
  clients: AwsClients;
  seed: EmulatorSeed;
  joiner: Ec2NodeJoiner;
  /** Stops the stand-in, the clients and the proxy. */
  stop(): Promise<void>;
}

/**
 * Starts the emulator proxy in front of `emulatorEndpoint`, builds SDK clients pointing at it (credentials from the
 * SDK's default chain), prepares the emulator for `clusterName` ({@link prepareEmulator}) and starts the
 * joining-kubelet stand-in. @throws when the emulator cannot be reached.
 */
export async function startEmbeddedAws(o: EmbeddedAwsOptions): Promise<EmbeddedAws> {
  const proxy = await AwsEmulatorProxy.start({
    upstream: o.emulatorEndpoint,
    prices: catalogPriceTable,
    ...(o.onError
      ? { onError: (err: unknown, ctx: string) => o.onError?.(err, `aws emulator proxy ${ctx}`) }
      : {}),
  });
  const clients = createAwsClients({ region: o.region, endpoint: proxy.endpoint });
  try {
    const seed = await prepareEmulator(clients.ec2, clients.iam, o.clusterName);
    const joiner = new Ec2NodeJoiner({
      client: o.client,
      ec2: clients.ec2,
      clock: o.clock,
      clusterName: o.clusterName,
      region: o.region,
      shape: catalogNodeShape(o.region),
      pollSeconds: o.joinPollSeconds ?? 1,
      ...(o.onError ? { onError: (err: unknown) => o.onError?.(err, 'ec2 node joiner') } : {}),
    });
    joiner.start();
    return {
      proxy,
      clients,
      seed,
      joiner,
      async stop() {
        await joiner.stop();
        clients.destroy();
        await proxy.stop();
      },
    };
  } catch (err) {
    clients.destroy();
    await proxy.stop();
    throw new Error(
      `preparing the AWS emulator at ${o.emulatorEndpoint} (AWS_ENDPOINT_URL): ${(err as Error).message}`,
      { cause: err },
    );
  }
}
