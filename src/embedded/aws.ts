/**
 * The AWS side of the embedded cluster (`capenter start --cloud-provider aws`, `start --capi` with an emulator): the
 * AWS API emulator's fault-filling proxy, SDK clients pointing at it, and the joining-kubelet stand-in (`sim/aws`),
 * which registers Nodes with the shape of the embedded AWS catalog computed for the instance's EC2NodeClass (one
 * allocatable implementation for the catalog, `simulate`, the providers and the stand-in).
 */
import { formatResources } from '../apis/quantity.ts';
import { getInstanceTypes } from '../cloudprovider/aws/catalog/index.ts';
import { type AwsClients, createAwsClients } from '../cloudprovider/aws/clients.ts';
import { resolveAwsSettings } from '../cloudprovider/aws/settings.ts';
import { awsSetup } from '../cloudprovider/aws/setup.ts';
import type { KubeClient } from '../kube/client.ts';
import type { Clock } from '../kube/clock.ts';
import { type EmulatorSeed, prepareEmulator } from '../sim/aws/emulator.ts';
import { Ec2NodeJoiner, type NodeShape } from '../sim/aws/joiner.ts';
import { AwsEmulatorProxy } from '../sim/aws/proxy.ts';
import type { EmbeddedProviderHooks } from './hooks.ts';
import { catalogPriceTable } from './rules.ts';

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

/** The AWS API emulator's endpoint: `AWS_ENDPOINT_URL_EC2`, else `AWS_ENDPOINT_URL`. */
function emulatorEndpointOf(env: Readonly<Record<string, string | undefined>>): string | undefined {
  return env.AWS_ENDPOINT_URL_EC2 || env.AWS_ENDPOINT_URL;
}

/**
 * The aws provider beside the one embedded cluster of `capenter start --cloud-provider aws`: the emulator side
 * ({@link startEmbeddedAws}) and the aws provider with settings pointing its nodes' user data at the embedded API
 * server (cluster name: `--cluster-name`, else `CLUSTER_NAME`, else the core default; service CIDR: Kubernetes'
 * default, as the embedded API server has no EKS to discover it from). With `--capi`, the CAPI stack runs its nodes on
 * the aws provider against the same emulator.
 */
export const awsEmbedded: EmbeddedProviderHooks = {
  capi: (env) => {
    const endpoint = emulatorEndpointOf(env);
    return endpoint ? { awsEmulatorEndpoint: endpoint } : {};
  },
  async start(ctx) {
    const emulatorEndpoint = emulatorEndpointOf(ctx.env) ?? '';
    const settings = resolveAwsSettings({ flags: { clusterName: ctx.clusterNameFlag }, env: ctx.env });
    settings.clusterName ||= ctx.clusterName;
    settings.region = ctx.region;
    // The joining nodes' user data points at the embedded API server.
    settings.clusterEndpoint ||= ctx.apiServerURL;
    settings.clusterCABundle ||= /certificate-authority-data:\s*(\S+)/.exec(ctx.kubeconfig)?.[1] ?? '';
    const aws = await startEmbeddedAws({
      client: ctx.client,
      clock: ctx.clock,
      region: ctx.region,
      clusterName: settings.clusterName,
      emulatorEndpoint,
      onError: (err, where) => ctx.logger.debug({ where, err: String(err) }, 'aws emulator error (retrying)'),
    });
    ctx.stderr(
      `capenter: aws provider against the emulator at ${emulatorEndpoint} (through ${aws.proxy.endpoint}), cluster ${settings.clusterName}, ${aws.seed.subnets.length} subnet(s) tagged karpenter.sh/discovery=${settings.clusterName}\n`,
    );
    return {
      setup: awsSetup({ clients: aws.clients, settings, region: ctx.region, clusterCIDR: '10.96.0.0/12' }),
      clusterName: settings.clusterName,
      stop: () => aws.stop(),
    };
  },
};
