import type { EKSClient } from '@aws-sdk/client-eks';
import { describe, expect, it } from 'vitest';
import { KubeClient } from '../../kube/client.ts';
import { FakeClock } from '../../kube/clock.ts';
import { silentLogger } from '../../kube/logger.ts';
import { createAwsClients } from './clients.ts';
import { type ClusterInfo, discoverCluster, isServerFault, resolveClusterCIDR } from './cluster.ts';
import { awsModule, kubeDNSServiceIP } from './module.ts';
import { AwsCloudProvider } from './provider.ts';
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

  it('an IPv6 cluster: the IPv6 service CIDR (upstream ResolveClusterCIDR)', async () => {
    const eks = {
      send: async () => ({
        cluster: { endpoint: 'https://e', kubernetesNetworkConfig: { serviceIpv6Cidr: 'fd00:a1b2::/108' } },
      }),
    } as unknown as Pick<EKSClient, 'send'>;
    expect((await discoverCluster({ settings: awsSettings({ clusterName: 'v6' }), eks })).cidr).toBe(
      'fd00:a1b2::/108',
    );
  });
});

describe('resolveClusterCIDR (upstream launchtemplate.ResolveClusterCIDR, run by the AL2023 class validation)', () => {
  const eksAnswering = (answer: () => unknown) => {
    const calls: unknown[] = [];
    const send = async (cmd: { input: unknown }) => {
      calls.push(cmd.input);
      return answer();
    };
    return { eks: { send } as unknown as Pick<EKSClient, 'send'>, calls };
  };

  it('the IPv4 service CIDR, else the IPv6 one; neither is an error; EKS_CONTROL_PLANE=false never asks', async () => {
    const settings = awsSettings({ clusterName: 'eks-1' });
    const v4 = eksAnswering(() => ({
      cluster: {
        kubernetesNetworkConfig: { serviceIpv4Cidr: '172.20.0.0/16', serviceIpv6Cidr: 'fd00::/108' },
      },
    }));
    expect(await resolveClusterCIDR({ settings, eks: v4.eks })).toBe('172.20.0.0/16');
    expect(v4.calls).toEqual([{ name: 'eks-1' }]);
    const v6 = eksAnswering(() => ({
      cluster: { kubernetesNetworkConfig: { serviceIpv6Cidr: 'fd00::/108' } },
    }));
    expect(await resolveClusterCIDR({ settings, eks: v6.eks })).toBe('fd00::/108');
    const none = eksAnswering(() => ({ cluster: { kubernetesNetworkConfig: {} } }));
    await expect(resolveClusterCIDR({ settings, eks: none.eks })).rejects.toThrow(
      'no CIDR found in DescribeCluster response',
    );
    const off = eksAnswering(() => ({}));
    await expect(
      resolveClusterCIDR({
        settings: awsSettings({ clusterName: 'capa-1', eksControlPlane: false }),
        eks: off.eks,
      }),
    ).rejects.toThrow(
      'EKS_CONTROL_PLANE=false: capenter never calls EKS DescribeCluster, so the service CIDR AL2023 nodes need (nodeadm spec.cluster.cidr) is unknown; use another AMI family (AL2, Bottlerocket) for this cluster',
    );
    expect(off.calls).toEqual([]);
    expect(isServerFault(Object.assign(new Error('x'), { $fault: 'server' }))).toBe(true);
    expect(isServerFault(Object.assign(new Error('x'), { $fault: 'client' }))).toBe(false);
  });

  it('the provider asks once, keeps the CIDR for every later launch, and asks again after a failure', async () => {
    let answer: unknown = { cluster: { kubernetesNetworkConfig: {} } };
    const { eks, calls } = eksAnswering(() => answer);
    const provider = new AwsCloudProvider({
      clients: { ...createAwsClients({ region: 'us-west-2' }), eks: eks as EKSClient },
      settings: awsSettings({ clusterName: 'eks-1', region: 'us-west-2' }),
      clock: new FakeClock(),
      nodeClass: () => undefined,
    });
    await expect(provider.resolveClusterCIDR()).rejects.toThrow('no CIDR found in DescribeCluster response');
    answer = { cluster: { kubernetesNetworkConfig: { serviceIpv4Cidr: '10.100.0.0/16' } } };
    expect(await provider.resolveClusterCIDR()).toBe('10.100.0.0/16');
    expect(await provider.resolveClusterCIDR()).toBe('10.100.0.0/16');
    expect(calls).toHaveLength(2);
    const configured = new AwsCloudProvider({
      clients: { ...createAwsClients({ region: 'us-west-2' }), eks: eks as EKSClient },
      settings: awsSettings({ clusterName: 'eks-1', region: 'us-west-2' }),
      clock: new FakeClock(),
      nodeClass: () => undefined,
      clusterCIDR: '10.96.0.0/12',
    });
    expect(await configured.resolveClusterCIDR()).toBe('10.96.0.0/12');
    expect(calls).toHaveLength(2);
  });
});

describe('kubeDNSServiceIP (upstream operator.KubeDNSIP): the default clusterDNS of user data', () => {
  const withService = (get: () => Promise<unknown>) =>
    kubeDNSServiceIP({ client: { tryGet: get } as unknown as KubeClient, logger: silentLogger() });
  it('the ClusterIP of kube-system/kube-dns; none when headless, absent or unreadable', async () => {
    const asked: unknown[] = [];
    const client = {
      tryGet: async (...args: unknown[]) => {
        asked.push(args.slice(1));
        return { spec: { clusterIP: '10.100.0.10' } };
      },
    } as unknown as KubeClient;
    expect(await kubeDNSServiceIP({ client, logger: silentLogger() })).toBe('10.100.0.10');
    expect(asked).toEqual([['kube-dns', 'kube-system']]);
    expect(await withService(async () => ({ spec: { clusterIP: 'None' } }))).toBeUndefined();
    expect(await withService(async () => undefined)).toBeUndefined();
    expect(
      await withService(async () => {
        throw new Error('forbidden');
      }),
    ).toBeUndefined();
  });
});

describe("the controller's kubeconfig CA reaches user data (issue 26: CLUSTER_CA_BUNDLE unset on a CAPA cluster)", () => {
  const pem = '-----BEGIN CERTIFICATE-----\nMIIBkubeconfigCA\n-----END CERTIFICATE-----\n';
  const b64 = Buffer.from(pem).toString('base64');
  const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: capa
  cluster:
    server: https://capa.example:6443
    certificate-authority-data: ${b64}
users:
- name: u
  user:
    token: t
contexts:
- name: c
  context: {cluster: capa, user: u}
current-context: c
`;

  it('KubeClient.caBundleBase64 is the kubeconfig certificate-authority-data; awsModule.load hands it to the provider', async () => {
    const client = KubeClient.fromKubeconfig(kubeconfig);
    expect(await client.caBundleBase64()).toBe(b64);
    const settings = awsSettings({
      clusterName: 'capa-1',
      clusterEndpoint: 'https://capa.example:6443',
      eksControlPlane: false,
      region: 'us-east-1',
    });
    const setup = await awsModule.load(
      { ...settings, imds: { endpoint: 'http://127.0.0.1:9', disabled: true } },
      { client, logger: silentLogger(), region: 'us-east-1' },
    );
    try {
      const provider = setup.createProvider({
        client,
        clock: new FakeClock(),
        logger: silentLogger(),
        region: 'us-east-1',
        nodeClass: () => undefined,
      }) as unknown as { cluster(): Promise<ClusterInfo> };
      expect(await provider.cluster()).toEqual({ endpoint: 'https://capa.example:6443', caBundle: b64 });
    } finally {
      setup.close?.();
      client.close();
    }
  });
});
