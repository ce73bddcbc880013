import { describe, expect, it } from 'vitest';
import { HostPortUsage, podHostPorts } from './hostports.ts';
import { makePod } from './testing.ts';

describe('host ports', () => {
  it('conflicts on same port/protocol when IPs overlap; hostNetwork binds container ports', () => {
    const a = makePod('a');
    a.spec.containers[0]!.ports = [{ containerPort: 80, hostPort: 8080 }];
    const usage = new HostPortUsage();
    usage.add(podHostPorts(a));
    expect(usage.conflict([{ ip: '10.0.0.1', protocol: 'TCP', port: 8080 }])).toBe(
      'host port TCP/8080 (ip 10.0.0.1) is already in use',
    );
    expect(usage.conflict([{ ip: '0.0.0.0', protocol: 'UDP', port: 8080 }])).toBeUndefined();
    const hn = makePod('hn', { spec: { hostNetwork: true } });
    hn.spec.containers[0]!.ports = [{ containerPort: 9100 }];
    expect(podHostPorts(hn)).toEqual([{ ip: '0.0.0.0', protocol: 'TCP', port: 9100 }]);
    expect(podHostPorts(makePod('none'))).toEqual([]);
  });
});
