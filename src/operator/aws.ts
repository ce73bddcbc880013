/**
 * Wiring of the `aws` cloud provider's own controllers into the operator (upstream
 * aws/karpenter-provider-aws `pkg/controllers/controllers.go`): the EC2NodeClass controller (`nodeclass`) and,
 * when `--interruption-queue` is set, the interruption controller. Also the Node shape the joining-kubelet
 * stand-in (`sim/aws`) registers Nodes with: the embedded AWS catalog computed for the instance's EC2NodeClass
 * (one allocatable implementation for the catalog, `simulate`, the providers and the stand-in).
 */
import type { EC2Client } from '@aws-sdk/client-ec2';
import type { IAMClient } from '@aws-sdk/client-iam';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { SSMClient } from '@aws-sdk/client-ssm';
import type { Registry } from 'prom-client';
import type { EC2NodeClass } from '../apis/karpenter.ts';
import { formatResources } from '../apis/quantity.ts';
import { getInstanceTypes } from '../cloudprovider/aws/catalog/index.ts';
import { EC2NodeClassResolvedConditions } from '../cloudprovider/aws/nodeclass/types.ts';
import type { CloudProvider } from '../cloudprovider/types.ts';
import { InterruptionController, type UnavailableOfferings } from '../controllers/interruption/controller.ts';
import type { Recorder } from '../controllers/nodeclaim/util.ts';
import { EC2NodeClassController } from '../controllers/nodeclass/controller.ts';
import type { Controller } from '../controllers/runtime.ts';
import type { KubeClient } from '../kube/client.ts';
import type { Clock } from '../kube/clock.ts';
import type { SharedInformers } from '../kube/informer.ts';
import type { NodeShape } from '../sim/aws/joiner.ts';
import type { Logger } from './logger.ts';

/** What the operator needs to run the aws provider's controllers. */
export interface AwsControllersConfig {
  clients: { ec2: EC2Client; ssm: SSMClient; iam: IAMClient; sqs: SQSClient };
  /** AWS region. */
  region: string;
  /** `--cluster-name`. */
  clusterName: string;
  /** `--interruption-queue` (name or URL); empty/undefined: no interruption controller. */
  interruptionQueue?: string | undefined;
  /** Kubernetes `major.minor` for AMI aliases; default: read from the API server's `/version`. */
  kubernetesVersion?: () => Promise<string>;
  /** Launch-template cleanup when a class is deleted (the provider's). */
  onNodeClassDeleted?: (nodeClass: EC2NodeClass) => Promise<void>;
  /** SQS long-poll seconds (default 20). */
  interruptionWaitSeconds?: number;
  /** Seconds between re-resolutions of each EC2NodeClass (default 60). */
  nodeClassPeriodSeconds?: number;
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
      clusterName: cfg.clusterName,
      kubernetesVersion: cfg.kubernetesVersion ?? kubernetesVersionFrom(deps.client, deps.clock),
      ...(cfg.onNodeClassDeleted ? { onDeleted: cfg.onNodeClassDeleted } : {}),
      ...(cfg.nodeClassPeriodSeconds !== undefined ? { periodSeconds: cfg.nodeClassPeriodSeconds } : {}),
    }),
  ];
  if (cfg.interruptionQueue) {
    const p = deps.cloudProvider as Partial<UnavailableOfferings>;
    out.push(
      new InterruptionController({
        client: deps.client,
        sqs: cfg.clients.sqs,
        queue: cfg.interruptionQueue,
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
