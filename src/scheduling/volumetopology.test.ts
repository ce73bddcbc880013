import { describe, expect, it } from 'vitest';
import type { PersistentVolumeClaim, Pod } from '../apis/core.ts';
import { computeDisruption } from '../disruption/index.ts';
import { pod as bpod, input as disruptionInput, node as dnode } from '../disruption/testing.ts';
import { solve } from './scheduler.ts';
import { makeNode, makeNodePool, makePod, smallCatalog } from './testing.ts';
import type { SchedulingInput } from './types.ts';
import {
  hasClaimVolumes,
  type PersistentVolume,
  type StorageClass,
  type VolumeObjects,
} from './volumetopology.ts';

const onDemand = { key: 'karpenter.sh/capacity-type', operator: 'In' as const, values: ['on-demand'] };
const zone = 'topology.kubernetes.io/zone';

const claim = (name: string, spec: PersistentVolumeClaim['spec']): PersistentVolumeClaim => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name, namespace: 'default' },
  spec,
});
const pv = (name: string, key: string, values: string[], extra: object = {}): PersistentVolume => ({
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: { name },
  spec: {
    nodeAffinity: {
      required: { nodeSelectorTerms: [{ matchExpressions: [{ key, operator: 'In', values }] }] },
    },
    ...extra,
  },
});
const sc = (name: string, zones?: string[], isDefault = false): StorageClass => ({
  apiVersion: 'storage.k8s.io/v1',
  kind: 'StorageClass',
  metadata: {
    name,
    ...(isDefault ? { annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } } : {}),
  },
  provisioner: 'ebs.csi.aws.com',
  volumeBindingMode: 'WaitForFirstConsumer',
  ...(zones ? { allowedTopologies: [{ matchLabelExpressions: [{ key: zone, values: zones }] }] } : {}),
});
const withClaim = (p: Pod, claimName: string): Pod => ({
  ...p,
  spec: { ...p.spec, volumes: [{ name: 'data', persistentVolumeClaim: { claimName } }] },
});

function input(pods: Pod[], volumes: VolumeObjects, extra: Partial<SchedulingInput> = {}): SchedulingInput {
  const np = makeNodePool('general', { requirements: [onDemand] });
  return {
    pods,
    existingNodes: [],
    nodePools: [np],
    instanceTypes: { general: smallCatalog() },
    daemonSets: [],
    volumes,
    ...extra,
  };
}
const zoneOf = (r: ReturnType<typeof solve>) =>
  r.newNodeClaims.map((n) => n.requirements.find((x) => x.key === zone)?.values);

describe('volume topology', () => {
  it('a bound PV pins the pod: not onto room in another zone, a new NodeClaim in the PV zone', () => {
    const p = withClaim(makePod('db-0', { cpu: '1' }), 'data-db-0');
    const vols = {
      persistentVolumeClaims: [claim('data-db-0', { volumeName: 'pv-1' })],
      persistentVolumes: [pv('pv-1', zone, ['test-zone-b'])],
    };
    const existing = [{ node: makeNode('n-a', { labels: { [zone]: 'test-zone-a' } }), pods: [] }];
    const r = solve(input([p], vols, { existingNodes: existing }));
    expect(r.placements.map((x) => x.target.kind)).toEqual(['new']);
    expect(zoneOf(r)).toEqual([['test-zone-b']]);
    // the caller's own Pod object comes back (not the copy with the injected affinity)
    expect(r.newNodeClaims[0]!.pods[0]).toBe(p);
    // room in the PV's zone is used
    const inB = [{ node: makeNode('n-b', { labels: { [zone]: 'test-zone-b' } }), pods: [] }];
    const r2 = solve(input([p], vols, { existingNodes: inB }));
    expect(r2.placements.map((x) => x.target)).toEqual([{ kind: 'existing', node: 'n-b' }]);
  });

  it('a PV node affinity on any key (a custom label) is honoured', () => {
    const p = withClaim(makePod('a', { cpu: '1' }), 'c');
    const vols = {
      persistentVolumeClaims: [claim('c', { volumeName: 'pv' })],
      persistentVolumes: [pv('pv', 'storage.example/rack', ['r1'])],
    };
    const existing = [
      { node: makeNode('r0', { labels: { 'storage.example/rack': 'r0' } }), pods: [] },
      { node: makeNode('r1', { labels: { 'storage.example/rack': 'r1' } }), pods: [] },
    ];
    const r = solve(input([p], vols, { existingNodes: existing }));
    expect(r.placements.map((x) => x.target)).toEqual([{ kind: 'existing', node: 'r1' }]);
  });

  it('an unbound WaitForFirstConsumer claim follows allowedTopologies; no storageClassName takes the default class', () => {
    const p = withClaim(makePod('a', { cpu: '1' }), 'c');
    const r = solve(
      input([p], {
        persistentVolumeClaims: [claim('c', { storageClassName: 'zonal' })],
        storageClasses: [sc('zonal', ['test-zone-c'])],
      }),
    );
    expect(zoneOf(r)).toEqual([['test-zone-c']]);
    const d = solve(
      input([p], {
        persistentVolumeClaims: [claim('c', {})],
        storageClasses: [sc('std', ['test-zone-a'], true)],
      }),
    );
    expect(zoneOf(d)).toEqual([['test-zone-a']]);
  });

  it('an ephemeral volume uses its template claim (storage class topology) until the claim exists', () => {
    const p: Pod = {
      ...makePod('e', { cpu: '1' }),
      spec: {
        ...makePod('e', { cpu: '1' }).spec,
        volumes: [
          { name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: { storageClassName: 'zonal' } } } },
        ],
      },
    };
    const r = solve(input([p], { storageClasses: [sc('zonal', ['test-zone-b'])] }));
    expect(zoneOf(r)).toEqual([['test-zone-b']]);
    // once created as e-scratch and bound, its PV decides
    const bound = solve(
      input([p], {
        storageClasses: [sc('zonal', ['test-zone-b'])],
        persistentVolumeClaims: [claim('e-scratch', { volumeName: 'pv-e' })],
        persistentVolumes: [pv('pv-e', zone, ['test-zone-c'])],
      }),
    );
    expect(zoneOf(bound)).toEqual([['test-zone-c']]);
  });

  it('a missing claim, PersistentVolume or StorageClass is a per-pod reason, the other pods are scheduled', () => {
    const ok = makePod('ok', { cpu: '1' });
    const r = solve(
      input(
        [
          withClaim(makePod('no-claim', { cpu: '1' }), 'missing'),
          withClaim(makePod('no-pv', { cpu: '1' }), 'c1'),
          withClaim(makePod('no-sc', { cpu: '1' }), 'c2'),
          ok,
        ],
        {
          persistentVolumeClaims: [
            claim('c1', { volumeName: 'gone' }),
            claim('c2', { storageClassName: 'nope' }),
          ],
        },
      ),
    );
    expect(r.unschedulable.map((u) => [u.pod.metadata.name, u.code, u.message])).toEqual([
      ['no-claim', 'VolumeUnresolved', 'persistentvolumeclaim "default/missing" (volume "data") not found'],
      [
        'no-pv',
        'VolumeUnresolved',
        'persistentvolume "gone" bound to claim "default/c1" (volume "data") not found',
      ],
      ['no-sc', 'VolumeUnresolved', 'storageclass "nope" of claim "default/c2" (volume "data") not found'],
    ]);
    expect(r.placements.map((p) => p.pod)).toEqual([ok]);
  });

  it('attach limits: a node whose CSINode allows no more EBS volumes takes no pod with a claim; others still fit', () => {
    const withPv = (name: string) => withClaim(makePod(name, { cpu: '500m' }), `c-${name}`);
    const ebs = { ...sc('gp3'), provisioner: 'ebs.csi.aws.com' };
    const vols = (count: number) => ({
      persistentVolumeClaims: [
        claim('c-a', { storageClassName: 'gp3' }),
        claim('c-held', { volumeName: 'pv-held' }),
      ],
      persistentVolumes: [
        { ...pv('pv-held', zone, ['test-zone-a']), spec: { csi: { driver: 'ebs.csi.aws.com' } } },
      ],
      storageClasses: [ebs],
      csiNodes: [
        {
          apiVersion: 'storage.k8s.io/v1',
          kind: 'CSINode',
          metadata: { name: 'n-1' },
          spec: { drivers: [{ name: 'ebs.csi.aws.com', allocatable: { count } }] },
        },
      ],
    });
    const held = { ...withPv('held'), spec: { ...withPv('held').spec, nodeName: 'n-1' } };
    const existing = () => [{ node: makeNode('n-1', { labels: { [zone]: 'test-zone-a' } }), pods: [held] }];
    // limit 1, already used by the bound pod's volume: the new pod needs a NodeClaim
    const full = solve(input([withPv('a')], vols(1), { existingNodes: existing() }));
    expect(full.placements.map((x) => x.target.kind)).toEqual(['new']);
    expect(full.newNodeClaims[0]!.pods[0]!.metadata.name).toBe('a');
    // limit 2: one attachment left, the pod goes onto n-1
    const room = solve(input([withPv('a')], vols(2), { existingNodes: existing() }));
    expect(room.placements.map((x) => x.target)).toEqual([{ kind: 'existing', node: 'n-1' }]);
    // a pod without volumes is not affected by the limit
    const plain = solve(
      input([makePod('plain', { cpu: '500m' }), withPv('a')], vols(1), { existingNodes: existing() }),
    );
    expect(plain.placements.find((x) => x.pod.metadata.name === 'plain')?.target).toEqual({
      kind: 'existing',
      node: 'n-1',
    });
    // the projected ServiceAccount token volume the API server's admission adds is no claim and no attachment
    const token = makePod('token', { cpu: '500m' });
    token.spec.volumes = [
      {
        name: 'kube-api-access-x7k2q',
        projected: {
          defaultMode: 420,
          sources: [
            { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
            { configMap: { items: [{ key: 'ca.crt', path: 'ca.crt' }], name: 'kube-root-ca.crt' } },
          ],
        },
      },
    ];
    expect(hasClaimVolumes(token)).toBe(false);
    const withToken = solve(input([token], vols(1), { existingNodes: existing() }));
    expect(withToken.placements.map((x) => x.target)).toEqual([{ kind: 'existing', node: 'n-1' }]);
  });

  it('consolidation keeps a pod with a zonal volume out of a node in another zone', () => {
    const db = withClaim(bpod('db', { cpu: '500m' }), 'data');
    const nodes = [
      dnode('small-a', [bpod('web', { cpu: '500m' })], { type: 'm5.xlarge', zone: 'test-zone-a' }),
      dnode('big-b', [db], { type: 'm5.2xlarge', zone: 'test-zone-b' }),
    ];
    const vols = {
      persistentVolumeClaims: [claim('data', { volumeName: 'pv-b' })],
      persistentVolumes: [pv('pv-b', zone, ['test-zone-b'])],
    };
    const r = computeDisruption(disruptionInput(nodes, { volumes: vols }));
    const cmd = r.commands.find((c) => c.candidates.some((x) => x.node.metadata.name === 'big-b'));
    // without the volume, db would just move to small-a (a delete); with it, a replacement in test-zone-b
    expect(cmd?.decision).toBe('replace');
    expect(cmd!.replacements[0]!.requirements.find((x) => x.key === zone)?.values).toEqual(['test-zone-b']);
    const free = computeDisruption(disruptionInput(nodes));
    // without the volume the cheapest answer is different: small-a's pod moves onto big-b
    expect(free.commands.map((c) => [c.decision, c.candidates.map((x) => x.node.metadata.name)])).toEqual([
      ['delete', ['small-a']],
    ]);
  });
});
