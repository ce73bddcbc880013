/**
 * Helpers for the simulated-cluster tests: a cluster on a FakeClock and a poll loop that moves simulated
 * time forward while waiting for real I/O (HTTP to the embedded server) to settle.
 */
import type { Node, Pod, Taint } from '../../src/apis/core.ts';
import {
  type SimulatedCluster,
  type SimulatedClusterOptions,
  startSimulatedCluster,
} from '../../src/embedded/cluster.ts';
import { FakeClock } from '../../src/kube/clock.ts';

/** A simulated cluster driven by a FakeClock. */
export interface FakeTimeCluster extends SimulatedCluster {
  clock: FakeClock;
  /** Errors reported by the stand-ins (conflicts are normal; anything else is a bug). */
  errors: Array<{ err: unknown; where: string }>;
  /**
   * Polls `fn` until truthy: each round advances simulated time by `stepMs` (default 100) and lets real
   * I/O run for a few ms. Throws after `timeoutMs` of wall time (default 10 000) naming `what`.
   */
  until<T>(
    fn: () => T | Promise<T>,
    what: string,
    opts?: { stepMs?: number; timeoutMs?: number },
  ): Promise<NonNullable<T>>;
  /** Advances simulated time by `ms` in steps, letting I/O settle in between. */
  advance(ms: number, stepMs?: number): Promise<void>;
}

/** Starts a simulated cluster on a FakeClock (defaults: Ready after 1 s, pods start after 0.5 s). */
export async function startFakeTimeCluster(opts: SimulatedClusterOptions = {}): Promise<FakeTimeCluster> {
  const clock = new FakeClock();
  const errors: Array<{ err: unknown; where: string }> = [];
  const c = await startSimulatedCluster({
    kubeletReadyDelaySeconds: 1,
    podStartDelaySeconds: 0.5,
    ...opts,
    clock,
    onError: (err, where) => errors.push({ err, where }),
  });
  const realSleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const until = async <T>(
    fn: () => T | Promise<T>,
    what: string,
    o: { stepMs?: number; timeoutMs?: number } = {},
  ): Promise<NonNullable<T>> => {
    const end = Date.now() + (o.timeoutMs ?? 10_000);
    let last: unknown;
    for (;;) {
      try {
        const v = await fn();
        if (v) return v as NonNullable<T>;
      } catch (err) {
        last = err;
      }
      if (Date.now() > end)
        throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
      await clock.tick(o.stepMs ?? 100);
      await realSleep(5);
    }
  };
  const advance = async (ms: number, stepMs = 100): Promise<void> => {
    for (let t = 0; t < ms; t += stepMs) {
      await clock.tick(Math.min(stepMs, ms - t));
      await realSleep(5);
    }
  };
  return Object.assign(c, { clock, errors, until, advance });
}

/** A Node with allocatable resources, labels and taints (no conditions: the kubelet stand-in makes it Ready). */
export function testNode(
  name: string,
  o: {
    cpu?: string;
    memory?: string;
    pods?: string;
    labels?: Record<string, string>;
    taints?: Taint[];
    zone?: string;
    providerID?: string;
  } = {},
): Node {
  const alloc = { cpu: o.cpu ?? '4', memory: o.memory ?? '16Gi', pods: o.pods ?? '110' };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'topology.kubernetes.io/zone': o.zone ?? 'zone-a',
        ...(o.labels ?? {}),
      },
    },
    spec: {
      ...(o.taints ? { taints: o.taints } : {}),
      ...(o.providerID ? { providerID: o.providerID } : {}),
    },
    status: { capacity: alloc, allocatable: alloc },
  };
}

/** A Pod with one container requesting `cpu`/`memory`. */
export function testPod(
  namespace: string,
  name: string,
  o: { cpu?: string; memory?: string; labels?: Record<string, string>; spec?: Partial<Pod['spec']> } = {},
): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: o.labels ?? { app: name } },
    spec: {
      containers: [
        {
          name: 'app',
          image: 'registry.k8s.io/pause:3.10',
          resources: { requests: { cpu: o.cpu ?? '100m', memory: o.memory ?? '128Mi' } },
        },
      ],
      ...(o.spec ?? {}),
    },
  };
}

/** The `PodScheduled` condition of a pod. */
export function scheduledCondition(
  p: Pod | undefined,
): { status: string; reason?: string; message?: string } | undefined {
  return p?.status?.conditions?.find((c) => c.type === 'PodScheduled');
}
