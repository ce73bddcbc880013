/**
 * Host port usage and conflicts, as kube-scheduler's NodePorts plugin and upstream Karpenter
 * `pkg/scheduling/hostportusage.go`.
 */
import type { Pod } from '../apis/core.ts';

/** One host port a pod binds: IP (`0.0.0.0` when unset), protocol (default TCP), port. */
export interface HostPort {
  ip: string;
  protocol: string;
  port: number;
}

/**
 * The host ports a pod binds (containers and init containers). With `hostNetwork`, a container port
 * without `hostPort` binds the same port on the host (API defaulting).
 */
export function podHostPorts(pod: Pod): HostPort[] {
  const out: HostPort[] = [];
  for (const c of [...(pod.spec.initContainers ?? []), ...(pod.spec.containers ?? [])]) {
    for (const p of c.ports ?? []) {
      const port = p.hostPort ?? (pod.spec.hostNetwork ? p.containerPort : undefined);
      if (!port) continue;
      out.push({ ip: p.hostIP || '0.0.0.0', protocol: p.protocol ?? 'TCP', port });
    }
  }
  return out;
}

function conflicts(a: HostPort, b: HostPort): boolean {
  if (a.port !== b.port || a.protocol !== b.protocol) return false;
  return a.ip === b.ip || a.ip === '0.0.0.0' || b.ip === '0.0.0.0';
}

/** The host ports in use on one node (or NodeClaim). */
export class HostPortUsage {
  private readonly used: HostPort[] = [];

  /** Returns a message naming the conflicting port, or `undefined` when `ports` can be added. */
  conflict(ports: readonly HostPort[]): string | undefined {
    for (const p of ports) {
      for (const u of this.used) {
        if (conflicts(p, u)) return `host port ${p.protocol}/${p.port} (ip ${p.ip}) is already in use`;
      }
    }
    return undefined;
  }

  add(ports: readonly HostPort[]): void {
    this.used.push(...ports);
  }

  get size(): number {
    return this.used.length;
  }

  clone(): HostPortUsage {
    const c = new HostPortUsage();
    c.used.push(...this.used);
    return c;
  }
}
