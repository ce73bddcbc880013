import { describe, expect, it } from 'vitest';
import { requestLatencyLabels } from './client.ts';

describe('requestLatencyLabels (client_go_request_duration_seconds, operatorpkg parsePath)', () => {
  it('core and group resources, namespaced or not, named or not, with subresources', () => {
    const l = (method: string, path: string) => {
      const r = requestLatencyLabels(method, path);
      return r && [r.verb, r.group, r.version, r.kind, r.subresource];
    };
    expect(l('GET', '/api/v1/namespaces/default/pods')).toEqual(['LIST', '', 'v1', 'pods', '']);
    expect(l('GET', '/api/v1/namespaces/default/pods/web-0')).toEqual(['GET', '', 'v1', 'pods', '']);
    expect(l('POST', '/api/v1/namespaces/default/pods/web-0/eviction')).toEqual([
      'CREATE',
      '',
      'v1',
      'pods',
      'eviction',
    ]);
    expect(l('PATCH', '/api/v1/nodes/ip-10-0-0-1')).toEqual(['PATCH', '', 'v1', 'nodes', '']);
    expect(l('GET', '/api/v1/nodes')).toEqual(['LIST', '', 'v1', 'nodes', '']);
    expect(l('GET', '/api/v1/namespaces/kube-system')).toEqual(['GET', '', 'v1', 'namespaces', '']);
    expect(l('PUT', '/apis/karpenter.sh/v1/nodeclaims/default-abcde/status')).toEqual([
      'UPDATE',
      'karpenter.sh',
      'v1',
      'nodeclaims',
      'status',
    ]);
    expect(l('POST', '/apis/karpenter.sh/v1/nodeclaims')).toEqual([
      'CREATE',
      'karpenter.sh',
      'v1',
      'nodeclaims',
      '',
    ]);
    expect(
      l('PUT', '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/karpenter-leader-election'),
    ).toEqual(['UPDATE', 'coordination.k8s.io', 'v1', 'leases', '']);
    expect(l('DELETE', '/apis/karpenter.sh/v1/nodepools/default')).toEqual([
      'DELETE',
      'karpenter.sh',
      'v1',
      'nodepools',
      '',
    ]);
    // discovery and non-resource paths are not observed (operatorpkg returns nil)
    expect(l('GET', '/api')).toBeUndefined();
    expect(l('GET', '/apis/karpenter.sh/v1')).toBeUndefined();
    expect(l('GET', '/version')).toBeUndefined();
  });
});
