import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { InstanceTypeInfo } from '@aws-sdk/client-ec2';
import { describe, expect, it, vi } from 'vitest';
import { motoBinary } from '../../../test/aws/moto.ts';
import { getInstanceTypeSpec, listInstanceTypeSpecs } from './catalog/index.ts';
import { specFromEC2 } from './instancetypes.ts';
import { parsePriceListEntry } from './pricing.ts';

// moto answers slowly on a loaded machine (its serialiser; DescribeInstanceTypes is 5.5 MB): under `stress --cpu 4`
// beside other tests a first test took over 60 s. A test may be slow, never flaky (issue 24).
vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

/** moto's DescribeInstanceTypes data (the same source the embedded catalog was generated from). */
function motoInstanceTypes(): Record<string, InstanceTypeInfo> {
  const venv = dirname(dirname(motoBinary()));
  const lib = join(venv, 'lib');
  const py = readdirSync(lib).find((d) => d.startsWith('python'))!;
  const file = join(lib, py, 'site-packages', 'moto', 'ec2', 'resources', 'instance_types.json.gz');
  return JSON.parse(gunzipSync(readFileSync(file)).toString('utf8')) as Record<string, InstanceTypeInfo>;
}

describe('DescribeInstanceTypes → instance type spec', () => {
  it('maps every type exactly as the embedded catalog has it (same rules, one allocatable implementation)', () => {
    const data = motoInstanceTypes();
    const specs = listInstanceTypeSpecs();
    expect(specs.length).toBeGreaterThan(1300);
    const mismatches: string[] = [];
    for (const spec of specs) {
      const info = data[spec.name];
      if (!info) {
        mismatches.push(`${spec.name}: not in moto's data`);
        continue;
      }
      // per-card ENI limits come from DescribeInstanceTypes only (the embedded catalog's source lacks them)
      const { networkCardMaxENIs: _cards, ...mapped } = specFromEC2(info, spec);
      if (JSON.stringify(Object.entries(mapped).sort()) !== JSON.stringify(Object.entries(spec).sort())) {
        mismatches.push(`${spec.name}: ${JSON.stringify(mapped)} vs ${JSON.stringify(spec)}`);
      }
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
  });

  it('network cards: MaximumNetworkCards and per-card MaximumNetworkInterfaces (p4d.24xlarge, p5.48xlarge)', () => {
    const data = motoInstanceTypes();
    const p4d = specFromEC2(data['p4d.24xlarge']!, getInstanceTypeSpec('p4d.24xlarge'));
    expect([p4d.maxNetworkCards, p4d.networkCardMaxENIs, p4d.efaMaxInterfaces]).toEqual([
      4,
      [15, 15, 15, 15],
      4,
    ]);
    const p5 = specFromEC2(data['p5.48xlarge']!, getInstanceTypeSpec('p5.48xlarge'));
    expect([p5.maxNetworkCards, p5.networkCardMaxENIs?.length, p5.efaMaxInterfaces]).toEqual([32, 32, 32]);
  });

  it('m5.large and g4dn.xlarge field by field', () => {
    const data = motoInstanceTypes();
    const m5 = specFromEC2(data['m5.large']!, getInstanceTypeSpec('m5.large'));
    expect(m5).toMatchObject({
      name: 'm5.large',
      family: 'm5',
      category: 'm',
      generation: '5',
      architecture: 'amd64',
      vcpu: 2,
      memoryMiB: 8192,
      defaultCardMaxENIs: 3,
      ipv4PerENI: 10,
      ebsBandwidthMbps: 4750,
      hypervisor: 'nitro',
    });
    const g4 = specFromEC2(data['g4dn.xlarge']!);
    expect(g4).toMatchObject({
      gpuCount: 1,
      gpuName: 'T4',
      gpuManufacturer: 'NVIDIA',
      gpuMemoryMiB: 16384,
      localNvmeGB: 125,
    });
    // Without the embedded spec the fields EC2 does not report are absent.
    expect(g4.trunkingCompatible).toBeUndefined();
    expect(g4.networkBandwidthMbps).toBeUndefined();
  });
});

describe('Pricing API documents', () => {
  it('reads the instance type and the USD on-demand price', () => {
    const doc = JSON.stringify({
      product: { attributes: { instanceType: 'm5.large' } },
      terms: {
        OnDemand: {
          'X.JRTCKXETXF': {
            priceDimensions: { 'X.JRTCKXETXF.6YS6EN2CT7': { pricePerUnit: { USD: '0.0960000000' } } },
          },
        },
      },
    });
    expect(parsePriceListEntry(doc)).toEqual(['m5.large', 0.096]);
    expect(parsePriceListEntry('{"product":{}}')).toBeUndefined();
    expect(parsePriceListEntry('not json')).toBeUndefined();
    const zero = doc.replace('0.0960000000', '0.0000000000');
    expect(parsePriceListEntry(zero)).toBeUndefined();
  });
});
