/**
 * Test helpers for cluster state (not used by the operator).
 */
import type { StateNode } from './cluster.ts';

/**
 * A {@link StateNode} from the fields given: `key` is the name, `nodePool` the `karpenter.sh/nodepool` label of the
 * NodeClaim (else the Node), managed when it has a NodeClaim, in flight when it has a NodeClaim and no Node,
 * initialized when it has a Node, no pods; any field given wins.
 */
export function testStateNode(sn: Partial<StateNode> & { name: string }): StateNode {
  const pool =
    sn.nodeClaim?.metadata.labels?.['karpenter.sh/nodepool'] ??
    sn.node?.metadata.labels?.['karpenter.sh/nodepool'];
  return {
    ...(pool ? { nodePool: pool } : {}),
    key: sn.name,
    managed: !!sn.nodeClaim,
    inFlight: !!sn.nodeClaim && !sn.node,
    initialized: !!sn.node,
    markedForDeletion: false,
    nominated: false,
    pods: [],
    daemonSetPods: [],
    podRequests: {},
    daemonSetRequests: {},
    ...sn,
  };
}
