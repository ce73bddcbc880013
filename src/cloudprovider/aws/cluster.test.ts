import type { EKSClient } from '@aws-sdk/client-eks';
import { describe, expect, it } from 'vitest';
import { discoverCluster } from './cluster.ts';
import { awsSettings } from './settings.ts';

/** A fake EKS client answering DescribeCluster and recording each call's input. */
function fakeEks(): { eks: Pick<EKSClient, 'send'>; calls: unknown[] } {
  const calls: unknown[] = [];
  const send = async (cmd: { input: unknown }) => {
    calls.push(cmd.input);
    return {
      cluster: {
        endpoint: 'https://EKS.example',
        certificateAuthority: { data: 'RUtTQ0E=' },
        kubernetesNetworkConfig: { serviceIpv4Cidr: '172.20.0.0/16' },
      },
    };
  };
  return { eks: { send } as unknown as Pick<EKSClient, 'send'>, calls };
}

describe('discoverCluster (aws:pkg/operator/operator.go ResolveClusterEndpoint, GetCABundle)', () => {
  it('EKS_CONTROL_PLANE=false never calls DescribeCluster: the endpoint setting and the kubeconfig CA', async () => {
    const { eks, calls } = fakeEks();
    const settings = awsSettings({
      clusterName: 'capa-1',
      clusterEndpoint: 'https://capa.example:6443',
      eksControlPlane: false,
    });
    expect(await discoverCluster({ settings, eks, kubeconfigCABundle: 'S1VCRUNB' })).toEqual({
      endpoint: 'https://capa.example:6443',
      caBundle: 'S1VCRUNB',
    });
    expect(calls).toEqual([]);
  });

  it('unset or true: DescribeCluster fills only what the settings and the kubeconfig leave empty', async () => {
    const { eks, calls } = fakeEks();
    const unset = awsSettings({ clusterName: 'eks-1' });
    expect(await discoverCluster({ settings: unset, eks })).toEqual({
      endpoint: 'https://EKS.example',
      caBundle: 'RUtTQ0E=',
      cidr: '172.20.0.0/16',
    });
    const withCA = awsSettings({
      clusterName: 'eks-1',
      eksControlPlane: true,
      clusterCABundle: 'U0VUVElORw==',
    });
    expect(await discoverCluster({ settings: withCA, eks, kubeconfigCABundle: 'S1VCRUNB' })).toEqual({
      endpoint: 'https://EKS.example',
      caBundle: 'U0VUVElORw==',
      cidr: '172.20.0.0/16',
    });
    expect(calls).toEqual([{ name: 'eks-1' }, { name: 'eks-1' }]);
  });
});
