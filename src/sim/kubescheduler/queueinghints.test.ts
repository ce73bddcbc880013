import { describe, expect, it } from 'vitest';
import type { Node, Pod, Taint } from '../../apis/core.ts';
import { Reasons, untoleratedTaintReason } from './filters.ts';
import { nodeChangeMayHelp, pluginOfReason, rejectorPlugins } from './queueinghints.ts';

function pod(cpu: string, extra: Partial<Pod['spec']> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'default', labels: { app: 'x' } },
    spec: {
      containers: [{ name: 'app', image: 'pause', resources: { requests: { cpu, memory: '1Gi' } } }],
      ...extra,
    },
  };
}

function node(
  cpu: string,
  opts: { ready?: boolean; taints?: Taint[]; labels?: Record<string, string> } = {},
): Node {
  const alloc = { cpu, memory: '16Gi', pods: '110' };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'n1', labels: { 'kubernetes.io/hostname': 'n1', ...opts.labels } },
    spec: opts.taints ? { taints: opts.taints } : {},
    status: {
      allocatable: alloc,
      conditions: [{ type: 'Ready', status: opts.ready === false ? 'False' : 'True' }],
    },
  };
}

const unregistered: Taint = { key: 'karpenter.sh/unregistered', effect: 'NoExecute' };

describe('kube-scheduler queueing hints for node events', () => {
  it('maps the filters’ reasons to their plugins; an unknown reason or none means always queue', () => {
    expect(pluginOfReason('Insufficient cpu')).toBe('NodeResourcesFit');
    expect(pluginOfReason(Reasons.tooManyPods)).toBe('NodeResourcesFit');
    expect(pluginOfReason(untoleratedTaintReason(unregistered))).toBe('TaintToleration');
    expect(pluginOfReason(Reasons.spreadMissingLabel)).toBe('PodTopologySpread');
    expect(pluginOfReason(Reasons.existingAntiAffinity)).toBe('InterPodAffinity');
    expect(
      [
        ...(rejectorPlugins(
          new Map([
            ['Insufficient memory', 2],
            [untoleratedTaintReason(unregistered), 1],
          ]),
        ) ?? []),
      ].sort(),
    ).toEqual(['NodeResourcesFit', 'TaintToleration']);
    expect(rejectorPlugins(new Map())).toBeUndefined();
    expect(rejectorPlugins(new Map([['some volume problem', 1]]))).toBeUndefined();
  });

  it('TaintToleration: a new tainted or not-ready node is skipped; the taint going away or the node becoming Ready queues', () => {
    const taintOnly = rejectorPlugins(new Map([[untoleratedTaintReason(unregistered), 1]]));
    const p = pod('1');
    expect(nodeChangeMayHelp(p, taintOnly, undefined, node('8', { taints: [unregistered] }))).toBe(false);
    expect(nodeChangeMayHelp(p, taintOnly, undefined, node('8', { ready: false }))).toBe(false);
    expect(nodeChangeMayHelp(p, taintOnly, undefined, node('8'))).toBe(true);
    // registered (taint removed) but not Ready yet: still the virtual not-ready taint
    expect(
      nodeChangeMayHelp(
        p,
        taintOnly,
        node('8', { taints: [unregistered], ready: false }),
        node('8', { ready: false }),
      ),
    ).toBe(false);
    expect(nodeChangeMayHelp(p, taintOnly, node('8', { ready: false }), node('8'))).toBe(true);
    // a toleration for the taint makes the new node worth a try
    const tolerant = pod('1', { tolerations: [{ key: 'karpenter.sh/unregistered', operator: 'Exists' }] });
    expect(nodeChangeMayHelp(tolerant, taintOnly, undefined, node('8', { taints: [unregistered] }))).toBe(
      true,
    );
  });

  it('NodeResourcesFit: a new node queues only when the pod fits its allocatable; an update only when allocatable grew', () => {
    const fit = rejectorPlugins(new Map([['Insufficient cpu', 3]]));
    expect(nodeChangeMayHelp(pod('4'), fit, undefined, node('2', { taints: [unregistered] }))).toBe(false);
    // NodeResourcesFit ignores taints: a big enough new node queues even while it is tainted
    expect(nodeChangeMayHelp(pod('4'), fit, undefined, node('8', { taints: [unregistered] }))).toBe(true);
    expect(nodeChangeMayHelp(pod('4'), fit, node('8', { ready: false }), node('8'))).toBe(false);
    expect(nodeChangeMayHelp(pod('4'), fit, node('4'), node('8'))).toBe(true);
    // several rejectors: one Queue is enough
    const both = rejectorPlugins(
      new Map([
        ['Insufficient cpu', 1],
        [untoleratedTaintReason(unregistered), 1],
      ]),
    );
    expect(nodeChangeMayHelp(pod('4'), both, node('8', { ready: false }), node('8'))).toBe(true);
    expect(nodeChangeMayHelp(pod('4'), undefined, node('8'), node('8'))).toBe(true);
  });

  it('PodTopologySpread: a node without the topology key is skipped, a zone label appearing queues', () => {
    const spread = rejectorPlugins(new Map([[Reasons.spread, 2]]));
    const p = pod('1', {
      topologySpreadConstraints: [
        {
          maxSkew: 1,
          topologyKey: 'topology.kubernetes.io/zone',
          whenUnsatisfiable: 'DoNotSchedule',
          labelSelector: { matchLabels: { app: 'x' } },
        },
      ],
    });
    const zoned = node('8', { labels: { 'topology.kubernetes.io/zone': 'us-east-1a' } });
    expect(nodeChangeMayHelp(p, spread, undefined, node('8'))).toBe(false);
    expect(nodeChangeMayHelp(p, spread, undefined, zoned)).toBe(true);
    expect(nodeChangeMayHelp(p, spread, node('8'), zoned)).toBe(true);
    expect(nodeChangeMayHelp(p, spread, zoned, zoned)).toBe(false);
  });
});
