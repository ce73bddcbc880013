/**
 * The Helm chart's RBAC is exactly what the controllers use. The operator runs against the simulated cluster with a
 * client that records every request (verb, group, resource, namespace), through a scenario that exercises every
 * controller path that talks to the API: provisioning, registration, NodeClass status (KWOKNodeClass and
 * EC2NodeClass), a NodeClaim deleted by a user (drain through the Eviction API blocked by a PDB, repeated Events,
 * pods deleted at the `terminationGracePeriod` deadline, Node and NodeClaim finalizers), emptiness consolidation,
 * the leader Lease. The recorded set plus {@link NOT_EXERCISED} (requests of code paths the scenario does not reach,
 * each with its source) must equal the rules in `charts/capenter/files/clusterrole-rules.yaml` and
 * `role-rules.yaml` (the Lease, in the release namespace). `test/cluster/helm.test.ts` then proves each rule with `kubectl auth can-i` on a real API server.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { NodeClaim } from '../../src/apis/karpenter.ts';
import {
  allRunning,
  deploymentYaml,
  type E2E,
  eventually,
  kwokNodeClassYaml,
  nodeClaims,
  scale,
  startE2E,
} from '../e2e/harness.ts';
import { allows, chartRules, RecordingClient, requestKeys, ruleKeys } from './api-requests.ts';

const LEASE_NAMESPACE = 'capenter-system';

/**
 * Requests of code paths this scenario does not reach, with where they are made. A key that the scenario does
 * record must be removed from here (the test checks).
 */
const NOT_EXERCISED: Record<string, string> = {
  'get core persistentvolumeclaims':
    'src/controllers/node/termination/controller.ts: waiting for the VolumeAttachments of drained pods with PVCs',
  'watch karpenter.sh nodeoverlays':
    'src/controllers/nodeoverlay/controller.ts: the NodeOverlay informer (NodeOverlay feature gate only)',
  'patch karpenter.sh nodeoverlays/status':
    'src/controllers/nodeoverlay/controller.ts: ValidationSucceeded/Ready conditions (NodeOverlay feature gate only)',
  'patch core events':
    'src/kube/events.ts: the same Event again within the aggregation window increments its count',
};

let env: E2E | undefined;
afterAll(async () => {
  await env?.stop();
});

describe('RBAC of the Helm chart', () => {
  it('grants exactly the requests the controllers make', async () => {
    env = await startE2E({ operator: false });
    const { client } = env;
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: LEASE_NAMESPACE } });
    const recording = RecordingClient.fromKubeconfigText(env.sim.kubeconfig);
    const op = await env.startOperator(
      { leaderElect: true, leaderElectionNamespace: LEASE_NAMESPACE, gcPeriodSeconds: 1 },
      // nominations live 2 s (upstream 20 s): the emptied node is a consolidation candidate soon after
      {
        client: recording,
        tuning: { disruption: { pollSeconds: 1, validationSeconds: 1 }, nominationTTLSeconds: 2 },
      },
    );
    // every wait below is bounded at minutes: a bound for a hung test, never a timing assertion (a loaded
    // machine makes each step slow, not wrong; issue 24)
    await eventually(() => op.isLeader(), 'operator leads', 180_000);
    await env.apply(
      `${kwokNodeClassYaml()}---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  weight: 10
  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 0s}
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      terminationGracePeriod: 5s
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: aws}
spec:
  role: KarpenterNodeRole-cluster-1
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: cluster-1}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: cluster-1}}]
  amiSelectorTerms: [{alias: al2023@latest}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: aws}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: aws}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec:
  maxUnavailable: 0
  selector: {matchLabels: {app: web}}
---
${deploymentYaml('web', 3, '500m', '512Mi').replace('      containers:', '      terminationGracePeriodSeconds: 0\n      containers:')}`,
    );
    // the registration step removes the Node's unregistered taint (the pods then run) before its reconcile writes
    // the NodeClaim's status.nodeName, as upstream: wait for both, or the NodeClaim's pods count 0 below (under load)
    await eventually(
      async () =>
        (await allRunning(client, 3)) &&
        (await nodeClaims(client)).every((nc) => nc.status?.nodeName) &&
        (await nodeClaims(client)).length > 0,
      'pods running on registered NodeClaims',
      180_000,
    );
    // a user deletes the NodeClaim with the most pods: the termination controller evicts one through the Eviction
    // API; the PDB (maxUnavailable 0) refuses (429) until the terminationGracePeriod deadline deletes them
    const pods = (await client.list('Pod', { namespace: 'default' })).items;
    const onNode = (nc: NodeClaim) => pods.filter((p) => p.spec?.nodeName === nc.status?.nodeName).length;
    const [first] = (await nodeClaims(client)).sort((a, b) => onNode(b) - onNode(a));
    expect(onNode(first!), 'pods on the NodeClaim deleted').toBeGreaterThanOrEqual(2);
    await client.delete('NodeClaim', (first as NodeClaim).metadata.name ?? '');
    await eventually(
      async () =>
        !(await client.tryGet('NodeClaim', first!.metadata.name ?? '')) && (await allRunning(client, 3)),
      'NodeClaim replaced and pods running again',
      180_000,
    );
    // scale to zero: emptiness consolidation removes the node
    await scale(client, 'web', 0);
    await eventually(
      async () =>
        (await client.list('NodeClaim')).items.length === 0 && (await client.list('Node')).items.length === 0,
      'empty node removed',
      180_000,
    );
    await op.stop(); // releases the Lease
    const used = recording.requests;
    const rules = chartRules();
    const denied = used.filter((r) =>
      r.namespace === LEASE_NAMESPACE && r.resource.startsWith('leases')
        ? !allows(rules.namespaced, r)
        : !allows(rules.cluster, r),
    );
    expect(requestKeys(denied), 'requests the chart does not allow').toEqual([]);
    // least privilege: every granted verb is used
    const leaseKeys = requestKeys(
      used.filter((r) => r.namespace === LEASE_NAMESPACE && r.resource === 'leases'),
    );
    const otherKeys = requestKeys(
      used.filter((r) => !(r.namespace === LEASE_NAMESPACE && r.resource === 'leases')),
    );
    expect(ruleKeys(rules.namespaced)).toEqual(leaseKeys);
    expect(otherKeys.filter((k) => k in NOT_EXERCISED)).toEqual([]);
    expect(ruleKeys(rules.cluster)).toEqual([...otherKeys, ...Object.keys(NOT_EXERCISED)].sort());
  }, 600_000);
});
