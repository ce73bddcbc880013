/**
 * The AMI version a Bottlerocket launch renders its user data for, as upstream aws v1.14.1
 * `pkg/providers/amifamily/bottlerocket.go` `resolveAMIVersion` (alias, then a `name` term, then the resolved AMI an
 * `id` term names, then any resolved Bottlerocket AMI): with `instanceStorePolicy: RAID0` it picks the default
 * ephemeral-storage bind (v1.46.0 and later) or the legacy one with `--dirs`.
 */
import { describe, expect, it } from 'vitest';
import type { EC2NodeClass } from '../../apis/karpenter.ts';
import { resolveAMIVersion } from './provider.ts';
import { renderUserData } from './userdata.ts';

const V146 = 'bottlerocket-aws-k8s-1.33-x86_64-v1.46.0-431fe75a';
const V145 = 'bottlerocket-aws-k8s-1.33-x86_64-v1.45.0-0b6ca5f6';

function cls(
  terms: Array<Record<string, unknown>>,
  amis: Array<{ id: string; name?: string }> = [],
): EC2NodeClass {
  return {
    apiVersion: 'karpenter.k8s.aws/v1',
    kind: 'EC2NodeClass',
    metadata: { name: 'br' },
    spec: { amiSelectorTerms: terms, role: 'node-role', instanceStorePolicy: 'RAID0' },
    status: { amis: amis.map((a) => ({ ...a, requirements: [] })) },
  } as unknown as EC2NodeClass;
}

/** The bind command of the RAID0 bootstrap command the version picks. */
function bind(version: string | undefined): string {
  const ud = renderUserData('Bottlerocket', {
    clusterName: 'c',
    clusterEndpoint: 'https://c',
    caBundle: '',
    maxPods: 110,
    labels: {},
    taints: [],
    instanceStorePolicy: 'RAID0',
    ...(version ? { amiVersion: version } : {}),
  });
  return /\["apiclient", "ephemeral-storage", "bind"[^\]]*\]/.exec(ud.replaceAll("'", '"'))?.[0] ?? ud;
}

describe('resolveAMIVersion (upstream bottlerocket.go resolveAMIVersion)', () => {
  it('alias first: bottlerocket@latest and bottlerocket@v1.45.0', () => {
    expect(resolveAMIVersion(cls([{ alias: 'bottlerocket@latest' }], [{ id: 'ami-1', name: V145 }]))).toBe(
      'latest',
    );
    expect(resolveAMIVersion(cls([{ alias: 'bottlerocket@v1.45.0' }]))).toBe('v1.45.0');
  });

  it('a name term: its version, even as a wildcard pattern', () => {
    expect(resolveAMIVersion(cls([{ name: 'bottlerocket-aws-k8s-1.33-x86_64-v1.46.0-*' }]))).toBe('v1.46.0');
  });

  it('an id term: the version in the name of the resolved AMI with that id', () => {
    const c = cls(
      [{ id: 'ami-0b' }],
      [
        { id: 'ami-0a', name: V145 },
        { id: 'ami-0b', name: V146 },
      ],
    );
    expect(resolveAMIVersion(c)).toBe('v1.46.0');
  });

  it('a tags term: the first resolved Bottlerocket AMI name with a version; none for other names', () => {
    expect(resolveAMIVersion(cls([{ tags: { team: 'x' } }], [{ id: 'ami-1', name: V146 }]))).toBe('v1.46.0');
    expect(
      resolveAMIVersion(cls([{ tags: { team: 'x' } }], [{ id: 'ami-1', name: 'my-v1.2.3-image' }])),
    ).toBe(undefined);
  });

  it('RAID0 user data: a v1.46.0 AMI pinned by name or id binds the default paths, v1.45.0 the legacy --dirs', () => {
    const legacy =
      '["apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"]';
    expect(bind(resolveAMIVersion(cls([{ name: V146 }])))).toBe('["apiclient", "ephemeral-storage", "bind"]');
    expect(bind(resolveAMIVersion(cls([{ id: 'ami-1' }], [{ id: 'ami-1', name: V146 }])))).toBe(
      '["apiclient", "ephemeral-storage", "bind"]',
    );
    expect(bind(resolveAMIVersion(cls([{ name: V145 }])))).toBe(legacy);
  });
});
