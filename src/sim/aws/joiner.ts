/**
 * Stand-in for the kubelets of EC2 instances joining the cluster, for the embedded cluster against an EC2 API
 * (moto): every `pollSeconds` it lists the instances tagged `kubernetes.io/cluster/<cluster>` and
 * - for each `running` instance without a Node, registers one as a kubelet started by Karpenter's user data would:
 *   name = the instance's private DNS name (the EKS default `ip-name` hostname type; the instance ID when EC2
 *   reports none), provider ID `aws:///<zone>/<instance-id>`, labels `kubernetes.io/hostname`, instance type,
 *   zone, region, arch, os, the instance type's `karpenter.k8s.aws/*` labels and the launch's
 *   `karpenter.sh/nodepool` / `karpenter.sh/capacity-type`, the `karpenter.sh/unregistered:NoExecute` taint, and
 *   capacity/allocatable computed for the instance's EC2NodeClass (its kubelet settings: maxPods, reserved
 *   resources, eviction thresholds) by the injected {@link NodeShape};
 * - for each Node of an instance that is shutting down, terminated or gone, deletes the Node (as the cloud
 *   node-lifecycle controller does; Karpenter's finalizer, if any, still gates the removal).
 * Nodes register `Ready=False`; the kubelet stand-in (`sim/kubelet`) then reports Ready and runs pods. Delays run
 * on the injected clock.
 */
import { DescribeInstancesCommand, type EC2Client, type Instance } from '@aws-sdk/client-ec2';
import type { Node, ResourceList } from '../../apis/core.ts';
import type { EC2NodeClass } from '../../apis/karpenter.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Clock } from '../../kube/clock.ts';
import { isAlreadyExists } from '../../kube/errors.ts';

/** What a Node of `instanceType` launched from `nodeClass` looks like (labels of the type, resources as quantities). */
export interface NodeShapeResult {
  labels: Record<string, string>;
  capacity: ResourceList;
  allocatable: ResourceList;
}

/** Computes a Node's shape; `undefined` for an unknown type (the Node then gets no capacity). */
export type NodeShape = (
  instanceType: string,
  nodeClass: EC2NodeClass | undefined,
) => NodeShapeResult | undefined;

/** Options of {@link Ec2NodeJoiner}. */
export interface Ec2NodeJoinerOptions {
  client: KubeClient;
  ec2: EC2Client;
  clock: Clock;
  /** `--cluster-name`: only instances tagged `kubernetes.io/cluster/<name>` join. */
  clusterName: string;
  region: string;
  shape: NodeShape;
  /** Seconds between polls of EC2 (default 1). */
  pollSeconds?: number;
  /**
   * Seconds from first seeing an instance running until its Node registers (default 0); a function is asked once
   * per instance (the soak's never-registering launches answer a very large number).
   */
  joinDelaySeconds?: number | ((instance: Instance) => number);
  /** Errors of a poll (it is retried on the next one). */
  onError?: (err: unknown) => void;
}

const PROVIDER_PREFIX = 'aws:///';

/** The joining-kubelet stand-in. `start()`, `stop()`, or drive it with {@link sync}. */
export class Ec2NodeJoiner {
  private readonly seen = new Map<string, number>();
  /** Instance ID → its join delay (seconds), decided when first seen. */
  private readonly delays = new Map<string, number>();
  private timer: { cancel(): void } | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  /** Nodes registered / deleted so far (for tests and logs). */
  readonly stats = { joined: 0, removed: 0, polls: 0 };

  constructor(private readonly opts: Ec2NodeJoinerOptions) {}

  /** Starts polling (idempotent). */
  start(): void {
    if (this.timer || this.stopped) return;
    const tick = (): void => {
      this.running = this.sync()
        .then(() => undefined)
        .catch((err: unknown) => this.opts.onError?.(err))
        .finally(() => {
          if (!this.stopped)
            this.timer = cancellable(this.opts.clock, tick, (this.opts.pollSeconds ?? 1) * 1000);
        });
    };
    tick();
  }

  /** Stops polling; resolves when the poll in flight has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    await this.running;
  }

  /**
   * One pass: registers Nodes for running instances, removes Nodes of terminated ones. Returns the Node names
   * registered and removed. @throws on EC2 or API errors.
   */
  async sync(): Promise<{ joined: string[]; removed: string[] }> {
    this.stats.polls++;
    const { client, clock } = this.opts;
    const instances = await this.instances();
    const nodes = ((await client.list('Node')).items as Node[]).filter((n) =>
      n.spec?.providerID?.startsWith(PROVIDER_PREFIX),
    );
    const byID = new Map(nodes.map((n) => [instanceIDOf(n.spec?.providerID), n]));
    const out = { joined: [] as string[], removed: [] as string[] };
    const classes = new Map<string, EC2NodeClass | undefined>();
    const now = clock.now();
    const live = new Set<string>();
    for (const inst of instances) {
      const id = inst.InstanceId ?? '';
      const state = inst.State?.Name ?? '';
      if (state === 'pending' || state === 'running') live.add(id);
      if (state !== 'running' || byID.has(id)) continue;
      let first = this.seen.get(id);
      if (first === undefined) {
        first = now;
        this.seen.set(id, first);
        const d = this.opts.joinDelaySeconds;
        this.delays.set(id, typeof d === 'function' ? d(inst) : (d ?? 0));
      }
      if (now - first < (this.delays.get(id) ?? 0) * 1000) continue;
      const tags = Object.fromEntries((inst.Tags ?? []).map((t) => [t.Key ?? '', t.Value ?? '']));
      const className = tags['karpenter.k8s.aws/ec2nodeclass'];
      if (className && !classes.has(className))
        classes.set(className, (await client.tryGet('EC2NodeClass', className)) as EC2NodeClass | undefined);
      const node = this.nodeFor(inst, tags, className ? classes.get(className) : undefined);
      try {
        await client.create(node);
        out.joined.push(node.metadata.name as string);
        this.stats.joined++;
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
    }
    // instances gone before they joined are forgotten too
    for (const id of this.seen.keys())
      if (!live.has(id)) {
        this.seen.delete(id);
        this.delays.delete(id);
      }
    for (const [id, node] of byID) {
      if (!id || live.has(id)) continue;
      if (node.metadata.deletionTimestamp) continue;
      if (await client.tryDelete('Node', node.metadata.name as string)) {
        out.removed.push(node.metadata.name as string);
        this.stats.removed++;
      }
    }
    return out;
  }

  private async instances(): Promise<Instance[]> {
    const out: Instance[] = [];
    let token: string | undefined;
    do {
      const page = await this.opts.ec2.send(
        new DescribeInstancesCommand({
          // only live instances: an instance absent from the answer is gone (its Node is removed); EC2 keeps
          // terminated instances listed for about an hour, and the emulator for good
          Filters: [
            { Name: 'tag-key', Values: [`kubernetes.io/cluster/${this.opts.clusterName}`] },
            { Name: 'instance-state-name', Values: ['pending', 'running'] },
          ],
          ...(token ? { NextToken: token } : {}),
        }),
      );
      for (const r of page.Reservations ?? []) out.push(...(r.Instances ?? []));
      token = page.NextToken;
    } while (token);
    return out;
  }

  private nodeFor(inst: Instance, tags: Record<string, string>, nodeClass: EC2NodeClass | undefined): Node {
    const id = inst.InstanceId ?? '';
    const zone = inst.Placement?.AvailabilityZone ?? '';
    const type = inst.InstanceType ?? '';
    const name = inst.PrivateDnsName || id;
    const shape = this.opts.shape(type, nodeClass);
    const arch = inst.Architecture === 'arm64' ? 'arm64' : 'amd64';
    const labels: Record<string, string> = {
      ...(shape?.labels ?? {}),
      'kubernetes.io/hostname': name,
      'node.kubernetes.io/instance-type': type,
      'topology.kubernetes.io/zone': zone,
      'topology.kubernetes.io/region': this.opts.region,
      'kubernetes.io/os': shape?.labels['kubernetes.io/os'] ?? 'linux',
      'kubernetes.io/arch': shape?.labels['kubernetes.io/arch'] ?? arch,
      'karpenter.sh/capacity-type': inst.InstanceLifecycle === 'spot' ? 'spot' : 'on-demand',
    };
    if (tags['karpenter.sh/nodepool']) labels['karpenter.sh/nodepool'] = tags['karpenter.sh/nodepool'];
    const now = new Date(this.opts.clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    return {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels },
      spec: {
        providerID: `${PROVIDER_PREFIX}${zone}/${id}`,
        taints: [{ key: 'karpenter.sh/unregistered', effect: 'NoExecute' }],
      },
      status: {
        ...(shape ? { capacity: shape.capacity, allocatable: shape.allocatable } : {}),
        conditions: [
          {
            type: 'Ready',
            status: 'False',
            reason: 'KubeletNotReady',
            message: 'kubelet joined; waiting for the kubelet stand-in to report Ready',
            lastTransitionTime: now,
            lastHeartbeatTime: now,
          },
        ],
        addresses: [
          ...(inst.PrivateIpAddress ? [{ type: 'InternalIP', address: inst.PrivateIpAddress }] : []),
          { type: 'Hostname', address: name },
        ],
        nodeInfo: { architecture: labels['kubernetes.io/arch'], operatingSystem: labels['kubernetes.io/os'] },
      },
    } as Node;
  }
}

/** The instance ID of an `aws:///<zone>/<id>` provider ID. */
function instanceIDOf(providerID: string | undefined): string | undefined {
  return /^aws:\/\/\/[^/]*\/(i-[0-9a-zA-Z]+)$/.exec(providerID ?? '')?.[1];
}

function cancellable(clock: Clock, fn: () => void, ms: number): { cancel(): void } {
  const ac = new AbortController();
  void clock.sleep(ms, ac.signal).then(
    () => {
      if (!ac.signal.aborted) fn();
    },
    () => {},
  );
  return { cancel: () => ac.abort() };
}
